// The memory estimate (framework/estimate/memory_estimate.h): exact bytes of
// small programs, the canonical workloads' estimates against the
// allocators' measured peak of a steady-state step on cpu and sim:0 (and
// gpu:0 where there is one; within 10%), of two runs in flight, kernels'
// declared scratch, PlacementMemory against the placed program's estimate,
// and Prepare refusing plans that cannot fit a place.
#include <unistd.h>

#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <optional>
#include <random>

#include "framework/backward/optimizer.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/placement/placer.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "models/crop/crop_model.h"
#include "models/ctr/ctr_model.h"
#include "models/embedding/embedding_model.h"
#include "models/fashion_mnist/fashion_mnist_model.h"

namespace tandem {
namespace {

using ::testing::AllOf;

const Place kSim0 = *ParsePlace("sim:0");
const Place kSim1 = *ParsePlace("sim:1");

Allocator* AllocatorOf(const Place& place) {
  return (*DeviceRegistry::Global().GetDevice(place))->allocator();
}

// The allocators that hold what the estimate counts on `place`: a device's
// own; for the host, the CPU's and the device's pinned host allocator
// (CUDA's; sim's host allocator is the CPU's). A place's measured peak is
// the sum of their peaks.
struct Measured {
  Place place;
  std::vector<Allocator*> allocators;
  int64_t Peak() const {
    int64_t peak = 0;
    for (Allocator* a : allocators) peak += a->GetStats().peak_bytes_in_use;
    return peak;
  }
  void ResetPeaks() const {
    for (Allocator* a : allocators) a->ResetPeak();
  }
};
std::vector<Measured> MeasuredAllocators(const Place& place) {
  std::vector<Measured> m = {{CPUPlace(), {CpuAllocator::Default()}}};
  if (place.is_host()) return m;
  Device* device = *DeviceRegistry::Global().GetDevice(place);
  if (device->host_allocator() != CpuAllocator::Default()) {
    m[0].allocators.push_back(device->host_allocator());
  }
  m.push_back({place, {device->allocator()}});
  return m;
}

// cpu and sim:0, and gpu:0 where there is a GPU (the H200 run).
std::vector<Place> MeasuredPlaces() {
  std::vector<Place> places = {CPUPlace(), kSim0};
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0) places.push_back(GPUPlace(0));
  return places;
}

// x [4, 8] fed, w [8, 8] a parameter, y = matmul(x, w), z = scale(y), fetch z.
struct Matmul {
  ProgramBuilder b;
  Var z;
  Matmul(Shape x_shape = Shape({4, 8})) {
    Var x = b.Data("x", DataType::kFloat32, x_shape);
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({8, 8}));
    z = b.Scale(b.Matmul(x, w), 2.0);
  }
};

TEST(MemoryEstimate, ExactBytesOfASmallProgramOnADevice) {
  Matmul m;
  ASSERT_OK(m.b.status());
  Executor exe(kSim0, {.in_order = true});
  Scope scope;
  ASSERT_OK(exe.Run(m.b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(m.b.main_program(), scope, {"x"}, {m.z.name}));
  const MemoryEstimate& e = plan->MemoryEstimate();
  const PlaceMemory* sim = e.Find(kSim0);
  ASSERT_NE(sim, nullptr);
  // w (256 B) + x@sim:0 (128 B) + y (128 B) while matmul (#1) runs.
  EXPECT_EQ(sim->peak_bytes, 512);
  EXPECT_EQ(sim->peak_op, 1);
  EXPECT_EQ(sim->parameters, 256);
  EXPECT_EQ(sim->intermediates, 256);
  EXPECT_EQ(sim->persistables_at_start, 256);
  ASSERT_FALSE(sim->largest.empty());
  EXPECT_EQ(sim->largest[0].var, "w");
  // The host: the feed (128 B), then the fetched z copied back (128 B).
  const PlaceMemory* cpu = e.Find(CPUPlace());
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->peak_bytes, 256);
  EXPECT_EQ(cpu->feeds, 128);
  EXPECT_EQ(cpu->peak_op, 3);  // after the last op: the fetch
  EXPECT_TRUE(e.unknown_vars.empty());
  EXPECT_THAT(plan->PlacementTable(),
              AllOf(HasSubstr("memory estimate sim:0: peak 512 bytes (parameters 256 bytes"),
                    HasSubstr("at #1 'matmul'"), HasSubstr("memory estimate cpu: peak 256 bytes"),
                    HasSubstr("at the end (fetches)")));
}

