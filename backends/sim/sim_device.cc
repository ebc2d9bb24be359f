// The sim device, its factory and its registration (see sim_device.h).
#include "backends/sim/sim_device.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "glog/logging.h"

DEFINE_int32(sim_devices, 2,
             "Number of simulated accelerators sim:0 .. sim:N-1; read once, "
             "when the sim device count is first needed.");
DEFINE_int64(sim_memory_limit_mb, 0,
             "Memory limit of each sim device in MiB (0: none); read when the "
             "device is created.");

namespace tandem {
namespace {

thread_local int current_sim_device = 0;

class SimDeviceFactory final : public DeviceFactory {
 public:
  int DeviceCount() override {
    std::call_once(count_once_, [this] { count_ = std::max(0, FLAGS_sim_devices); });
    return count_;
  }

  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    return std::unique_ptr<Device>(
        std::make_unique<SimDevice>(index, FLAGS_sim_memory_limit_mb * 1024 * 1024));
  }

  int ExchangeCurrentDevice(int index) override { return std::exchange(current_sim_device, index); }

 private:
  std::once_flag count_once_;
  int count_ = 0;
};

// Registers the device type "sim" (logged as SimPlace(i)) and its factory.
const DeviceFactoryRegistrar sim_registrar("sim", "SimPlace", std::make_unique<SimDeviceFactory>());

}  // namespace

DeviceType SimDeviceType() {
  static const DeviceType type = DeviceType::Register("sim", "SimPlace");
  return type;
}

Place SimPlace(int index) { return Place(SimDeviceType(), index); }

int CurrentSimDevice() { return current_sim_device; }

int64_t SimCopyCounters::TotalCopies() const {
  int64_t total = 0;
  for (int k = 0; k < 3; ++k) total += sync[k].copies + async[k].copies;
  return total;
}

std::string SimCopyCounters::ToString() const {
  std::vector<std::string> parts;
  for (CopyKind kind :
       {CopyKind::kHostToDevice, CopyKind::kDeviceToHost, CopyKind::kDeviceToDevice}) {
    for (bool async_copy : {false, true}) {
      const CopyTally& t = async_copy ? Async(kind) : Sync(kind);
      if (t.copies == 0) continue;
      parts.push_back(absl::StrCat(CopyKindName(kind), async_copy ? " async " : " sync ", t.copies,
                                   " (", t.bytes, " bytes)"));
    }
  }
  return parts.empty() ? "no copies" : absl::StrJoin(parts, ", ");
}

SimDevice::SimDevice(int index, int64_t bytes_limit)
    : place_(SimPlace(index)),
      memory_(place_, bytes_limit),
      compute_stream_(this),
      copy_stream_(this) {}

std::string SimDevice::Description() const {
  const int64_t limit = memory_.GetStats().bytes_limit;
  return absl::StrCat("simulated accelerator ", place_.ToString(),
                      " (memory limit: ", limit == 0 ? "none" : HumanBytes(limit), ")");
}

Allocator* SimDevice::host_allocator() { return CpuAllocator::Default(); }

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::CreateStream() {
  return std::unique_ptr<Stream>(std::make_unique<SimStream>(this));
}

absl::StatusOr<std::unique_ptr<Event>> SimDevice::CreateEvent() {
  return std::unique_ptr<Event>(std::make_unique<SimEvent>());
}

absl::StatusOr<SimStream*> SimDevice::OwnStream(Stream* stream, absl::string_view what) const {
  auto* sim = dynamic_cast<SimStream*>(stream);
  if (sim == nullptr || sim->owner() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat(place_.LogName(), " ", what, ": the stream is not a stream of this device (",
                     sim == nullptr ? "not a sim stream" : sim->owner()->place().LogName(), ")"));
  }
  return sim;
}

absl::StatusOr<SimEvent*> SimDevice::AnySimEvent(Event* event, absl::string_view what) const {
  auto* sim = dynamic_cast<SimEvent*>(event);
  if (sim == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(place_.LogName(), " ", what, ": the event is not a sim event"));
  }
  return sim;
}

absl::Status SimDevice::DoCopy(CopyKind kind, void* dst, const void* src, size_t bytes,
                               bool async) {
  if (bytes > 0) {
    auto check = [&](bool on_device, const void* ptr, const char* side) {
      if (!on_device || memory_.Owns(ptr, bytes)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrFormat("%s %s copy of %d bytes: the %s %p is not %s memory", place_.LogName(),
                          CopyKindName(kind), bytes, side, ptr, place_.ToString()));
    };
    RETURN_IF_ERROR(check(kind != CopyKind::kDeviceToHost, dst, "destination"));
    RETURN_IF_ERROR(check(kind != CopyKind::kHostToDevice, src, "source"));
    std::memcpy(dst, src, bytes);
  }
  VLOG(3) << place_.LogName() << (async ? " CopyAsync " : " Copy ") << CopyKindName(kind) << " "
          << bytes << " bytes";
  std::lock_guard<std::mutex> lock(mu_);
  CopyTally& t = (async ? counters_.async : counters_.sync)[static_cast<int>(kind)];
  ++t.copies;
  t.bytes += static_cast<int64_t>(bytes);
  return absl::OkStatus();
}

absl::Status SimDevice::Copy(CopyKind kind, void* dst, const void* src, size_t bytes) {
  return DoCopy(kind, dst, src, bytes, /*async=*/false);
}

absl::Status SimDevice::CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                                  Stream* stream) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "CopyAsync"));
  RETURN_IF_ERROR(DoCopy(kind, dst, src, bytes, /*async=*/true));
  sim_stream->Enqueue();
  return absl::OkStatus();
}

absl::Status SimDevice::RecordEvent(Event* event, Stream* stream) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "RecordEvent"));
  ASSIGN_OR_RETURN(SimEvent * sim_event, AnySimEvent(event, "RecordEvent"));
  sim_event->Record(sim_stream, sim_stream->Enqueue());
  return absl::OkStatus();
}

absl::Status SimDevice::StreamWaitEvent(Stream* stream, Event* event) {
  RETURN_IF_ERROR(OwnStream(stream, "StreamWaitEvent").status());
  return AnySimEvent(event, "StreamWaitEvent").status();
}

absl::Status SimDevice::SynchronizeEvent(Event* event) {
  return AnySimEvent(event, "SynchronizeEvent").status();
}

absl::Status SimDevice::SynchronizeStream(Stream* stream) {
  return OwnStream(stream, "SynchronizeStream").status();
}

SimCopyCounters SimDevice::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void SimDevice::ResetCounters() {
  std::lock_guard<std::mutex> lock(mu_);
  counters_ = SimCopyCounters();
}

namespace {

absl::StatusOr<SimDevice*> SimDeviceAt(const Place& place) {
  if (place.type() != SimDeviceType()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy counters exist for sim places only, got ", place.ToString()));
  }
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  // The sim factory creates every device of the sim type.
  return static_cast<SimDevice*>(device);
}

}  // namespace

absl::StatusOr<SimCopyCounters> GetSimCopyCounters(const Place& place) {
  ASSIGN_OR_RETURN(SimDevice * device, SimDeviceAt(place));
  return device->Counters();
}

absl::Status ResetSimCopyCounters(const Place& place) {
  ASSIGN_OR_RETURN(SimDevice * device, SimDeviceAt(place));
  device->ResetCounters();
  return absl::OkStatus();
}

}  // namespace tandem
