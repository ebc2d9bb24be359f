#include "backends/common/float_scratch.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tandem {
namespace {

struct Block {
  std::unique_ptr<float[]> data;
  int64_t capacity = 0;
};

// The blocks a thread has given back, free for its next kernels.
class ThreadScratchCache {
 public:
  static ThreadScratchCache& Get() {
    thread_local ThreadScratchCache cache;
    return cache;
  }

  // The smallest cached block that holds n floats and is at most twice n,
  // or a new block of exactly n.
  Block Take(int64_t n) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->capacity >= n && it->capacity <= 2 * n &&
          (best == free_.end() || it->capacity < best->capacity)) {
        best = it;
      }
    }
    if (best == free_.end()) {
      return Block{std::unique_ptr<float[]>(new float[static_cast<size_t>(n)]), n};
    }
    Block block = std::move(*best);
    free_.erase(best);
    cached_floats_ -= block.capacity;
    return block;
  }

  // Keeps `block` unless the pool would exceed its cap, then frees it.
  void Give(Block block) {
    if ((cached_floats_ + block.capacity) * static_cast<int64_t>(sizeof(float)) >
        kMaxCachedFloatScratchBytes) {
      return;
    }
    cached_floats_ += block.capacity;
    free_.push_back(std::move(block));
  }

  int64_t cached_floats() const { return cached_floats_; }

 private:
  std::vector<Block> free_;
  int64_t cached_floats_ = 0;
};

}  // namespace

FloatScratch::FloatScratch(int64_t n) {
  if (n <= 0) return;
  Block block = ThreadScratchCache::Get().Take(n);
  block_ = std::move(block.data);
  capacity_ = block.capacity;
}

FloatScratch::~FloatScratch() {
  if (block_ != nullptr) ThreadScratchCache::Get().Give(Block{std::move(block_), capacity_});
}

int64_t CachedFloatScratchOfThisThread() { return ThreadScratchCache::Get().cached_floats(); }

}  // namespace tandem
