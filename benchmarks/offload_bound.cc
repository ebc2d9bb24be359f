// The physical bound of a training step with its optimizer offloaded to
// the CPU (issue 34): max(the all-GPU step, the CPU AdamW over every
// parameter at the host's measured memory bandwidth, the 16-bit weights up
// and gradients down at the measured pinned copy bandwidth), each term
// measured here and printed with how it was obtained.
//
//   bazel run //benchmarks:offload_bound -- --size=gpt2 --all_gpu_ms=26.3 --offload_ms=68.2
//   tools/offload_bound.sh --batch_size=8     # runs the GPT trainer both ways, then this
//
// Host bandwidth: the best of --repeats copies of a buffer of the AdamW
// term's size split over --threads threads (bytes read plus bytes written,
// as memcpy moves them), after a pass that touches every page. Copy
// bandwidth: the best of --repeats synchronous copies of the 16-bit
// parameters between host_allocator() (pinned on CUDA) and the device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/place/place.h"
#include "gflags/gflags.h"
#include "models/gpt/gpt_model.h"

DEFINE_string(size, "gpt2", "the GPT preset whose parameters count (tiny, small, gpt2)");
DEFINE_int64(params, 0, "parameters (0: the --size's)");
DEFINE_string(place, "", "the device (default gpu:0 when there is one, else sim:0)");
DEFINE_int32(threads, 0, "host threads of the bandwidth test (0: the host's hardware threads)");
DEFINE_int32(repeats, 5, "timed repetitions of each measurement (the best is kept)");
DEFINE_double(adam_bytes, 28,
              "host bytes a full AdamW step moves per parameter (read and written)");
DEFINE_double(all_gpu_ms, 0, "the all-GPU step time, measured by the trainer (0: not given)");
DEFINE_double(offload_ms, 0, "the offloaded step time, measured by the trainer (0: not given)");

namespace tandem {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Bytes per second of copying `bytes` over `threads` threads (read + written).
double HostCopyBandwidth(int64_t bytes, int threads) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double best = 1e30;
  for (int r = 0; r <= FLAGS_repeats; ++r) {  // the first pass touches the pages
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const int64_t share = (bytes + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      const int64_t lo = std::min(bytes, t * share), hi = std::min(bytes, lo + share);
      pool.emplace_back([&, lo, hi] { std::memcpy(to.data() + lo, from.data() + lo, hi - lo); });
    }
    for (std::thread& t : pool) t.join();
    if (r > 0) best = std::min(best, Seconds(start));
  }
  return 2.0 * static_cast<double>(bytes) / best;
}

struct CopyBandwidth {
  double up = 0, down = 0;  // bytes per second
};

absl::StatusOr<CopyBandwidth> PinnedCopyBandwidth(Device* device, int64_t bytes) {
  ASSIGN_OR_RETURN(void* host, device->host_allocator()->Allocate(bytes));
  ASSIGN_OR_RETURN(void* dev, device->allocator()->Allocate(bytes));
  std::memset(host, 1, bytes);
  CopyBandwidth bw;
  for (CopyKind kind : {CopyKind::kHostToDevice, CopyKind::kDeviceToHost}) {
    double best = 1e30;
    for (int r = 0; r <= FLAGS_repeats; ++r) {  // the first is a warm-up
      const auto start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(kind == CopyKind::kHostToDevice ? device->Copy(kind, dev, host, bytes)
                                                      : device->Copy(kind, host, dev, bytes));
      if (r > 0) best = std::min(best, Seconds(start));
    }
    (kind == CopyKind::kHostToDevice ? bw.up : bw.down) = static_cast<double>(bytes) / best;
  }
  device->allocator()->Deallocate(dev, bytes);
  device->host_allocator()->Deallocate(host, bytes);
  return bw;
}

