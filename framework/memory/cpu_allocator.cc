#include "framework/memory/cpu_allocator.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {
constexpr size_t kAlignment = 64;
}  // namespace

CpuAllocator::CpuAllocator(int64_t bytes_limit)
    : stats_(CPUPlace(), bytes_limit) {}

CpuAllocator* CpuAllocator::Default() {
  static CpuAllocator* allocator = new CpuAllocator();
  return allocator;
}

absl::StatusOr<void*> CpuAllocator::Allocate(size_t bytes) {
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  const size_t rounded = ((bytes + kAlignment - 1) / kAlignment) * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) {
    stats_.Release(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory: the system refused ", HumanBytes(bytes),
                     " (", HumanBytes(stats_.bytes_in_use()), " in use by Tandem)"));
  }
  return p;
}

void CpuAllocator::Deallocate(void* ptr, size_t bytes) {
  std::free(ptr);
  stats_.Release(bytes);
}

}  // namespace tandem
