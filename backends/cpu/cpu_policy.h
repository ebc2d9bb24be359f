// The execution policy of the cpu backend (see backends/common/serial_policy.h
// for the concept): OpenMP threads for loops, oneDNN's sgemm for float32
// products and the shared BlockedGemm, threaded, for float64 (oneDNN 2.6 has
// no double-precision GEMM).
//
//   BroadcastAdd<float, CpuPolicy>(layout, x, y, out);
//   RETURN_IF_ERROR(CpuPolicy::Gemm(args));
//   ScopedDnnlThreads threads(flops, kMinFlopsPerThread);  // around a oneDNN primitive
//
// Loops shorter than their grain run on the calling thread, as does every
// call made from inside a parallel region (no nested parallelism). Teams are
// sized to the work: a loop gets at most one thread per grain, a oneDNN call
// (GEMM, convolution) at most one per kMinFlopsPerThread, so small kernels
// (a batch-64 layer) do not pay for waking and joining every core. The most
// threads any call uses is CpuMaxThreads(): --cpu_threads when above 0, else
// OpenMP's default (OMP_NUM_THREADS, or the CPUs this process may run on),
// never more than the online CPUs or the cgroup's CPU quota (binaries that
// parse flags, e.g. the examples, take --cpu_threads). Synchronous and
// thread-safe.
#ifndef TANDEM_BACKENDS_CPU_CPU_POLICY_H_
#define TANDEM_BACKENDS_CPU_CPU_POLICY_H_

#include <signal.h>

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "backends/common/gemm.h"

namespace tandem {

// Floating-point operations a oneDNN call gives each thread at least (20-40
// us of one core; for less, waking and joining a thread costs about as
// much as it saves).
inline constexpr int64_t kMinFlopsPerThread = int64_t{4} << 20;

// Threads worth using for `work` units when each should get at least
// `min_work_per_thread`: work / min_work_per_thread clamped to
// [1, max_threads] (1 for no work; max_threads below 1 counts as 1).
int ThreadsForWork(int64_t work, int64_t min_work_per_thread, int max_threads);

// The CPUs a cgroup CPU quota allows, rounded up, from the contents of
// cgroup v2's cpu.max ("<quota> <period>" or "max <period>"); 0 for no
// quota or text that is not a quota.
int CpuQuotaThreads(absl::string_view cpu_max);

// The most threads a cpu kernel uses (see the top of this file). The host
// limits are read once; --cpu_threads at every call.
int CpuMaxThreads();

// Sizes the OpenMP team of the oneDNN calls the calling thread makes while
// it lives (oneDNN reads the thread's OpenMP thread count) to
// ThreadsForWork(work, min_work_per_thread, CpuMaxThreads()), and restores
// the previous count when destroyed. Create it before a oneDNN primitive is
// built: primitives fix their team then.
//
// It also keeps asynchronous signals (SIGINT, SIGTERM, SIGALRM, SIGPROF, ...)
// away from oneDNN's code: blocked on the calling thread while it lives
// (a signal that comes meanwhile waits, pending, until the destructor, or
// goes to a thread that is not in oneDNN), and blocked for good in the
// calling thread's OpenMP team (its worker threads, which run oneDNN's
// kernels too, need no signals). oneDNN's generated f32 GEMM kernels
// before 3.12 point the stack pointer into the heap, so a signal handled
// inside one writes its frame over heap memory (oneDNN issue 4845; Debian
// ships 2.6): Ctrl-C in the Python front end, a profiler's timer signals.
// Synchronous signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT)
// stay unblocked.
class ScopedDnnlThreads {
 public:
  ScopedDnnlThreads(int64_t work, int64_t min_work_per_thread);
  ~ScopedDnnlThreads();
  ScopedDnnlThreads(const ScopedDnnlThreads&) = delete;
  ScopedDnnlThreads& operator=(const ScopedDnnlThreads&) = delete;

 private:
  int previous_;
  sigset_t previous_signals_;
};

struct CpuPolicy {
  static void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn);
  // Internal error naming the oneDNN call and status if it fails.
  static absl::Status Gemm(const GemmArgs<float>& args);
  static absl::Status Gemm(const GemmArgs<double>& args);
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_CPU_CPU_POLICY_H_
