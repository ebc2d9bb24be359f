// The sim device, its factory and its registration (see sim_device.h).
#include "backends/sim/sim_device.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstring>
#include <functional>
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
DEFINE_int64(sim_stream_delay_us, 0,
             "Microseconds each sim stream sleeps before every queued operation "
             "(async copy, event record, event wait), to shake out missing "
             "waits; read when the device is created.");

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
    return std::unique_ptr<Device>(std::make_unique<SimDevice>(
        index, FLAGS_sim_memory_limit_mb * 1024 * 1024,
        absl::Microseconds(std::max<int64_t>(0, FLAGS_sim_stream_delay_us))));
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

SimDevice::SimDevice(int index, int64_t bytes_limit, absl::Duration stream_delay)
    : place_(SimPlace(index)),
      memory_(
          place_, bytes_limit,
          [this](std::function<void()> free) { compute_stream_.RunAfterQueued(std::move(free)); }),
      compute_stream_(this, &delay_ns_, &streams_),
      copy_stream_(this, &delay_ns_, &streams_) {
  SetStreamDelay(stream_delay);
}

std::string SimDevice::Description() const {
  const int64_t limit = memory_.GetStats().bytes_limit;
  return absl::StrCat("simulated accelerator ", place_.ToString(),
                      " (memory limit: ", limit == 0 ? "none" : HumanBytes(limit), ")");
}

Allocator* SimDevice::host_allocator() { return CpuAllocator::Default(); }

void SimDevice::SetStreamDelay(absl::Duration delay) {
  delay_ns_.store(std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay)));
}

absl::Duration SimDevice::stream_delay() const { return absl::Nanoseconds(delay_ns_.load()); }

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::CreateStream() {
  return std::unique_ptr<Stream>(std::make_unique<SimStream>(this, &delay_ns_, &streams_));
}

absl::StatusOr<std::unique_ptr<Event>> SimDevice::CreateEvent() {
  return std::unique_ptr<Event>(std::make_unique<SimEvent>(/*timing=*/false));
}

absl::StatusOr<std::unique_ptr<Event>> SimDevice::CreateTimingEvent() {
  return std::unique_ptr<Event>(std::make_unique<SimEvent>(/*timing=*/true));
}

absl::StatusOr<double> SimDevice::EventElapsedMs(Event* start, Event* end) {
  std::shared_ptr<const SimEventRecord> records[2];
  Event* events[2] = {start, end};
  for (int i = 0; i < 2; ++i) {
    const char* which = i == 0 ? "start" : "end";
    ASSIGN_OR_RETURN(SimEvent * event, AnySimEvent(events[i], "EventElapsedMs"));
    if (!event->timing()) {
      return absl::InvalidArgumentError(
          absl::StrCat(place_.LogName(), " EventElapsedMs: the ", which,
                       " event is not a timing event (CreateTimingEvent)"));
    }
    records[i] = event->last_record();
    if (records[i] == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(place_.LogName(), " EventElapsedMs: the ",
                                                        which, " event was never recorded"));
    }
    if (records[i]->device() != this) {
      return absl::InvalidArgumentError(absl::StrCat(place_.LogName(), " EventElapsedMs: the ",
                                                     which, " event was recorded on ",
                                                     records[i]->device()->place().LogName()));
    }
  }
  records[0]->Wait();
  records[1]->Wait();
  const std::chrono::duration<double, std::milli> ms =
      records[1]->completed_at() - records[0]->completed_at();
  return ms.count();
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

absl::Status SimDevice::CheckCopy(CopyKind kind, void* dst, const void* src, size_t bytes) const {
  if (bytes == 0) return absl::OkStatus();
  auto check = [&](bool on_device, const void* ptr, const char* side) {
    if (!on_device || memory_.Owns(ptr, bytes)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s copy of %d bytes: the %s %p is not %s memory", place_.LogName(),
                        CopyKindName(kind), bytes, side, ptr, place_.ToString()));
  };
  RETURN_IF_ERROR(check(kind != CopyKind::kDeviceToHost, dst, "destination"));
  return check(kind != CopyKind::kHostToDevice, src, "source");
}

void SimDevice::Count(CopyKind kind, size_t bytes, bool async) {
  std::lock_guard<std::mutex> lock(mu_);
  CopyTally& t = (async ? counters_.async : counters_.sync)[static_cast<int>(kind)];
  ++t.copies;
  t.bytes += static_cast<int64_t>(bytes);
}

