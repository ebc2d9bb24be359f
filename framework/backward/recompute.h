// Activation recomputation as a rewrite of a training program: forward
// values that are cheap to compute again (a gelu's output, a layer_norm's,
// a cast of either) are no longer kept from the forward to the backward;
// a copy of the op that made them runs again just before the first
// backward op that reads them.
//
//   ... build the forward program and its loss, ApplyAmp if wanted ...
//   RETURN_IF_ERROR(optimizer.Minimize(&b, loss));
//   ASSIGN_OR_RETURN(RecomputeReport report, ApplyRecompute(RecomputeOptions{},
//                                                          &b.main_program()));
//   report.values   // {"h1.gelu (gelu #12)", ...}
//
// A forward value `v` read by a backward op is recomputed when the op that
// wrote it (its only writer) is on `RecomputeOptions::ops` and each of that
// op's inputs is available in the backward without keeping anything new: a
// persistable variable, a value nothing in the program writes (a feed), a
// value the backward reads anyway, or another recomputed value (so a cast of
// a layer_norm's output is recomputed from the layer_norm's input). The
// copy writes "v@RECOMPUTE" (its other outputs likewise) and the backward
// ops read that instead; the original `v` is then released after its last
// forward reader (the executor's memory policy), which is the point.
//
// Results are bit for bit those of the program without the rewrite: the
// kernels are deterministic and read the same values. An op that draws
// random numbers or keeps state across runs (dropout) must not be listed.
// The copy gets the original's op_device, role kBackward and origin
// kRecomputeOf (the placer puts it where the original runs). Apply it after
// AppendBackward / Optimizer::Minimize (FailedPrecondition before). Not
// thread-safe (it edits the program).
#ifndef TANDEM_FRAMEWORK_BACKWARD_RECOMPUTE_H_
#define TANDEM_FRAMEWORK_BACKWARD_RECOMPUTE_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/program/program.h"

namespace tandem {

// cast, gelu, relu, layer_norm: element-wise or per-row work, cheap beside
// the products whose inputs they are.
const std::set<std::string>& DefaultRecomputeOps();

struct RecomputeOptions {
  std::set<std::string> ops = DefaultRecomputeOps();
  // Also recompute casts of parameters (their 16-bit copies under AMP):
  // saves the copies' memory between forward and backward for a second
  // cast per step, which with the parameter on the host (optimizer offload)
  // is a second upload too. Off by default. Needs the forward casts:
  // ApplyRecompute refuses (FailedPrecondition) a program whose updates
  // write 16-bit working copies (Optimizer::set_working_copies(false)).
  bool parameter_casts = false;
};

struct RecomputeReport {
  // The forward values no longer kept for the backward, in program order:
  // "h1.gelu (gelu #12)".
  std::vector<std::string> values;
  int ops = 0;  // ops inserted into the backward
};

// "none" -> nullopt, "cheap" -> the default options, "cheap+weights" -> the
// same with parameter_casts; anything else is InvalidArgument listing the
// accepted names (the examples' --recompute flag).
absl::StatusOr<std::optional<RecomputeOptions>> ParseRecomputeFlag(absl::string_view value);

// Rewrites `program` as the header comment says.
absl::StatusOr<RecomputeReport> ApplyRecompute(const RecomputeOptions& options, Program* program);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_BACKWARD_RECOMPUTE_H_