TEST(MemoryEstimate, UnknownDimsTakeTheFeedShapesOrCountAsOne) {
  Matmul m(Shape({-1, 8}));
  ASSERT_OK(m.b.status());
  Scope scope;
  Executor startup(CPUPlace());
  ASSERT_OK(startup.Run(m.b.startup_program(), &scope).status());
  Executor unknown(CPUPlace());
  ASSERT_OK_AND_ASSIGN(auto lower, unknown.Prepare(m.b.main_program(), scope, {"x"}, {m.z.name}));
  EXPECT_THAT(lower->MemoryEstimate().unknown_vars, ::testing::Contains("x"));
  EXPECT_THAT(lower->PlacementTable(), HasSubstr("memory estimate is a lower bound"));
  Executor known(CPUPlace(), {.feed_shapes = {{"x", Shape({64, 8})}}});
  ASSERT_OK_AND_ASSIGN(auto plan, known.Prepare(m.b.main_program(), scope, {"x"}, {m.z.name}));
  EXPECT_TRUE(plan->MemoryEstimate().unknown_vars.empty());
  // w 256 + x 2048 + y 2048 + z 2048 while scale runs.
  EXPECT_EQ(plan->MemoryEstimate().PeakBytes(CPUPlace()), 256 + 3 * 2048);
}

TEST(MemoryEstimate, SparseGradientsHoldOneRowPerId) {
  EmbeddingConfig config;
  config.rows = 1000;
  config.dim = 16;
  config.batch = 8;
  config.is_sparse = true;
  config.table_on_cpu = true;
  ProgramBuilder b;
  ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
  Scope scope;
  Executor exe(kSim0, {.in_order = true});
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"ids"}, {m.loss.name}));
  const MemoryEstimate& e = plan->MemoryEstimate();
  bool found = false;
  for (const MemoryEstimate::Allocation& a : e.allocations) {
    if (a.var != "emb_w@GRAD") continue;
    EXPECT_EQ(a.bytes, 8 * 16 * 4);  // 8 rows of 16 floats, not the 1000-row table
    EXPECT_EQ(a.place, CPUPlace());
    found = true;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(e.Find(CPUPlace())->parameters, 1000 * 16 * 4);
}

// One workload: programs, feeds and fetches.
struct Workload {
  std::string name;
  ProgramBuilder builder;
  std::vector<std::string> fetches;
  FeedMap feeds;
  std::unique_ptr<Optimizer> optimizer;
};

std::unique_ptr<Workload> Crop(bool slice_on_cpu) {
  auto w = std::make_unique<Workload>();
  w->name = slice_on_cpu ? "crop, slice on cpu" : "crop";
  absl::StatusOr<Var> out = BuildCropModel(slice_on_cpu, &w->builder);
  CHECK(out.ok()) << out.status();
  w->fetches = {out->name};
  return w;
}

std::unique_ptr<Workload> Embedding(bool sparse, bool table_on_cpu) {
  auto w = std::make_unique<Workload>();
  w->name =
      absl::StrCat("embedding", sparse ? " sparse" : " dense", table_on_cpu ? ", cpu table" : "");
  EmbeddingConfig config;
  config.rows = 20000;
  config.dim = 32;
  config.batch = 64;
  config.is_sparse = sparse;
  config.table_on_cpu = table_on_cpu;
  absl::StatusOr<EmbeddingModel> m = BuildEmbeddingModel(config, &w->builder);
  CHECK(m.ok()) << m.status();
  std::vector<double> ids(config.batch);
  for (int64_t i = 0; i < config.batch; ++i) ids[i] = (i * 131) % config.rows;
  w->feeds = {{"ids", MakeTensor(DataType::kInt64, Shape({config.batch}), ids)}};
  w->fetches = {m->loss.name};
  return w;
}

