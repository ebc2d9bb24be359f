#include "framework/device/device.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"

namespace tandem {

const char* CopyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice:
      return "H2D";
    case CopyKind::kDeviceToHost:
      return "D2H";
    case CopyKind::kDeviceToDevice:
      return "D2D";
  }
  return "?";
}

absl::StatusOr<Tensor> CopyTensorTo(const Tensor& src, const Place& dst_place) {
  const Place src_place = src.place();
  if (!src_place.is_host() && !dst_place.is_host() && src_place != dst_place) {
    ASSIGN_OR_RETURN(Tensor host, CopyTensorTo(src, CPUPlace()));  // two devices: via the host
    return CopyTensorTo(host, dst_place);
  }
  DeviceRegistry& reg = DeviceRegistry::Global();
  Device* device = nullptr;
  if (!dst_place.is_host()) {
    ASSIGN_OR_RETURN(device, reg.GetDevice(dst_place));
  } else if (!src_place.is_host()) {
    ASSIGN_OR_RETURN(device, reg.GetDevice(src_place));
  }
  Allocator* dst_alloc = dst_place.is_host() ? CpuAllocator::Default() : device->allocator();
  ASSIGN_OR_RETURN(Tensor dst, Tensor::Allocate(dst_alloc, src.dtype(), src.shape()));
  const size_t bytes = src.NumBytes();
  if (bytes == 0) return dst;
  if (device == nullptr) {
    std::memcpy(dst.raw_data(), src.raw_data(), bytes);
    return dst;
  }
  const CopyKind kind = src_place.is_host()   ? CopyKind::kHostToDevice
                        : dst_place.is_host() ? CopyKind::kDeviceToHost
                                              : CopyKind::kDeviceToDevice;
  RETURN_IF_ERROR(device->Copy(kind, dst.raw_data(), src.raw_data(), bytes));
  return dst;
}

}  // namespace tandem
