// PlaceProgram: places every op of a program, picks its kernel, decides
// where each argument lives and inserts the copies that needs. The result
// is what the executor runs.
//
//   PlacerOptions opts;
//   opts.default_place = GPUPlace(0);
//   opts.initial_places = {{"emb_w", CPUPlace()}, {"lr", CPUPlace()}};
//   ASSIGN_OR_RETURN(PlacedProgram placed, PlaceProgram(program, opts));
//   std::cout << placed.TableString();
//   placed.table[3].cause;         // PlacementCause::kInherit
//   placed.table[2].copy->var;     // the variable a copy op moves
//
// An op's place is the first of these rules that applies (each a named,
// separately tested pass in placement_passes.h; docs/design.md, "Placement
// rules", states them in full):
//   guard      the op's op_device (device_guard): a user pin, never changed
//              by any other rule ("gpu" means the default place's GPU);
//   inherit    a gradient op runs with its forward op;
//   loss-grad  the loss-gradient fill runs with the op that produced the loss;
//   grad-sum   a gradient sum runs where its partial gradient was produced;
//   grad-norm  a gradient's clip norm runs where the gradient was produced;
//   param      an update op runs where its parameter is first read;
//   state      optimizer state is initialised where its parameter is;
//   host-state host scalars read as HostMemory (the learning rate) are
//              initialised on the host;
//   auto       the choice of the auto pass (PlacerOptions::auto_places);
//   default    the executor's default place.
// Then `fallback`: no kernel on that place for the op's dtypes runs it on the
// CPU with a warning (NotFound in strict mode). Arguments live in host
// memory when the kernel registers them HostMemory, on the op's place
// otherwise; one copy op per (value, destination) is inserted (cause `copy`,
// or `host-arg` for a HostMemory argument), a variable written by an op
// makes its copies stale, and persistables updated away from where they
// started are copied back at the end (`write-back`).
// Pure function; thread-safe.
#ifndef TANDEM_FRAMEWORK_PLACEMENT_PLACER_H_
#define TANDEM_FRAMEWORK_PLACEMENT_PLACER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/place/place.h"
#include "framework/program/program.h"

namespace tandem {

// Why an op or copy is where it is: the rule that decided it.
enum class PlacementCause {
  kCastAtSource,  // a narrowing AMP cast, where its input is produced
  kGuard,         // op_device / device_guard
  kInherit,       // a gradient op, with its forward op
  kLossGrad,      // the loss-gradient fill, with the loss op
  kGradSum,       // a gradient sum, where its partial gradient was produced
  kGradNorm,      // a gradient's squared norm (clipping), where the gradient was produced
  kParam,         // an update op, where its parameter is read
  kState,         // optimizer state, initialised with its parameter
  kHostState,     // a host scalar the update kernels read
  kAuto,          // the auto pass
  kDefault,       // the executor's default place
  kFallback,      // no kernel on the requested place: the CPU
  kCopy,          // a copy for a reader on another place
  kHostArg,       // a copy for a HostMemory argument
  kWriteBack,     // a copy of an updated persistable back to where it lives
};
// "cast-at-source", "guard", "inherit", "loss-grad", "grad-sum", "grad-norm", "param",
// "state", "host-state", "auto", "default", "fallback", "copy", "host-arg",
// "write-back".
absl::string_view PlacementCauseName(PlacementCause cause);

// A copy op the placer inserted, as typed fields.
struct CopyStep {
  std::string var;     // the variable copied (as the consumer's program names it)
  std::string source;  // the variable read (var, or its copy on the host)
  std::string output;  // the variable written ("var@sim:0", or var for a write-back)
  Place from, to;
  int consumer = -1;          // placed index of the op whose read needed it; -1: write-back
  std::string consumer_type;  // that op's type ("write-back" for write-backs)
  std::string consumer_arg;   // the argument it reads the copy as
};

// What the auto pass decided for one op: its place and why, in numbers.
struct AutoChoice {
  Place place;
  std::string reason;
};

struct PlacerOptions {
  Place default_place;
  // Missing kernel on the requested place: error instead of CPU fallback.
  bool strict = false;
  // The program's transfer policy (ops may override it).
  TransferPolicy policy = TransferPolicy::kAllow;
  // Where variables that exist before the program runs live: fed variables
  // (usually the host) and persistable ones already in the scope.
  std::map<std::string, Place> initial_places;
  // The auto pass's choices, by op index in the program; applied to ops
  // that no earlier rule places (never to pinned or derived ops).
  std::map<int, AutoChoice> auto_places;
  // Persistables the auto pass keeps elsewhere than where they are now
  // (also their initial_places); the executor moves them before a run.
  std::map<std::string, Place> homes;
  // Why a planner chose a parameter's home, by parameter: the table's
  // detail of its update op (rule param).
  std::map<std::string, std::string> home_reasons;
  std::string auto_summary;     // the auto pass's summary line, for the table
  double auto_step_micros = 0;  // the auto pass's estimated step time
};

// One row of the placement table.
struct PlacementEntry {
  int op_index = 0;  // in the placed program
  std::string op_type;
  Place place;
  PlacementCause cause = PlacementCause::kDefault;
  std::string detail;            // the rule's explanation, with names and numbers
  std::optional<CopyStep> copy;  // set for copy ops
};

struct PlacedProgram {
  Program program;            // copies inserted; every op's op_device is its resolved place
  std::vector<Place> places;  // per op
  std::vector<const KernelRegistration*> kernels;  // per op; nullptr for copies
  std::vector<PlacementEntry> table;               // per op
  std::vector<int> source_ops;  // per op: its index in the input program; -1 for copies
  std::map<std::string, Place> initial_places;
  std::map<std::string, Place> homes;  // see PlacerOptions::homes
  std::string auto_summary;
  double auto_step_micros = 0;
  int num_copies = 0;

  bool is_copy(int index) const { return table[index].copy.has_value(); }
  // The placement table, one op per line, then the auto pass's summary:
  //   #  op            place   cause     detail
  std::string TableString() const;
};

absl::StatusOr<PlacedProgram> PlaceProgram(const Program& program, const PlacerOptions& options);

// Resolves an op_device string against the default place ("" -> default,
// "gpu" -> the default place's GPU or gpu:0). InvalidArgument for bad
// strings; the device's existence is checked by the caller.
absl::StatusOr<Place> ResolveOpDevice(absl::string_view op_device, const Place& default_place);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACEMENT_PLACER_H_