std::unique_ptr<Workload> Ctr() {
  auto w = std::make_unique<Workload>();
  w->name = "ctr";
  CtrModelConfig config;
  config.vocab_sizes = {5000, 3000, 2000};
  config.embedding_dim = 16;
  config.hidden = {64, 32};
  w->optimizer = std::make_unique<Adam>(1e-3);
  absl::StatusOr<CtrModel> m = BuildCtrModel(config, w->optimizer.get(), &w->builder);
  CHECK(m.ok()) << m.status();
  const int64_t batch = 128;
  for (size_t f = 0; f < m->ids.size(); ++f) {
    std::vector<double> ids(batch);
    for (int64_t i = 0; i < batch; ++i) ids[i] = (i * 37 + f) % config.vocab_sizes[f];
    w->feeds[m->ids[f].name] = MakeTensor(DataType::kInt64, Shape({batch}), ids);
  }
  std::vector<double> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = i % 2;
  w->feeds[m->label.name] = MakeTensor(DataType::kInt64, Shape({batch}), labels);
  w->fetches = {m->loss.name};
  return w;
}

std::unique_ptr<Workload> FashionMnist(FashionMnistArch arch) {
  auto w = std::make_unique<Workload>();
  w->name = arch == FashionMnistArch::kMlp ? "fashion_mnist mlp" : "fashion_mnist cnn";
  FashionMnistConfig config;
  config.arch = arch;
  w->optimizer = std::make_unique<Adam>(1e-3);
  absl::StatusOr<FashionMnistModel> m =
      BuildFashionMnistModel(config, w->optimizer.get(), &w->builder);
  CHECK(m.ok()) << m.status();
  const int64_t batch = 16;
  std::vector<double> pixels(batch * 28 * 28), labels(batch);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = (i % 255) / 255.0;
  for (int64_t i = 0; i < batch; ++i) labels[i] = i % 10;
  w->feeds[m->image.name] = MakeTensor(DataType::kFloat32, Shape({batch, 28, 28}), pixels);
  w->feeds[m->label.name] = MakeTensor(DataType::kInt64, Shape({batch}), labels);
  w->fetches = {m->loss.name};
  return w;
}

// Each workload's maker: one at a time, so that only its feeds are in host memory.
std::vector<std::function<std::unique_ptr<Workload>()>> Workloads() {
  return {[] { return Crop(false); },
          [] { return Crop(true); },
          [] { return Embedding(false, true); },
          [] { return Embedding(true, true); },
          [] { return Embedding(true, false); },
          [] { return Ctr(); },
          [] { return FashionMnist(FashionMnistArch::kMlp); },
          [] { return FashionMnist(FashionMnistArch::kCnn); }};
}

TEST(MemoryEstimate, WithinTenPercentOfTheMeasuredPeakOfEveryWorkload) {
  for (const Place& place : MeasuredPlaces()) {
    for (bool in_order : {true, false}) {
      for (const auto& make : Workloads()) {
        const std::unique_ptr<Workload> w = make();
        SCOPED_TRACE(absl::StrCat(w->name, " on ", place.ToString(),
                                  in_order ? ", in order" : ", concurrent"));
        ExecutorOptions options;
        options.in_order = in_order;
        for (const auto& [name, t] : w->feeds) options.feed_shapes[name] = t.shape();
        Executor exe(place, options);
        Scope scope;
        ASSERT_OK(exe.Run(w->builder.startup_program(), &scope).status());
        std::vector<std::string> feeds;
        for (const auto& [name, t] : w->feeds) feeds.push_back(name);
        ASSERT_OK_AND_ASSIGN(auto plan,
                             exe.Prepare(w->builder.main_program(), scope, feeds, w->fetches));
        ASSERT_OK(exe.Run(plan.get(), &scope, w->feeds).status());  // warm-up: constants
        const std::vector<Measured> measured_places = MeasuredAllocators(place);
        for (const Measured& m : measured_places) m.ResetPeaks();
        ASSERT_OK(exe.Run(plan.get(), &scope, w->feeds).status());
        for (const Measured& m : measured_places) {
          const int64_t measured = m.Peak();
          const int64_t estimated = plan->MemoryEstimate().PeakBytes(m.place);
          SCOPED_TRACE(plan->PlacementTable());
          EXPECT_NEAR(static_cast<double>(estimated), static_cast<double>(measured),
                      0.1 * static_cast<double>(measured))
              << m.place.ToString() << ": estimated " << estimated << ", measured " << measured;
          std::cout << w->name << " on " << place.ToString()
                    << (in_order ? ", in order" : ", concurrent") << ": " << m.place.ToString()
                    << " estimated " << estimated << " B, measured " << measured << " B\n";
        }
      }
    }
  }
}

