// The placer's rules as named passes (placer.h lists them in order). Each
// rule looks at one op and what the placer knows so far, and either decides
// its place or leaves it to the next rule; PlaceOp runs them in order and
// KernelWithFallback picks the kernel, falling back to the CPU.
//
//   PlacementContext ctx(program, options);
//   for (int i = 0; i < n; ++i) {
//     ASSIGN_OR_RETURN(PlaceDecision d, PlaceOp(program.block().ops()[i], i, ctx));
//     ASSIGN_OR_RETURN(const KernelRegistration* k, KernelWithFallback(op, i, ctx, &d));
//     ctx.Record(op, i, d.place);
//   }
//
// Used by the placer; pure functions of their arguments, thread-compatible.
#ifndef TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PASSES_H_
#define TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PASSES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/placement/placer.h"

namespace tandem {

// What the rules read: the program, the options and the places of the ops
// placed so far (ops are placed in program order).
class PlacementContext {
 public:
  PlacementContext(const Program& program, const PlacerOptions& options)
      : program_(program), options_(options) {}

  const Program& program() const { return program_; }
  const PlacerOptions& options() const { return options_; }
  // The place of op `index` of the program; nullopt if not placed yet.
  std::optional<Place> OpPlace(int index) const;
  // The place of the last op placed so far that wrote `var`, and its index.
  std::optional<std::pair<Place, int>> Writer(const std::string& var) const;
  // The place of the first op placed so far that read `var`, and its index.
  std::optional<std::pair<Place, int>> FirstReader(const std::string& var) const;
  // Records that op `index` runs on `place`.
  void Record(const OpDesc& op, int index, const Place& place);

 private:
  const Program& program_;
  const PlacerOptions& options_;
  std::vector<std::optional<Place>> op_places_;
  absl::flat_hash_map<std::string, std::pair<Place, int>> writers_, first_readers_;
};

struct PlaceDecision {
  Place place;
  PlacementCause cause = PlacementCause::kDefault;
  std::string detail;
};

// A rule: the op's place, nullopt when the rule does not apply, or an error.
using PlacementRule = absl::StatusOr<std::optional<PlaceDecision>> (*)(const OpDesc& op, int index,
                                                                       const PlacementContext& ctx);

struct NamedPlacementRule {
  const char* name;  // PlacementCauseName of the cause it assigns
  PlacementRule rule;
};

// The rules, in the order they are tried.
const std::vector<NamedPlacementRule>& PlacementRules();

// Each rule alone (for tests; PlaceOp runs them in order).
// cast-at-source: a cast that ApplyAmp inserted (origin kAmpCast) and that
// narrows its input (float32 to bfloat16, say) runs where that input was
// produced, whatever its consumer's device_guard: a value crossing places
// then moves in 16 bits, and the backward of that cast (placed with it)
// brings the gradient back in 16 bits too. A persistable input nothing in
// the program wrote (a parameter) is cast where it lives (its place at
// Prepare): parameters kept on the host (ProgramBuilder::parameters_on) go
// to a device in 16 bits. A feed leaves the decision to the later rules.
absl::StatusOr<std::optional<PlaceDecision>> CastAtSourceRule(const OpDesc& op, int index,
                                                              const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> GuardRule(const OpDesc& op, int index,
                                                       const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> InheritRule(const OpDesc& op, int index,
                                                         const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> LossGradRule(const OpDesc& op, int index,
                                                          const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> GradSumRule(const OpDesc& op, int index,
                                                         const PlacementContext& ctx);
// grad-norm: a reduction of a gradient to a scalar (the squared norm that
// clipping by global norm sums; origin kGradNormOf) runs where the gradient
// was produced, so only the scalar crosses when the update runs on another
// place (optimizer offload: the norms of 16-bit gradients on the device, not
// a host pass over every gradient). A fed gradient leaves it to later rules.
absl::StatusOr<std::optional<PlaceDecision>> GradNormRule(const OpDesc& op, int index,
                                                          const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> ParamRule(const OpDesc& op, int index,
                                                       const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> StateRule(const OpDesc& op, int index,
                                                       const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> HostStateRule(const OpDesc& op, int index,
                                                           const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> AutoRule(const OpDesc& op, int index,
                                                      const PlacementContext& ctx);
absl::StatusOr<std::optional<PlaceDecision>> DefaultRule(const OpDesc& op, int index,
                                                         const PlacementContext& ctx);

// The first rule's decision for op `index`; the place's device must exist
// (InvalidArgument or NotFound naming the op and the place otherwise).
absl::StatusOr<PlaceDecision> PlaceOp(const OpDesc& op, int index, const PlacementContext& ctx);

// The fallback pass: the op's kernel on `decision->place`; when there is
// none for its dtypes, the CPU's (decision becomes cause kFallback, with a
// warning), or NotFound in strict mode, on the CPU, or with no CPU kernel.
absl::StatusOr<const KernelRegistration*> KernelWithFallback(const OpDesc& op, int index,
                                                             const PlacementContext& ctx,
                                                             PlaceDecision* decision);

// Where argument `arg` of an op placed on `op_place` lives: the host for a
// HostMemory argument of its kernel, the op's place otherwise.
Place ArgumentPlace(const KernelRegistration& kernel, const std::string& arg,
                    const Place& op_place);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PASSES_H_
