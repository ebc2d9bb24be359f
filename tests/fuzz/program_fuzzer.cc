// Fuzz target: Program::FromJson, then Executor::Prepare on cpu with every
// op and the cpu backend linked (it lives in tests/ because framework/ may
// not depend on ops/ or backends/). Any text parses or is refused without
// crashing; a program that parses prepares or is refused. Nothing runs
// (Run would allocate what the program declares).
#include <cstddef>
#include <cstdint>

#include "framework/program/program.h"
#include "framework/runtime/executor.h"
#include "framework/tensor/scope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::StatusOr<tandem::Program> program =
      tandem::Program::FromJson(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!program.ok()) return 0;
  tandem::Scope scope;
  tandem::Executor exe(tandem::CPUPlace());
  (void)exe.Prepare(*program, scope, /*feeds=*/{}, /*fetches=*/{});
  return 0;
}