// Two runs in flight (Executor::RunAsync: a training loop that starts step
// n + 1 before it waits for step n, each step with new feed tensors): the
// pipelined estimate bounds the allocators' measured peak and is within 25%
// (plus 1 KiB) of it. It is the most the runs can hold over the orders the
// scheduler may run their steps in; a run usually overlaps less.
TEST(MemoryEstimate, PipelinedPeakBoundsTheMeasuredPeakOfTwoRunsInFlight) {
  for (const Place& place : MeasuredPlaces()) {
    for (const auto& make : Workloads()) {
      const std::unique_ptr<Workload> w = make();
      SCOPED_TRACE(absl::StrCat(w->name, " on ", place.ToString()));
      ExecutorOptions options;
      for (const auto& [name, t] : w->feeds) options.feed_shapes[name] = t.shape();
      Executor exe(place, options);
      Scope scope;
      ASSERT_OK(exe.Run(w->builder.startup_program(), &scope).status());
      std::vector<std::string> feeds;
      for (const auto& [name, t] : w->feeds) feeds.push_back(name);
      ASSERT_OK_AND_ASSIGN(auto plan,
                           exe.Prepare(w->builder.main_program(), scope, feeds, w->fetches));
      auto new_feeds = [&] {  // a data loader's: new tensors each step
        FeedMap f;
        for (const auto& [name, t] : w->feeds) f[name] = *CopyTensorTo(t, CPUPlace());
        return f;
      };
      std::deque<RunHandle> in_flight;
      const std::vector<Measured> measured_places = MeasuredAllocators(place);
      for (int step = 0; step < 10; ++step) {
        if (step == 4) {  // steady state: constants folded, both frames made
          for (const Measured& m : measured_places) m.ResetPeaks();
        }
        ASSERT_OK_AND_ASSIGN(RunHandle next, exe.RunAsync(plan.get(), &scope, new_feeds()));
        in_flight.push_back(std::move(next));
        if (in_flight.size() == 2) {
          ASSERT_OK(in_flight.front().Wait().status());
          in_flight.pop_front();
        }
      }
      ASSERT_OK(in_flight.front().Wait().status());
      for (const Measured& mp : measured_places) {
        const int64_t measured = mp.Peak();
        const PlaceMemory* m = plan->MemoryEstimate().Find(mp.place);
        ASSERT_NE(m, nullptr);
        SCOPED_TRACE(mp.place.ToString());
        // (Plus 64 bytes: crop's 16-byte host values outlive a run or not
        // as the two runs' steps happen to interleave.)
        EXPECT_LE(measured, m->pipelined_peak_bytes * 1.02 + 64);
        EXPECT_LE(m->pipelined_peak_bytes, measured * 1.25 + 1024);
        EXPECT_GE(m->pipelined_peak_bytes, m->peak_bytes);
        std::cout << w->name << " on " << place.ToString() << ", pipelined: " << mp.place.ToString()
                  << " estimated " << m->pipelined_peak_bytes << " B (one run " << m->peak_bytes
                  << " B), measured " << measured << " B\n";
      }
    }
  }
}

// A kernel's declared scratch (KernelDef::Scratch) counts while it runs:
// test_scratch on sim takes three times its input from the device's
// allocator and returns it when Compute returns.
REGISTER_OP("test_scratch")
    .Doc("Out = X, with 3 * bytes(X) of temporary device memory on sim.")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    });

class TestScratchKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor scratch, Tensor::Allocate(ctx->device()->allocator(), x->dtype(),
                                                      Shape({3, x->NumElements()})));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    // sim memory is host memory: copied here once the stream wrote X.
    RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
    std::memcpy(out->raw_data(), x->raw_data(), x->NumBytes());
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(KernelDef("test_scratch", "sim")
                    .Scratch([](const OpDesc&, const ArgMetas& in, const ArgMetas&) -> int64_t {
                      const TensorMeta* x = FirstMeta(in, "X");
                      return x == nullptr ? 0 : 3 * 4 * x->shape.num_elements();
                    }),
                TestScratchKernel);

TEST(MemoryEstimate, KernelScratchCountsWhileTheKernelRuns) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({64, 16}));  // 4 KiB
  Var y = b.AppendOp("test_scratch", {{"X", {x}}}, {}, {"Out"})["Out"][0];
  Var z = b.Scale(y, 2.0);
  ASSERT_OK(b.status());
  Executor exe(kSim0, {.in_order = true});
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {z.name}));
  const PlaceMemory* sim = plan->MemoryEstimate().Find(kSim0);
  ASSERT_NE(sim, nullptr);
  // x@sim:0 + Out + 12 KiB of scratch while test_scratch (#1) runs.
  EXPECT_EQ(sim->peak_bytes, 4096 * 5);
  EXPECT_EQ(sim->peak_op, 1);
  EXPECT_EQ(sim->scratch, 3 * 4096);
  ASSERT_FALSE(sim->largest.empty());
  EXPECT_EQ(sim->largest[0].var, "test_scratch#1 scratch");
  EXPECT_THAT(plan->PlacementTable(), HasSubstr("scratch 12.0 KiB)"));
  const FeedMap feeds = {
      {"x", MakeTensor(DataType::kFloat32, Shape({64, 16}), std::vector<double>(1024, 1.0))}};
  ASSERT_OK(exe.Run(plan.get(), &scope, feeds).status());
  AllocatorOf(kSim0)->ResetPeak();
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, feeds));
  EXPECT_EQ(ToDoubles(out[0]), std::vector<double>(1024, 2.0));
  EXPECT_EQ(AllocatorOf(kSim0)->GetStats().peak_bytes_in_use, sim->peak_bytes);
}

// A kernel's own pinned buffer (KernelDef::HostStaging, a CUDA kernel's
// KernelStaging): test_host_staging on sim keeps 8 bytes per element of X in
// host memory from its first run on; the estimate counts it on the host from
// the start, once with two runs in flight, and the host allocator agrees.
REGISTER_OP("test_host_staging")
    .Doc("Out = X, keeping 8 * elements(X) bytes of host memory in the kernel on sim.")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    });

class TestHostStagingKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    if (!staging_.has_value()) {
      ASSIGN_OR_RETURN(staging_, Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64,
                                                  Shape({x->NumElements()})));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
    std::memcpy(out->raw_data(), x->raw_data(), x->NumBytes());
    return absl::OkStatus();
  }

 private:
  std::optional<Tensor> staging_;
};

REGISTER_KERNEL(KernelDef("test_host_staging", "sim")
                    .HostStaging([](const OpDesc&, const ArgMetas& in, const ArgMetas&) -> int64_t {
                      const TensorMeta* x = FirstMeta(in, "X");
                      return x == nullptr ? 0 : 8 * x->shape.num_elements();
                    }),
                TestHostStagingKernel);

