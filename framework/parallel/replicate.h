// ReplicateForDataParallel: the data-parallel program transform. From one
// training program (forward, backward and the optimizer's updates, e.g. a
// model builder's after Optimizer::Minimize) and its startup program, it
// makes the programs of each of `nranks` ranks, which DataParallel
// (data_parallel.h) runs one per place:
//
//   ASSIGN_OR_RETURN(ReplicatedPrograms r,
//                    ReplicateForDataParallel(b.main_program(), b.startup_program(),
//                                             {.nranks = 2, .ring_id = group->id()}));
//   // r.main[rank], r.startup[rank]; r.shared: the variables rank 0 holds for all
//
// What changes:
//   * Dense gradients are all-reduced and averaged (c_allreduce_sum, in
//     place, scale 1/nranks) before their updates, in buckets of about
//     `bucket_bytes` (a bucket closes once it holds that much), in the order
//     the backward pass completes them: each bucket's op follows the op
//     that completes its last gradient, so it is issued while the rest of
//     the backward pass runs. A bucket holds gradients of parameters read
//     on one place (the op_device of their first reader).
//   * Shared parameters: a parameter every reader of which is pinned to the
//     host (device_guard("cpu"), e.g. an embedding table) exists once, in
//     rank 0's scope, with its optimizer state: its sparse gradient is
//     all-gathered (c_allgather of the ranks' rows and values in rank order,
//     scale 1/nranks) and a dense one all-reduced on the host, and only rank
//     0 keeps its update op (the same update the one-device program makes on
//     the same rows). The other ranks' startup programs do not initialise it.
//   * Startup: after the initialisers, every replicated (not shared)
//     parameter is broadcast from rank 0 (c_broadcast, in place).
//   * tables_per_process (one rank per process, mpirun): the host-pinned
//     parameters cannot be shared across processes, so every rank keeps
//     its own copy and its update op; the all-gathered sparse gradient is
//     the same on every rank, so every copy makes the same update. Their
//     startup initialises them on every rank, then broadcasts rank 0's
//     values on the host, so the copies start equal. `shared` is empty.
// Each rank's loss is the mean over its slice of the global batch, so the
// averaged gradients are those of the global batch's mean. Collectives are
// matched across ranks by their first output's name, the same on every rank.
//
// Pure function of its arguments; thread-compatible.
#ifndef TANDEM_FRAMEWORK_PARALLEL_REPLICATE_H_
#define TANDEM_FRAMEWORK_PARALLEL_REPLICATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/program/program.h"

namespace tandem {

struct ReplicateOptions {
  int nranks = 1;
  int64_t ring_id = -1;                      // the CollectiveGroup of the ranks
  int64_t bucket_bytes = int64_t{25} << 20;  // gradient bytes per all-reduce
  bool tables_per_process = false;           // see the header comment
};

struct ReplicatedPrograms {
  std::vector<Program> main, startup;  // per rank
  // Persistables that exist once, in rank 0's scope (shared parameters and
  // their optimizer state), sorted.
  std::vector<std::string> shared;
  // The dense gradients of each all-reduce, in the order they are issued.
  std::vector<std::vector<std::string>> buckets;
};

// InvalidArgument for nranks < 1 or bucket_bytes < 1; Unimplemented for a
// sparse gradient of a parameter that is not shared (a table read off the
// host: put it under device_guard("cpu")); FailedPrecondition for a program
// without update ops (nothing to train).
absl::StatusOr<ReplicatedPrograms> ReplicateForDataParallel(const Program& main,
                                                            const Program& startup,
                                                            const ReplicateOptions& options);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PARALLEL_REPLICATE_H_
