// The copy advisor: which ops' placement causes synchronous host/device
// copies, what they cost per step, and the device_guard change that
// removes them.
//
//   profiler::Profile p = profiler::GetProfile();   // with AttachPlan(*plan) done
//   std::cout << profiler::FormatAdvice(profiler::Advise(p, plan->placed()));
//   // slice (#3, gpu:0): 1 sync H2D + 1 sync D2H per step (16 B each, 0.012 ms):
//   //   its input 'shape_0.tmp_0' is produced on the host (HostMemory output of
//   //   'shape') and its output 'slice_0.tmp_0' is read on the host by
//   //   'crop_tensor' (HostMemory 'Shape'); put 'slice' under
//   //   device_guard("cpu") to remove both
//
// For each op on an accelerator, the copies it causes are the host->device
// copies of its inputs and the device->host copies of its outputs. The
// advice is checked, not guessed: the placed program is placed again with
// that op under device_guard("cpu"), and an op is named only when that
// removes copies on balance (and it has a CPU kernel). Costs come from the
// profile's steady-state runs when it holds the plan's copies, otherwise
// only the counts are given.
//
// AdviseDeviceWaits names, per device, the host step it waits on most (from
// the profile's concurrency figures; devices with a timer only).
//
// Thread-safe (reads the kernel and device registries).
#ifndef TANDEM_PROFILER_ADVISOR_H_
#define TANDEM_PROFILER_ADVISOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "framework/place/place.h"
#include "framework/placement/placer.h"
#include "profiler/profile.h"

namespace tandem {
namespace profiler {

struct Advice {
  std::string op;           // op type
  int op_index = -1;        // in the user's program (copies not counted)
  int placed_index = -1;    // in the placed program
  Place place;              // where it runs now
  double h2d_per_step = 0;  // copies per step it causes, each direction
  double d2h_per_step = 0;
  double sync_per_step = 0;    // of those, synchronous ones (as profiled)
  std::vector<int64_t> bytes;  // per copy
  bool profiled = false;       // ms_per_step comes from the profile
  double ms_per_step = 0;      // host time of those copies per step
  int copies_removed = 0;      // per run, by the fix, net of copies it adds
  std::string fix;             // "device_guard(\"cpu\")"
  std::string message;         // the whole advice, one line
};

// Most synchronous copies first. `placed` must be the plan the profile ran
// (AttachPlan); an empty profile gives counts without times.
std::vector<Advice> Advise(const Profile& profile, const PlacedProgram& placed);

// One line per advice; "No op placement causes synchronous copies." when
// there is none.
std::string FormatAdvice(const std::vector<Advice>& advice);

// A device idling while a host step runs (Concurrency::blockers): the host
// op it waited on most, per timed device.
struct DeviceWaitAdvice {
  Place device;
  std::string op;     // the host op's type
  int op_index = -1;  // its position in the placed program (as in the Copy Ledger)
  // Device idle time during the op (before the device's last work of the
  // step), per steady step.
  double idle_ms_per_step = 0;
  // "gpu:0 idled 120 us per step waiting for host op lookup_table (#3)".
  std::string message;
};

// Longest idle first. Empty without device time (no timer, CPU state) or
// when no device idled during a host op.
std::vector<DeviceWaitAdvice> AdviseDeviceWaits(const Profile& profile);

// One line per advice; "No device waited for a host op." when there is none.
std::string FormatDeviceWaitAdvice(const std::vector<DeviceWaitAdvice>& advice);

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_ADVISOR_H_