TEST(MemoryEstimate, KernelHostStagingCountsOnTheHostOnce) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({64, 16}));  // 4 KiB fed
  Var y = b.AppendOp("test_host_staging", {{"X", {x}}}, {}, {"Out"})["Out"][0];
  Var z = b.Scale(y, 2.0);
  ASSERT_OK(b.status());
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {z.name}));
  const PlaceMemory* host = plan->MemoryEstimate().Find(CPUPlace());
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->staging, 8 * 1024);
  // The feed, the 8 KiB kept by the kernel and z's host copy (4 KiB).
  EXPECT_EQ(host->peak_bytes, 4096 + 8192 + 4096);
  // Two runs in flight: two feeds and two fetched copies, one kernel
  // buffer, and the next run's feed with RunAsync's copy of it.
  EXPECT_EQ(host->pipelined_peak_bytes - host->peak_bytes, 4096 + 4096 + 4096 + 4096);
  const FeedMap feeds = {
      {"x", MakeTensor(DataType::kFloat32, Shape({64, 16}), std::vector<double>(1024, 1.0))}};
  ASSERT_OK(exe.Run(plan.get(), &scope, feeds).status());
  const int64_t before = CpuAllocator::Default()->GetStats().bytes_in_use;
  CpuAllocator::Default()->ResetPeak();
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, feeds));
  EXPECT_EQ(ToDoubles(out[0]), std::vector<double>(1024, 2.0));
  // Measured beside what was in use before the run: the feed (the caller's,
  // in use already) and the kernel's buffer are `before`; z's copy is new.
  EXPECT_EQ(CpuAllocator::Default()->GetStats().peak_bytes_in_use - before, 4096);
  EXPECT_GE(before, 4096 + 8192);
}

// The CUDA kernels' declared scratch (KernelDef::Scratch, backends/cuda):
// programs whose steps take some, each estimated in order on gpu:0 to the
// allocator's measured peak (within 1% and 64 bytes: mean keeps a 4-byte
// block counter of its own). Without a GPU: skipped.
TEST(MemoryEstimate, GpuKernelScratchIsInTheEstimate) {
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) == 0) {
    GTEST_SKIP() << "no GPU";
  }
  struct Case {
    std::string name;
    std::function<absl::StatusOr<Var>(ProgramBuilder*)> build;  // the loss
    FeedMap feeds;
  };
  auto ramp = [](DataType dtype, const Shape& shape, int64_t mod) {
    std::vector<double> v(shape.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % mod) / mod;
    return MakeTensor(dtype, shape, v);
  };
  auto ids = [](int64_t n, int64_t rows) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = (i * 37) % rows;
    return MakeTensor(DataType::kInt64, Shape({n}), v);
  };
  std::vector<Case> cases;
  cases.push_back({"layer_norm (its gradient's partial column sums)",
                   [](ProgramBuilder* b) -> absl::StatusOr<Var> {
                     Var x = b->Data("x", DataType::kFloat32, Shape({64, 256}));
                     return b->Mean(b->LayerNorm(x));
                   },
                   {{"x", ramp(DataType::kFloat32, Shape({64, 256}), 97)}}});
  cases.push_back({"matmul of a shared X and a batched Y (X@GRAD's products)",
                   [](ProgramBuilder* b) -> absl::StatusOr<Var> {
                     Var w = b->CreateParameter("w", DataType::kFloat32, Shape({32, 64}));
                     Var y = b->Data("y", DataType::kFloat32, Shape({8, 64, 16}));
                     return b->Mean(b->Matmul(w, y));
                   },
                   {{"y", ramp(DataType::kFloat32, Shape({8, 64, 16}), 31)}}});
  cases.push_back({"elementwise_mul broadcast (the unreduced gradient)",
                   [](ProgramBuilder* b) -> absl::StatusOr<Var> {
                     Var x = b->Data("x", DataType::kFloat32, Shape({64, 128}));
                     Var w = b->CreateParameter("w", DataType::kFloat32, Shape({128}));
                     return b->Mean(b->ElementwiseMul(x, w));
                   },
                   {{"x", ramp(DataType::kFloat32, Shape({64, 128}), 13)}}});
  cases.push_back({"conv2d (im2col columns)",
                   [](ProgramBuilder* b) -> absl::StatusOr<Var> {
                     Var x = b->Data("x", DataType::kFloat32, Shape({4, 3, 16, 16}));
                     return b->Mean(b->Conv2D(x, 8, 3, 1, 1));
                   },
                   {{"x", ramp(DataType::kFloat32, Shape({4, 3, 16, 16}), 17)}}});
  for (bool sparse : {true, false}) {
    cases.push_back({sparse
                         ? "sparse embedding, 256 ids (sgd's uploaded rows and grouping workspace)"
                         : "dense embedding (the gradient's uploaded ids)",
                     [sparse](ProgramBuilder* b) -> absl::StatusOr<Var> {
                       Var i = b->Data("ids", DataType::kInt64, Shape({256}));
                       return b->Mean(b->Embedding(i, {1000, 32}, sparse));
                     },
                     {{"ids", ids(256, 1000)}}});
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].name);
    ProgramBuilder b;
    ASSERT_OK_AND_ASSIGN(Var loss, cases[c].build(&b));
    ASSERT_OK(SGD(0.1).Minimize(&b, loss));
    ExecutorOptions options;
    options.in_order = true;
    Executor exe(GPUPlace(0), options);
    Scope scope;
    ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
    std::vector<std::string> feeds;
    for (const auto& [name, t] : cases[c].feeds) feeds.push_back(name);
    ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, feeds, {loss.name}));
    ASSERT_OK(exe.Run(plan.get(), &scope, cases[c].feeds).status());
    AllocatorOf(GPUPlace(0))->ResetPeak();
    ASSERT_OK(exe.Run(plan.get(), &scope, cases[c].feeds).status());
    const int64_t measured = AllocatorOf(GPUPlace(0))->GetStats().peak_bytes_in_use;
    const PlaceMemory* gpu = plan->MemoryEstimate().Find(GPUPlace(0));
    ASSERT_NE(gpu, nullptr);
    int64_t scratch = 0;  // declared by the plan's kernels, at any op
    for (const MemoryEstimate::Allocation& a : plan->MemoryEstimate().allocations) {
      if (a.var.find(" scratch") != std::string::npos) scratch += a.bytes;
    }
    EXPECT_GT(scratch, 0);
    EXPECT_NEAR(static_cast<double>(gpu->peak_bytes), static_cast<double>(measured),
                0.01 * measured + 64)
        << plan->PlacementTable();
    std::cout << cases[c].name << ": estimated " << gpu->peak_bytes << " B (scratch "
              << gpu->scratch << " B at the peak, " << scratch << " B declared), measured "
              << measured << " B\n";
  }
}