absl::Status SimDevice::Copy(CopyKind kind, void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(CheckCopy(kind, dst, src, bytes));
  // The data the copy reads is final once the compute stream has drained.
  RETURN_IF_ERROR(compute_stream_.Drain());
  if (bytes > 0) std::memcpy(dst, src, bytes);
  VLOG(3) << place_.LogName() << " Copy " << CopyKindName(kind) << " " << bytes << " bytes";
  Count(kind, bytes, /*async=*/false);
  return absl::OkStatus();
}

absl::Status SimDevice::CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                                  Stream* stream) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "CopyAsync"));
  RETURN_IF_ERROR(CheckCopy(kind, dst, src, bytes));
  Count(kind, bytes, /*async=*/true);
  sim_stream->Enqueue([this, kind, dst, src, bytes]() -> absl::Status {
    // The executor may have freed the device side meanwhile (a missing
    // wait): skip the copy and report it rather than touch freed memory.
    auto held = [&](bool on_device, const void* ptr) {
      return !on_device || bytes == 0 || memory_.Holds(ptr, bytes);
    };
    if (!held(kind != CopyKind::kDeviceToHost, dst) ||
        !held(kind != CopyKind::kHostToDevice, src)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s async %s copy of %d bytes (%p -> %p): the device memory was freed before the "
          "copy ran (free it after an event recorded behind the copy has completed)",
          place_.LogName(), CopyKindName(kind), bytes, src, dst));
    }
    if (bytes > 0) std::memcpy(dst, src, bytes);
    VLOG(3) << place_.LogName() << " CopyAsync " << CopyKindName(kind) << " " << bytes << " bytes";
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status SimDevice::RecordEvent(Event* event, Stream* stream) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "RecordEvent"));
  ASSIGN_OR_RETURN(SimEvent * sim_event, AnySimEvent(event, "RecordEvent"));
  sim_event->RecordOn(sim_stream);
  return absl::OkStatus();
}

absl::Status SimDevice::StreamWaitEvent(Stream* stream, Event* event) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "StreamWaitEvent"));
  ASSIGN_OR_RETURN(SimEvent * sim_event, AnySimEvent(event, "StreamWaitEvent"));
  std::shared_ptr<const SimEventRecord> record = sim_event->last_record();
  if (record == nullptr) return absl::OkStatus();  // never recorded: nothing to wait for
  sim_stream->Enqueue([record = std::move(record)] {
    record->Wait();
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status SimDevice::SynchronizeEvent(Event* event) {
  ASSIGN_OR_RETURN(SimEvent * sim_event, AnySimEvent(event, "SynchronizeEvent"));
  std::shared_ptr<const SimEventRecord> record = sim_event->last_record();
  if (record != nullptr) record->Wait();
  return absl::OkStatus();
}

absl::Status SimDevice::SynchronizeStream(Stream* stream) {
  ASSIGN_OR_RETURN(SimStream * sim_stream, OwnStream(stream, "SynchronizeStream"));
  return sim_stream->Drain();
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

// `what` exist for sim places only.
absl::StatusOr<SimDevice*> SimDeviceAt(const Place& place, absl::string_view what) {
  if (place.type() != SimDeviceType()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " exist for sim places only, got ", place.ToString()));
  }
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  // The sim factory creates every device of the sim type.
  return static_cast<SimDevice*>(device);
}

}  // namespace

absl::StatusOr<SimCopyCounters> GetSimCopyCounters(const Place& place) {
  ASSIGN_OR_RETURN(SimDevice * device, SimDeviceAt(place, "copy counters"));
  return device->Counters();
}

absl::Status ResetSimCopyCounters(const Place& place) {
  ASSIGN_OR_RETURN(SimDevice * device, SimDeviceAt(place, "copy counters"));
  device->ResetCounters();
  return absl::OkStatus();
}

absl::Status SetSimStreamDelay(const Place& place, absl::Duration delay) {
  if (delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sim stream delay must be >= 0, got ", absl::FormatDuration(delay)));
  }
  ASSIGN_OR_RETURN(SimDevice * device, SimDeviceAt(place, "stream delays"));
  device->SetStreamDelay(delay);
  return absl::OkStatus();
}

}  // namespace tandem
