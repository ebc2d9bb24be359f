// ProgramHandle: the C++ side of tandem.Program, and BuildCall, which runs
// one ProgramBuilder call on a (main, startup) pair of handles.
//
//   ProgramHandle main, startup;
//   {
//     BuildCall call(&main, &startup, /*device=*/"cpu", /*policy=*/"");
//     Var y = call.Done(call.b()->Relu(Var{"x"}));   // raises the builder's error
//   }   // the programs are back in their handles, their versions bumped
//
// The Python API keeps Paddle's model of separate Program objects joined by
// program_guard, while ProgramBuilder owns a pair: a BuildCall moves the
// pair into a fresh builder (an O(1) swap), applies the current
// device_guard and transfer policy, and moves them back when it ends, even
// when the call raises. Names stay unique because the builder skips names
// either program already has. Not thread-safe: callers hold the GIL.
#ifndef TANDEM_PYTHON_PROGRAM_HANDLE_H_
#define TANDEM_PYTHON_PROGRAM_HANDLE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "framework/program/program.h"
#include "framework/program/program_builder.h"
#include "python/status.h"

namespace tandem {
namespace python {

struct ProgramHandle {
  Program program;
  // Bumped by every change; an executor prepares a program again when it moved.
  int64_t version = 0;
  // Unique per handle, for executors' plan caches.
  int64_t serial = NextSerial();

  static int64_t NextSerial() {
    static int64_t next = 0;
    return next++;
  }
};

class BuildCall {
 public:
  // `device`: a device_guard string ("" for none); `policy`: "", "allow",
  // "log" or "disallow". Raises ValueError for a bad policy or when main and
  // startup are one program.
  BuildCall(ProgramHandle* main, ProgramHandle* startup, const std::string& device,
            const std::string& policy);
  ~BuildCall();
  BuildCall(const BuildCall&) = delete;
  BuildCall& operator=(const BuildCall&) = delete;

  ProgramBuilder* b() { return &builder_; }
  // `value` when the builder has no error, else raises it.
  template <typename T>
  T Done(T value) {
    ThrowIfError(builder_.status());
    return value;
  }

 private:
  ProgramHandle* main_;
  ProgramHandle* startup_;
  ProgramBuilder builder_;
  std::optional<ProgramBuilder::DeviceGuardScope> device_;
  std::optional<ProgramBuilder::TransferPolicyScope> policy_;
};

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_PROGRAM_HANDLE_H_