// PlacementMemory (the auto placement's estimate of a placement without
// placing it) gives EstimateMemory's walk of the placed program: every
// workload with ops pinned at random to cpu, sim:0 and sim:1 (device to
// device copies through the host), with and without staged uploads.
TEST(PlacementMemory, EqualsTheEstimateOfThePlacedProgram) {
  std::mt19937 random(11);
  int placements = 0, copies = 0;
  for (const auto& make : Workloads()) {
    const std::unique_ptr<Workload> w = make();
    Scope scope;
    ASSERT_OK(Executor(kSim0).Run(w->builder.startup_program(), &scope).status());
    std::vector<std::string> feeds;
    std::map<std::string, Shape> feed_shapes;
    for (const auto& [name, t] : w->feeds) {
      feeds.push_back(name);
      feed_shapes[name] = t.shape();
    }
    for (int trial = 0; trial < 6; ++trial) {
      SCOPED_TRACE(absl::StrCat(w->name, ", trial ", trial));
      Program program = w->builder.main_program();
      for (OpDesc& op : program.block().mutable_ops()) {
        const int pick = std::uniform_int_distribution<int>(0, 5)(random);
        op.op_device = trial == 0 ? "" : pick < 2 ? "cpu" : pick == 2 ? "sim:1" : "sim:0";
      }
      PlacerOptions popts;
      popts.default_place = kSim0;
      for (const auto& [name, t] : w->feeds) popts.initial_places[name] = CPUPlace();
      for (const VarDesc& v : program.block().vars()) {
        const Variable* var = scope.Find(v.name);
        if (var != nullptr && var->data_tensor() != nullptr && var->data_tensor()->initialized())
          popts.initial_places[v.name] = var->data_tensor()->place();
      }
      ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(program, popts));
      MemoryEstimateOptions options =
          PlanMemoryOptions(placed, feeds, w->fetches, feed_shapes, /*in_order=*/trial % 2 == 0);
      if (trial >= 4) options.staged_upload_devices = {kSim0, kSim1};
      ASSERT_OK_AND_ASSIGN(MemoryEstimate exact, EstimateMemory(placed, options));
      const int n = static_cast<int>(program.block().ops().size());
      std::vector<Place> places(n);
      std::vector<const KernelRegistration*> kernels(n);
      for (size_t i = 0; i < placed.source_ops.size(); ++i) {
        if (placed.source_ops[i] < 0) continue;
        places[placed.source_ops[i]] = placed.places[i];
        kernels[placed.source_ops[i]] = placed.kernels[i];
      }
      PlacementMemory model(program, options, ResolveArgMetas(program, feed_shapes));
      const MemoryWalkResult& walk = model.Estimate(places, kernels, placed.initial_places);
      for (const PlaceMemory& p : exact.places) {
        SCOPED_TRACE(p.place.ToString());
        const int slot = model.Slot(p.place);
        ASSERT_GE(slot, 0);
        EXPECT_EQ(walk.peak[slot].bytes, p.peak_bytes);
        EXPECT_EQ(walk.peak[slot].op, p.peak_op);
        EXPECT_EQ(walk.live_after_alloc[slot], p.live_after_alloc);
        std::vector<LiveValue> largest;
        for (const MemoryWalkResult::Value& v : walk.values) {
          if (v.place == slot && v.live_at(p.peak_op))
            largest.push_back({model.Name(v.var), v.bytes});
        }
        std::stable_sort(largest.begin(), largest.end(),
                         [](const LiveValue& a, const LiveValue& b) { return a.bytes > b.bytes; });
        ASSERT_EQ(largest.size(), p.largest.size());
        for (size_t k = 0; k < largest.size(); ++k) {
          EXPECT_EQ(largest[k].var, p.largest[k].var);
          EXPECT_EQ(largest[k].bytes, p.largest[k].bytes);
        }
      }
      ++placements;
      copies += placed.num_copies;
    }
  }
  EXPECT_EQ(placements, 48);
  EXPECT_GT(copies, 500);  // the placements exercise the copies
}

