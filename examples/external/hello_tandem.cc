// Trains a one-layer model with Tandem from another Bazel workspace (README.md,
// "Using Tandem from another Bazel workspace"; examples/external builds it).
#include <cstdio>

#include "framework/backward/optimizer.h"
#include "framework/runtime/executor.h"

int main() {
  tandem::ProgramBuilder b;
  tandem::Var x = b.FillConstant({4, 3}, tandem::DataType::kFloat32, 1.0);
  tandem::Var y = b.FillConstant({4, 1}, tandem::DataType::kFloat32, 0.5);
  tandem::Var loss = b.Mean(b.SquareErrorCost(b.Fc(x, 1), y));
  if (!tandem::SGD(0.1).Minimize(&b, loss).ok()) return 1;
  tandem::Executor exe(tandem::CPUPlace());
  tandem::Scope scope;
  if (!exe.Run(b.startup_program(), &scope).ok()) return 1;
  for (int step = 0; step < 3; ++step) {
    auto out = exe.Run(b.main_program(), &scope, {}, {loss.name});
    if (!out.ok()) return std::fprintf(stderr, "%s\n", out.status().ToString().c_str()), 1;
    std::printf("step %d loss %.6f\n", step, (*out)[0].data<float>()[0]);
  }
}
