#include "python/program_handle.h"

#include <utility>

namespace tandem {
namespace python {

BuildCall::BuildCall(ProgramHandle* main, ProgramHandle* startup, const std::string& device,
                     const std::string& policy)
    : main_(main), startup_(startup) {
  if (main == startup) {
    throw StatusError(absl::InvalidArgumentError(
        "program_guard: the main and the startup program must be two programs"));
  }
  TransferPolicy p = TransferPolicy::kInherit;
  if (!policy.empty()) p = ValueOrThrow(ParseTransferPolicy(policy));
  std::swap(builder_.main_program(), main_->program);
  std::swap(builder_.startup_program(), startup_->program);
  if (!device.empty()) device_.emplace(builder_.device_guard(device));
  if (!policy.empty()) policy_.emplace(builder_.transfer_policy(p));
}

BuildCall::~BuildCall() {
  std::swap(builder_.main_program(), main_->program);
  std::swap(builder_.startup_program(), startup_->program);
  ++main_->version;
  ++startup_->version;
}

}  // namespace python
}  // namespace tandem