TEST(MemoryEstimate, PrepareRefusesAPlanThatCannotFitADevice) {
  Allocator* sim1 = AllocatorOf(kSim1);
  sim1->SetBytesLimit(1 << 20);
  ProgramBuilder b;
  Var big = b.FillConstant({512, 1024}, DataType::kFloat32, 1.0);  // 2 MiB
  Var out = b.Scale(big, 2.0);
  ASSERT_OK(b.status());
  Executor exe(kSim1);
  Scope scope;
  const int64_t before = sim1->GetStats().bytes_in_use;
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {}, {out.name}).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("op 'fill_constant' (#0) output 'Out' (variable '"),
                             HasSubstr("float32[512, 1024]) on sim:1"),
                             HasSubstr("requested 2097152 bytes (2.0 MiB)"),
                             HasSubstr("limit 1048576 bytes (1.0 MiB)"),
                             HasSubstr("refused at Prepare"), HasSubstr("device_guard(\"cpu\")"))));
  EXPECT_EQ(sim1->GetStats().bytes_in_use, before);  // nothing was allocated
  sim1->SetBytesLimit(0);
  EXPECT_OK(exe.Prepare(b.main_program(), scope, {}, {out.name}).status());
}

TEST(MemoryEstimate, PrepareRefusesAPlanThatCannotFitTheHost) {
  const int64_t host = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  ASSERT_GT(host, 0);
  // Three values of 40% of the host each, all fetched: each fits, together not.
  const int64_t rows = host * 2 / 5 / 4 / 1024;
  ProgramBuilder b;
  std::vector<std::string> fetches;
  for (int i = 0; i < 3; ++i)
    fetches.push_back(b.FillConstant({rows, 1024}, DataType::kFloat32, 1.0).name);
  ASSERT_OK(b.status());
  Executor exe(CPUPlace());
  Scope scope;
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {}, fetches).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("op 'fill_constant' (#2)"), HasSubstr("on cpu"),
                             HasSubstr(absl::StrCat("requested ", rows * 4096, " bytes")),
                             HasSubstr("the host cannot hold it"))));
}

}  // namespace
}  // namespace tandem
