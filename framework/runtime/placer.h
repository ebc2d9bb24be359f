// PlaceProgram: the placement pass. Resolves each op's place, picks its
// kernel, computes where every argument must live (HostMemory), and inserts
// one memcpy_h2d / memcpy_d2h op per (variable, destination), each with the
// reason it exists. The result is what the executor runs.
//
//   PlacerOptions opts;
//   opts.default_place = GPUPlace(0);
//   opts.initial_places = {{"emb_w", CPUPlace()}, {"lr", CPUPlace()}};
//   ASSIGN_OR_RETURN(PlacedProgram placed, PlaceProgram(program, opts));
//   std::cout << placed.TableString();
//
// Rules (docs/design.md, "Placement rules"): an op's op_device wins ("gpu" means the
// default place's GPU); empty op_device uses the default place; no kernel on
// the requested place falls back to the CPU with a warning, or fails in
// strict mode; argument memory is the host for HostMemory arguments and the
// op's place otherwise; a variable written by an op is invalidated on every
// other place; persistable variables moved during the program are copied
// back to where they started, so every run starts from the same state.
// Pure function; thread-safe.
#ifndef TANDEM_FRAMEWORK_RUNTIME_PLACER_H_
#define TANDEM_FRAMEWORK_RUNTIME_PLACER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/place/place.h"
#include "framework/program/program.h"

namespace tandem {

struct PlacerOptions {
  Place default_place;
  // Missing kernel on the requested place: error instead of CPU fallback.
  bool strict = false;
  // The program's transfer policy (ops may override it).
  TransferPolicy policy = TransferPolicy::kAllow;
  // Where variables that exist before the program runs live: fed variables
  // (usually the host) and persistable ones already in the scope.
  std::map<std::string, Place> initial_places;
};

// One row of the placement table.
struct PlacementEntry {
  int op_index = 0;      // in the placed program
  std::string op_type;
  Place place;
  // guard, default, inherit, param, fallback, host-arg (a copy made for a
  // HostMemory argument), copy (a copy made for a consumer on another place)
  std::string cause;
  std::string detail;    // human-readable explanation
};

struct PlacedProgram {
  Program program;  // copies inserted; every op's op_device is its resolved place
  std::vector<Place> places;                        // per op
  std::vector<const KernelRegistration*> kernels;   // per op; nullptr for copies
  std::vector<PlacementEntry> table;                // per op
  std::map<std::string, Place> initial_places;
  int num_copies = 0;

  // The placement table, one op per line:
  //   #  op            place   cause     detail
  std::string TableString() const;
};

absl::StatusOr<PlacedProgram> PlaceProgram(const Program& program,
                                           const PlacerOptions& options);

// Resolves an op_device string against the default place ("" -> default,
// "gpu" -> the default place's GPU or gpu:0). InvalidArgument for bad
// strings; the device's existence is checked by the caller.
absl::StatusOr<Place> ResolveOpDevice(absl::string_view op_device, const Place& default_place);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_PLACER_H_
