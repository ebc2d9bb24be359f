// CUDA graph capture: the device API (cuda_graph.h) and the executor's
// capture/replay of a training step on gpu:0 (ExecutorOptions::
// capture_graphs). Skipped without a GPU.
#include "backends/cuda/cuda_graph.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class CudaGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) == 0) GTEST_SKIP() << "no GPU";
    gpu_ = *DeviceRegistry::Global().GetDevice(GPUPlace(0));
  }
  Device* gpu_ = nullptr;
};

TEST_F(CudaGraphTest, ReplayedCopyReadsTheStagingBufferAtLaunch) {
  Stream* stream = gpu_->compute_stream();
  ASSERT_OK_AND_ASSIGN(void* staging, gpu_->host_allocator()->Allocate(sizeof(float)));
  ASSERT_OK_AND_ASSIGN(void* device, gpu_->allocator()->Allocate(sizeof(float)));
  float value = 1.5f;
  std::memcpy(staging, &value, sizeof(float));
  ASSERT_OK(gpu_->BeginCapture(stream));
  ASSERT_OK(gpu_->CopyAsync(CopyKind::kHostToDevice, device, staging, sizeof(float), stream));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceGraph> graph, gpu_->EndCapture(stream));
  for (float v : {2.5f, -7.0f}) {
    std::memcpy(staging, &v, sizeof(float));
    ASSERT_OK(graph->Launch(stream));
    float back = 0;
    ASSERT_OK(gpu_->Copy(CopyKind::kDeviceToHost, &back, device, sizeof(float)));
    EXPECT_EQ(back, v);
  }
  gpu_->allocator()->Deallocate(device, sizeof(float));
  gpu_->host_allocator()->Deallocate(staging, sizeof(float));
}

TEST_F(CudaGraphTest, SynchronisingWhileCapturingFailsAndTheGpuStaysUsable) {
  Stream* stream = gpu_->compute_stream();
  ASSERT_OK(gpu_->BeginCapture(stream));
  EXPECT_FALSE(gpu_->SynchronizeStream(stream).ok());
  const absl::StatusOr<std::unique_ptr<DeviceGraph>> graph = gpu_->EndCapture(stream);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("cudaStreamEndCapture"));
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("cuda_graph.cc:"));
  ASSERT_OK_AND_ASSIGN(Tensor t,
                       CopyTensorTo(Tensor::FromVector<float>(Shape({2}), {1, 2}), GPUPlace(0)));
  ASSERT_OK_AND_ASSIGN(Tensor back, CopyTensorTo(t, CPUPlace()));
  EXPECT_EQ(back.data<float>()[1], 2.0f);
}

// y = fc(x, 3) with a bias, loss = mean((y - label)^2), SGD: one executor
// eager, one capturing, same startup values (constant initialisers).
struct Trainer {
  Trainer(bool capture, bool host_scale) {
    Var x = b.Data("x", DataType::kFloat32, Shape({8, 4}));
    Var label = b.Data("label", DataType::kFloat32, Shape({8, 3}));
    Var in = x;
    if (host_scale) {
      auto host = b.device_guard("cpu");
      in = b.Scale(x, 0.5);
    }
    Var y = b.Fc(in, 3, 1, true, "fc", Initializer::Constant(0.25));
    loss = b.Mean(b.SquareErrorCost(y, label));
    EXPECT_OK(SGD(0.05).Minimize(&b, loss));
    ExecutorOptions options;
    options.capture_graphs = capture;
    exe = std::make_unique<Executor>(GPUPlace(0), options);
    EXPECT_OK(exe->Run(b.startup_program(), &scope).status());
    plan = *exe->Prepare(b.main_program(), scope, {"x", "label"}, {loss.name});
  }
  float Step(int step, RunStats* stats) {
    std::vector<float> x(32), label(24);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * ((step * 7 + i) % 11) - 0.5f;
    for (size_t i = 0; i < label.size(); ++i) label[i] = 0.05f * ((step + i) % 5);
    absl::StatusOr<std::vector<Tensor>> out =
        exe->Run(plan.get(), &scope,
                 {{"x", Tensor::FromVector<float>(Shape({8, 4}), x)},
                  {"label", Tensor::FromVector<float>(Shape({8, 3}), label)}},
                 stats);
    EXPECT_OK(out.status());
    return out.ok() ? (*out)[0].data<float>()[0] : 0.0f;
  }
  std::vector<float> Param(const std::string& name) {
    Tensor host = *CopyTensorTo(scope.Var(name)->tensor(), CPUPlace());
    return std::vector<float>(host.data<float>(), host.data<float>() + host.NumElements());
  }

  ProgramBuilder b;
  Var loss;
  std::unique_ptr<Executor> exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
};

