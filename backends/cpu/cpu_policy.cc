#include "backends/cpu/cpu_policy.h"

#include <gflags/gflags.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl_debug.h"

// Converts a failed oneDNN call into an Internal error with file:line and
// the expression; oneDNN's C API reports errors by status, never throws.
#define TANDEM_DNNL_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                             \
    const dnnl_status_t tandem_dnnl_status_ = (expr);                                              \
    if (tandem_dnnl_status_ != dnnl_success) {                                                     \
      return absl::InternalError(absl::StrCat(__FILE__, ":", __LINE__, ": ", #expr,                \
                                              " failed: ", dnnl_status2str(tandem_dnnl_status_))); \
    }                                                                                              \
  } while (0)

DEFINE_int32(cpu_threads, 0,
             "Most threads a cpu kernel uses (0: automatic, OpenMP's default: "
             "OMP_NUM_THREADS or every CPU this process may run on); each kernel "
             "uses fewer when its work is small. Never more than the CPUs this "
             "process may run on or its cgroup CPU quota.");
DEFINE_validator(cpu_threads, [](const char*, int32_t value) { return value >= 0; });

namespace tandem {
namespace {

// The whole contents of `path`, or "" if it cannot be read.
std::string ReadFileOrEmpty(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The CPUs this process may run on: its affinity mask, the online CPUs and
// the cgroup quota (v2, else v1), whichever is least; at least 1.
int HostThreads() {
  cpu_set_t mask;
  int cpus = sched_getaffinity(0, sizeof(mask), &mask) == 0
                 ? CPU_COUNT(&mask)
                 : static_cast<int>(std::thread::hardware_concurrency());
  if (const unsigned online = std::thread::hardware_concurrency(); online > 0) {
    cpus = std::min(cpus, static_cast<int>(online));
  }
  int quota = CpuQuotaThreads(ReadFileOrEmpty("/sys/fs/cgroup/cpu.max"));
  if (quota == 0) {
    quota =
        CpuQuotaThreads(absl::StrCat(ReadFileOrEmpty("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), " ",
                                     ReadFileOrEmpty("/sys/fs/cgroup/cpu/cpu.cfs_period_us")));
  }
  if (quota > 0) cpus = std::min(cpus, quota);
  return std::max(1, cpus);
}

}  // namespace

int ThreadsForWork(int64_t work, int64_t min_work_per_thread, int max_threads) {
  const int64_t wanted = work / std::max<int64_t>(1, min_work_per_thread);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max(1, max_threads)));
}

int CpuQuotaThreads(absl::string_view cpu_max) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(cpu_max, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &quota) ||
      !absl::SimpleAtoi(fields[1], &period) || quota <= 0 || period <= 0) {
    return 0;
  }
  return static_cast<int>(std::min<int64_t>((quota + period - 1) / period, 1 << 20));
}

int CpuMaxThreads() {
  static const int host = HostThreads();
  static const int openmp_default = omp_get_max_threads();
  return std::min(host, FLAGS_cpu_threads > 0 ? FLAGS_cpu_threads : openmp_default);
}

namespace {

// Every signal but the synchronous ones (a fault must never be blocked).
sigset_t AsynchronousSignals() {
  sigset_t set;
  sigfillset(&set);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&set, s);
  return set;
}

// Blocks the asynchronous signals in the calling thread's OpenMP team of
// `threads` (the threads past the calling one), once per size reached.
void BlockSignalsInTeam(int threads, const sigset_t& signals) {
  thread_local int masked = 1;  // the calling thread itself is masked by the guard
  if (threads <= masked || omp_in_parallel()) return;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() != 0) pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  }
  masked = threads;
}

}  // namespace

ScopedDnnlThreads::ScopedDnnlThreads(int64_t work, int64_t min_work_per_thread)
    : previous_(omp_get_max_threads()) {
  static const sigset_t signals = AsynchronousSignals();
  pthread_sigmask(SIG_BLOCK, &signals, &previous_signals_);
  BlockSignalsInTeam(CpuMaxThreads(), signals);
  omp_set_num_threads(ThreadsForWork(work, min_work_per_thread, CpuMaxThreads()));
}

ScopedDnnlThreads::~ScopedDnnlThreads() {
  omp_set_num_threads(previous_);
  pthread_sigmask(SIG_SETMASK, &previous_signals_, nullptr);
}

void CpuPolicy::ParallelFor(int64_t n, int64_t grain,
                            absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
#ifdef _OPENMP
  const int64_t threads = omp_in_parallel() ? 1 : CpuMaxThreads();
#else
  // Built without OpenMP code generation (clang's sanitizer build,
  // -fopenmp=libgomp): the loop below runs on this thread, so one task, as
  // a nested call inside a parallel region would have.
  const int64_t threads = 1;
#endif
  // Every task gets at least `grain` items.
  const int64_t tasks = std::min(threads, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (tasks == 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel for num_threads(tasks) schedule(static, 1)
  for (int64_t t = 0; t < tasks; ++t) fn(n * t / tasks, n * (t + 1) / tasks);
}

absl::Status CpuPolicy::Gemm(const GemmArgs<float>& g) {
  const ScopedDnnlThreads threads(2 * g.m * g.n * g.k, kMinFlopsPerThread);
  TANDEM_DNNL_RETURN_IF_ERROR(dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n,
                                         g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc));
  return absl::OkStatus();
}

absl::Status CpuPolicy::Gemm(const GemmArgs<double>& g) {
  BlockedGemm<double, CpuPolicy>(g);
  return absl::OkStatus();
}

}  // namespace tandem
