#include "backends/common/dropout_stream.h"

#include "backends/common/counter_random.h"
#include "framework/base/status_macros.h"
#include "framework/op/attr.h"

namespace tandem {

absl::Status DropoutForward::Read(const OpDesc& op) {
  RETURN_IF_ERROR(attrs_.Read(op));
  ASSIGN_OR_RETURN(const int64_t seed, GetAttr<int64_t>(op.attrs, "seed", op.type));
  seed_ = static_cast<uint64_t>(seed);
  return absl::OkStatus();
}

uint64_t DropoutForward::NextKey() {
  const uint64_t key = CounterStreamSeed(seed_, step_);
  if (!attrs_.is_test) ++step_;
  return key;
}

}  // namespace tandem
