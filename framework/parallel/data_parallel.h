// DataParallel: one training program replicated over several places of one
// process (gpu:0..N-1, or sim:0..N-1 in tests), one executor and one thread
// per replica (rank), the ranks' collectives meeting in a CollectiveGroup
// (host and sim kernels) or an NCCL communicator (gpu).
//
//   ProgramBuilder b;  ... build the model, optimizer.Minimize(&b, loss) ...
//   DataParallelOptions o;
//   o.places = {SimPlace(0), SimPlace(1)};
//   ASSIGN_OR_RETURN(std::unique_ptr<DataParallel> dp,
//                    DataParallel::Create(b.main_program(), b.startup_program(),
//                                         {"image", "label"}, {loss.name}, o));
//   RETURN_IF_ERROR(dp->Initialize());   // startup on every rank, parameters broadcast
//   for (...) {
//     // the global batch; rank r gets rows [r * B / N, (r + 1) * B / N)
//     ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> out, dp->Step(feeds));
//     // out[r]: rank r's fetches (its loss: the mean over its slice)
//   }
//   RETURN_IF_ERROR(dp->Save("/ckpt/step_1000"));   // once: the one-device format
//
// The programs are ReplicateForDataParallel's (replicate.h): gradients
// averaged by all-reduces in buckets issued during the backward pass,
// parameters under device_guard("cpu") shared (rank 0's scope holds them
// for every rank; their merged gradients applied once), parameters
// broadcast from rank 0 at start. Each rank's program is placed with its
// place as the default place.
//
// Failures: a rank whose step fails aborts the group, so the others return
// at their next collective instead of waiting; Step then returns the first
// failure, naming its rank, with every rank's status in step_statuses()
// (the others' name the failed rank and their own op). A rank that never
// arrives makes the others fail after options.deadline. No step waits past
// it. A failed step leaves the parameters as the step before left them
// when every rank failed before its updates (a bad input, a missing rank),
// and the group is ready for the next step.
//
// Checkpoints: Save writes rank 0's persistables, which are the one-device
// program's (same names, shared and replicated alike), so a checkpoint of
// any replica count (or of the one-device trainer) loads with Load on any
// other: rank 0 reads the file, the other ranks copy its replicated values
// to their places and share its shared ones.
//
// Across processes (options.processes, e.g. an MpiProcessGroup under
// mpirun): the job's ranks are its processes, this one holding rank
// processes->rank() on its one place (options.places). Every process calls
// Step with the same global batch and runs its rank's slice; the
// collectives go through the ProcessGroup; host-pinned parameters exist in
// every process, kept identical (ReplicateOptions::tables_per_process).
// Save writes on rank 0 only and returns rank 0's result on every process;
// Load reads the file on every process. A failed step there ends the job's
// group: every process returns the error naming the failed rank, and later
// steps fail (restart the job).
//
// Thread-safety: one thread drives a DataParallel (Initialize, Step, Save,
// Load); it runs the ranks on threads of its own.
#ifndef TANDEM_FRAMEWORK_PARALLEL_DATA_PARALLEL_H_
#define TANDEM_FRAMEWORK_PARALLEL_DATA_PARALLEL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "framework/parallel/collective_group.h"
#include "framework/parallel/process_group.h"
#include "framework/parallel/replicate.h"
#include "framework/place/place.h"
#include "framework/program/program.h"
#include "framework/runtime/executor.h"
#include "framework/tensor/scope.h"

namespace tandem {

struct DataParallelOptions {
  // Rank first_rank() + i runs on places[i]: every rank of the job in one
  // process, or this process's one rank when `processes` is set.
  std::vector<Place> places;
  std::shared_ptr<ProcessGroup> processes;  // null: every rank in this process
  int64_t bucket_bytes = int64_t{25} << 20;
  // How long a rank waits for the others in one collective.
  absl::Duration deadline = absl::Seconds(60);
  ExecutorOptions executor;  // of every rank's executor
};

class DataParallel {
 public:
  // InvalidArgument for no place; ReplicateForDataParallel's errors.
  static absl::StatusOr<std::unique_ptr<DataParallel>> Create(
      const Program& main, const Program& startup, const std::vector<std::string>& feeds,
      const std::vector<std::string>& fetches, DataParallelOptions options);
  ~DataParallel();

  // The ranks of the job; those of this process; the first of them.
  int size() const;
  int local_ranks() const { return static_cast<int>(options_.places.size()); }
  int first_rank() const;
  const ReplicatedPrograms& programs() const { return programs_; }
  CollectiveGroup* group() const { return group_.get(); }
  // Of rank first_rank() + i.
  Scope* scope(int i) { return scopes_[i].get(); }
  // The prepared plan of rank first_rank() + i (after Initialize).
  Plan* plan(int i) { return plans_[i].get(); }

  // Runs every rank's startup program (parameters broadcast from rank 0),
  // shares rank 0's shared persistables and prepares the training plans.
  absl::Status Initialize();
  // One training step on the global batch `feeds`: every fed tensor is
  // split along its first dim into size() equal slices (InvalidArgument
  // naming the feed when it does not split evenly). Returns the fetches of
  // this process's ranks (rank first_rank() + i at i); on failure see the
  // header comment.
  absl::StatusOr<std::vector<std::vector<Tensor>>> Step(const FeedMap& feeds);
  // The status of this process's ranks in the last step (or Initialize).
  const std::vector<absl::Status>& step_statuses() const { return statuses_; }

  // The one-device checkpoint of rank 0's persistables (checkpoint.h).
  absl::Status Save(const std::string& path) const;
  // Loads a checkpoint into every rank (see the header comment); call after
  // Initialize.
  absl::Status Load(const std::string& path);

 private:
  DataParallel(DataParallelOptions options, std::vector<std::string> feeds,
               std::vector<std::string> fetches);
  // Runs fn(i) for this process's rank first_rank() + i, on a thread each;
  // the first failure aborts the group. Returns the first failure (by
  // time), annotated with its rank.
  absl::Status OnEveryRank(const std::string& what, const std::function<absl::Status(int)>& fn);
  // Rank `rank`'s slice of every feed.
  absl::StatusOr<FeedMap> Slice(const FeedMap& feeds, int rank) const;
  // Binds rank 0's shared persistables into the other ranks' scopes.
  absl::Status ShareWithRanks();

  DataParallelOptions options_;
  std::vector<std::string> feeds_, fetches_;
  std::shared_ptr<CollectiveGroup> group_;
  ReplicatedPrograms programs_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::vector<std::unique_ptr<Plan>> plans_;
  std::vector<absl::Status> statuses_;
  int64_t steps_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PARALLEL_DATA_PARALLEL_H_
