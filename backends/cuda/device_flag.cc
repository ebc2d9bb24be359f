#include "backends/cuda/device_flag.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/host_read.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace cuda {

using Word = unsigned long long;  // NOLINT(runtime/int)
constexpr Word kNone = ~Word{0};

absl::StatusOr<FirstBadPosition> FirstBadPosition::Create(KernelContext* ctx) {
  ASSIGN_OR_RETURN(Tensor word,
                   AllocateScratch(ctx, DataType::kInt64, Shape({1}), "a bad-input flag"));
  CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(word.raw_data(), 0xff, sizeof(Word), CudaStreamOf(ctx->stream())));  // kNone
  return FirstBadPosition(std::move(word));
}

absl::StatusOr<std::optional<int64_t>> FirstBadPosition::Read(KernelContext* ctx) const {
  Word position = kNone;
  RETURN_IF_ERROR(ReadToHost(ctx, &position, word_.raw_data(), sizeof(position)));
  if (position == kNone) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(position));
}

}  // namespace cuda
}  // namespace tandem
