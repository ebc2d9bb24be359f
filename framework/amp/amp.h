// Automatic mixed precision as a rewrite of the forward program: the ops on
// an allow list (the products: mul, matmul, fc, conv2d, self_attention)
// compute in bfloat16 or float16, every other op stays in float32.
//
//   ProgramBuilder b;
//   ... build the forward program and its loss ...
//   ASSIGN_OR_RETURN(AmpReport report, ApplyAmp(AmpOptions{DataType::kBFloat16},
//                                               &b.main_program()));
//   RETURN_IF_ERROR(optimizer.Minimize(&b, loss));   // backward and updates after it
//
// For each allow-listed op whose floating inputs are float32, every such
// input `v` is replaced by its low-precision twin "v.cast_bfloat16" (a cast
// op inserted before the first op that reads it, then shared: one cast per
// variable and dtype), and every output `o` is written as
// "o.cast_bfloat16" and cast back to `o` in float32 right after (an output
// the op's schema keeps in float32 for 16-bit inputs, such as
// self_attention's Lse, stays as it is), so the
// ops that are not on the list read float32 as before, while a following
// allow-listed op reads the low-precision output directly (no round trip).
// The cast back is left out when only 16-bit ops read `o` (fetch
// "o.cast_bfloat16" then); an output nothing reads, which the caller may
// fetch, and a persistable one keep it.
// Casts run where their consumer (or producer) runs: they inherit its
// op_device. Parameters stay float32 ("master weights"): the backward of
// the cast turns their low-precision gradient into a float32 one, which
// the optimizer applies in float32; the low-precision copy of a weight is
// made once per step. Integer and boolean variables are never touched.
//
// Apply it before AppendBackward / Optimizer::Minimize (FailedPrecondition
// if the program already holds backward or update ops). float16's small
// gradients may underflow: train it with Optimizer::EnableDynamicLossScaling
// (framework/backward/optimizer.h); bfloat16 needs none.
// Not thread-safe (it edits the program).
#ifndef TANDEM_FRAMEWORK_AMP_AMP_H_
#define TANDEM_FRAMEWORK_AMP_AMP_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/program/program.h"
#include "framework/types/data_type.h"

namespace tandem {

// mul, matmul, fc, conv2d, self_attention.
const std::set<std::string>& DefaultAmpAllowList();
// concat, relu and gelu run in 16 bits when their output feeds an
// allow-listed op (directly or through another such op), so the casts move
// to their inputs: embeddings joined before the first fc are cast (where
// they are produced, see the placer's cast-at-source rule) and joined in 16
// bits, and the hidden layers of an MLP or a transformer's MLP stay in 16
// bits from one fc to the next. They give the values the float32 program
// with its casts gives: concat and relu round nothing (they move or select
// values); gelu's 16-bit kernels (and its gradient's) compute in float32
// from the widened inputs and round once, as the cast after the float32
// op rounds.
const std::set<std::string>& DefaultAmpPassThroughList();

struct AmpOptions {
  DataType dtype = DataType::kBFloat16;  // bfloat16 or float16
  std::set<std::string> allow = DefaultAmpAllowList();
  std::set<std::string> pass_through = DefaultAmpPassThroughList();
};

struct AmpReport {
  std::vector<std::string> low_precision_ops;  // "fc #3", in program order
  int casts = 0;                               // cast ops inserted
};

// "none" -> nullopt, "bf16" / "bfloat16" and "fp16" / "float16" -> the
// dtype; anything else is InvalidArgument listing the accepted names (the
// examples' --amp flag).
absl::StatusOr<std::optional<DataType>> ParseAmpFlag(absl::string_view value);

// Rewrites `program` as the header comment says. InvalidArgument for a
// dtype that is not bfloat16 or float16.
absl::StatusOr<AmpReport> ApplyAmp(const AmpOptions& options, Program* program);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_AMP_AMP_H_
