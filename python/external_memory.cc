#include "python/external_memory.h"

#include <utility>

#include "glog/logging.h"

namespace tandem {
namespace python {
namespace {

// An allocator that hands out one existing block, once, and on its
// deallocation runs the owner's release and deletes itself: Buffer calls
// Deallocate last, so the allocator lives exactly as long as the buffer.
class OneBlockAllocator final : public Allocator {
 public:
  OneBlockAllocator(void* data, const Place& place, std::function<void()> release)
      : data_(data), place_(place), release_(std::move(release)) {}

  std::string Name() const override { return "external"; }
  Place place() const override { return place_; }
  absl::StatusOr<void*> Allocate(size_t) override {
    CHECK(!handed_out_) << "an external block is handed out once";
    handed_out_ = true;
    return data_;
  }
  void Deallocate(void* ptr, size_t) override {
    CHECK_EQ(ptr, data_);
    if (release_) release_();
    delete this;
  }
  AllocatorStats GetStats() const override { return {}; }
  void SetBytesLimit(int64_t) override {}
  void ResetPeak() override {}  // keeps no statistics

 private:
  void* data_;
  Place place_;
  std::function<void()> release_;
  bool handed_out_ = false;
};

}  // namespace

Tensor ExternalTensor(void* data, DataType dtype, const Shape& shape, const Place& place,
                      std::function<void()> release) {
  auto* allocator = new OneBlockAllocator(data, place, std::move(release));
  absl::StatusOr<std::shared_ptr<Buffer>> buffer =
      Buffer::Allocate(allocator, shape.num_elements() * SizeOf(dtype));
  CHECK(buffer.ok()) << buffer.status();  // OneBlockAllocator::Allocate cannot fail
  return Tensor(dtype, shape, *std::move(buffer));
}

}  // namespace python
}  // namespace tandem