absl::Status Report() {
  if (FLAGS_repeats < 1 || FLAGS_threads < 0 || FLAGS_params < 0 || !(FLAGS_adam_bytes > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--repeats must be >= 1, --threads and --params >= 0, --adam_bytes > 0; got ",
        FLAGS_repeats, ", ", FLAGS_threads, ", ", FLAGS_params, ", ", FLAGS_adam_bytes));
  }
  int64_t params = FLAGS_params;
  if (params == 0) {
    ASSIGN_OR_RETURN(GptConfig config, GptConfig::Preset(FLAGS_size));
    params = config.NumParameters();
  }
  Place place;
  if (FLAGS_place.empty()) {
    place = DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0 ? GPUPlace(0)
                                                                        : *ParsePlace("sim:0");
  } else {
    ASSIGN_OR_RETURN(place, ParsePlace(FLAGS_place));
  }
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  const int threads =
      FLAGS_threads > 0 ? FLAGS_threads : std::max(1u, std::thread::hardware_concurrency());
  const int64_t adam_bytes = static_cast<int64_t>(FLAGS_adam_bytes * params);
  const double host_bw = HostCopyBandwidth(adam_bytes / 2, threads);
  const double host_bw_one = HostCopyBandwidth(adam_bytes / 2, 1);
  const int64_t bf16_bytes = 2 * params;
  ASSIGN_OR_RETURN(CopyBandwidth copy, PinnedCopyBandwidth(device, bf16_bytes));

  const double adam_ms = 1e3 * adam_bytes / host_bw;
  const double up_ms = 1e3 * bf16_bytes / copy.up, down_ms = 1e3 * bf16_bytes / copy.down;
  std::printf("offload bound of %.2f M parameters on %s (%s; host: %d threads)\n", params / 1e6,
              place.ToString().c_str(), device->Description().c_str(), threads);
  std::printf(
      "host memory: %.1f GB/s copying %.0f MB over %d threads (%.1f GB/s on one), read "
      "plus written\n",
      host_bw / 1e9, adam_bytes / 2 / 1e6, threads, host_bw_one / 1e9);
  std::printf("pinned copies of %.1f MB: %.1f GB/s host->%s, %.1f GB/s %s->host\n",
              bf16_bytes / 1e6, copy.up / 1e9, place.ToString().c_str(), copy.down / 1e9,
              place.ToString().c_str());
  std::printf("CPU AdamW term: %.0f B/param x %.2f M = %.2f GB at %.1f GB/s = %.2f ms\n",
              FLAGS_adam_bytes, params / 1e6, adam_bytes / 1e9, host_bw / 1e9, adam_ms);
  std::printf(
      "transfer term: 16-bit weights up %.2f ms, gradients down %.2f ms (each way on its "
      "own link direction: %.2f ms)\n",
      up_ms, down_ms, std::max(up_ms, down_ms));
  double bound = std::max(adam_ms, std::max(up_ms, down_ms));
  if (FLAGS_all_gpu_ms > 0) {
    std::printf("all-GPU step: %.2f ms (measured by the trainer)\n", FLAGS_all_gpu_ms);
    bound = std::max(bound, FLAGS_all_gpu_ms);
  }
  std::printf("bound: %.2f ms%s\n", bound,
              FLAGS_all_gpu_ms > 0 ? "" : " (without the all-GPU step: give --all_gpu_ms)");
  if (FLAGS_offload_ms > 0) {
    std::printf("offloaded step: %.2f ms = %.2f x the bound%s\n", FLAGS_offload_ms,
                FLAGS_offload_ms / bound,
                FLAGS_all_gpu_ms > 0
                    ? absl::StrCat("; practicality ",
                                   absl::StrFormat("%.2f", FLAGS_all_gpu_ms / FLAGS_offload_ms))
                          .c_str()
                    : "");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "prints the physical bound of an optimizer-offloaded training step: the host's memory\n"
      "  bandwidth and the pinned copy bandwidth, measured, as the CPU AdamW and transfer terms\n"
      "usage: offload_bound [--size=gpt2 | --params=N] [--place=gpu:0] [--all_gpu_ms=T]\n"
      "  [--offload_ms=T]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const absl::Status s = tandem::Report();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