TEST_F(CudaGraphTest, TwentyReplayedSgdStepsEqualEagerSteps) {
  Trainer eager(false, false), graph(true, false);
  for (int step = 0; step < 20; ++step) {
    if (step == 12) {  // a new learning rate: the graph baked the old one in
      for (Trainer* t : {&eager, &graph}) {
        for (const VarDesc& v : t->b.main_program().block().vars()) {
          if (v.name.rfind("learning_rate", 0) == 0) {
            t->scope.Var(v.name)->mutable_tensor()->data<float>()[0] = 0.2f;
          }
        }
      }
    }
    RunStats es, gs;
    const float e = eager.Step(step, &es);
    const float g = graph.Step(step, &gs);
    EXPECT_EQ(g, e) << "step " << step;
    EXPECT_EQ(gs.replayed, step >= 1)
        << "step " << step << ": " << graph.plan->graph_fallback_reason();
    EXPECT_EQ(gs.captured, step == 1 || step == 12) << "step " << step;
    EXPECT_EQ(gs.copies(), es.copies());
  }
  for (const VarDesc& v : eager.b.main_program().block().vars()) {
    if (!v.persistable || v.name.rfind("learning_rate", 0) == 0) continue;
    EXPECT_THAT(graph.Param(v.name), ElementsAreArray(eager.Param(v.name))) << v.name;
  }
}

TEST_F(CudaGraphTest, PlanWithAHostKernelReplaysItsDeviceSegment) {
  Trainer eager(false, true), graph(true, true);
  for (int step = 0; step < 6; ++step) {
    RunStats es, gs;
    EXPECT_EQ(graph.Step(step, &gs), eager.Step(step, &es)) << "step " << step;
    EXPECT_EQ(gs.replayed, step >= 1)
        << "step " << step << ": " << graph.plan->graph_fallback_reason();
    EXPECT_EQ(gs.captured, step == 1) << "step " << step;
    // The host scale runs eagerly; every device step is in the one graph.
    EXPECT_EQ(gs.graph_launches, step >= 1 ? 1 : 0) << "step " << step;
    EXPECT_EQ(gs.ungraphed_device_steps, 0) << graph.plan->graph_summary();
    EXPECT_EQ(gs.copies(), es.copies());
  }
  EXPECT_EQ(graph.plan->graph_fallback_reason(), "");
  EXPECT_THAT(graph.plan->graph_summary(), HasSubstr("1 graph segment ("));
  for (const VarDesc& v : eager.b.main_program().block().vars()) {
    if (!v.persistable) continue;
    EXPECT_THAT(graph.Param(v.name), ElementsAreArray(eager.Param(v.name))) << v.name;
  }
}

// A lookup on gpu:0 checks its ids on the device (deferred_checks.h): the
// check belongs to the captured graph and reports a bad id of a replay at
// the run's end; the next replay is exact again.
TEST_F(CudaGraphTest, ReplayedLookupReportsABadIdAndTheNextReplaySucceeds) {
  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kInt64, Shape({4}));
  Var table =
      b.CreateParameter("table", DataType::kFloat32, Shape({6, 2}), Initializer::Constant(0.0));
  Var out = b.ReduceSum(b.LookupTable(ids, table));
  ExecutorOptions options;
  options.capture_graphs = true;
  Executor exe(GPUPlace(0), options);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  // Row r holds r and 10 r.
  std::vector<float> rows;
  for (int r = 0; r < 6; ++r) rows.insert(rows.end(), {1.0f * r, 10.0f * r});
  ASSERT_OK_AND_ASSIGN(Tensor on_gpu,
                       CopyTensorTo(Tensor::FromVector<float>(Shape({6, 2}), rows), GPUPlace(0)));
  scope.Var("table")->set(on_gpu);
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"ids"}, {out.name}));
  for (int run = 0; run < 8; ++run) {
    std::vector<int64_t> v = {run % 6, (run + 1) % 6, (run + 2) % 6, (run + 3) % 6};
    if (run == 4) v[2] = 17;
    RunStats stats;
    absl::StatusOr<std::vector<Tensor>> got =
        exe.Run(plan.get(), &scope, {{"ids", Tensor::FromVector<int64_t>(Shape({4}), v)}}, &stats);
    if (run == 4) {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("17")) << got.status();
      continue;
    }
    ASSERT_OK(got.status());
    float want = 0;
    for (int64_t id : v) want += 11.0f * id;
    EXPECT_EQ((*got)[0].data<float>()[0], want) << "run " << run;
    EXPECT_EQ(stats.replayed, run >= 1) << "run " << run << ": " << plan->graph_summary();
    EXPECT_EQ(stats.captured, run == 1) << "run " << run;
    EXPECT_EQ(stats.ungraphed_device_steps, 0) << plan->graph_summary();
  }
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
