// Float32 scratch memory for host kernels, reused across the kernels a
// thread runs: a block given back is kept by the thread's pool and handed
// out again, so that a step's scratch costs no allocation and no page
// faults once the first step has run.
//
//   FloatScratch wide(x->NumElements());   // at least n floats, uninitialised
//   Cast<float, bfloat16, Policy>(x->data<bfloat16>(), wide.data(), n);
//   ...                                    // back to this thread's pool at scope exit
//
// The pool belongs to the thread that constructs the FloatScratch (the
// kernel's calling thread; the policy's worker threads may read and write
// the block while it is held). It keeps at most kMaxCachedFloatScratchBytes
// a thread, blocks that are freed when the thread ends; a block is reused
// only for requests of at least half its size, so a small request never
// holds a large block. Not thread-safe: a FloatScratch is destroyed on the
// thread that made it.
#ifndef TANDEM_BACKENDS_COMMON_FLOAT_SCRATCH_H_
#define TANDEM_BACKENDS_COMMON_FLOAT_SCRATCH_H_

#include <cstdint>
#include <memory>

namespace tandem {

inline constexpr int64_t kMaxCachedFloatScratchBytes = int64_t{256} << 20;

class FloatScratch {
 public:
  explicit FloatScratch(int64_t n);
  ~FloatScratch();
  FloatScratch(FloatScratch&& other) noexcept = default;
  FloatScratch& operator=(FloatScratch&&) = delete;
  FloatScratch(const FloatScratch&) = delete;
  FloatScratch& operator=(const FloatScratch&) = delete;

  float* data() const { return block_.get(); }
  int64_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<float[]> block_;
  int64_t capacity_ = 0;
};

// Floats this thread's pool holds now (blocks given back, not in use).
int64_t CachedFloatScratchOfThisThread();

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_FLOAT_SCRATCH_H_
