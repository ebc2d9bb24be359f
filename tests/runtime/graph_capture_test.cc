// Executor graph capture (ExecutorOptions::capture_graphs) on a fake
// capturing device, "capdev:0", defined here. Like a CUDA stream, its
// stream runs enqueued work at once but records it while capturing (a
// kernel's work is a closure over pointers and values, as a launch holds its
// arguments); synchronous copies and stream synchronisations while capturing
// fail and spoil the capture, as they do with CUDA. Its memory knows which
// blocks are live, so a replay touching freed memory is counted.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAreArray;

using Work = std::function<void()>;

class CapStream final : public Stream {
 public:
  void Enqueue(Work work) {
    if (recording_ != nullptr) {
      recording_->push_back(std::move(work));
    } else {
      work();
    }
  }
  std::vector<Work>* recording_ = nullptr;
};

class CapEvent final : public Event {};

class CapGraph final : public DeviceGraph {
 public:
  CapGraph(std::vector<Work> work, int* launches) : work_(std::move(work)), launches_(launches) {}
  absl::Status Launch(Stream* stream) override {
    ++*launches_;
    for (const Work& w : work_) static_cast<CapStream*>(stream)->Enqueue(w);
    return absl::OkStatus();
  }

 private:
  std::vector<Work> work_;
  int* launches_;
};

class CapAllocator final : public Allocator {
 public:
  explicit CapAllocator(Place place) : place_(place) {}
  std::string Name() const override { return "capdev"; }
  Place place() const override { return place_; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    void* p = ::operator new(bytes + 64);
    live_.insert(p);
    ++allocs_;
    return p;
  }
  void Deallocate(void* ptr, size_t bytes) override {
    live_.erase(ptr);
    ::operator delete(ptr);
  }
  AllocatorStats GetStats() const override { return {}; }
  void SetBytesLimit(int64_t) override {}
  void ResetPeak() override {}  // keeps no statistics

  bool Live(const void* p) const { return live_.count(const_cast<void*>(p)) > 0; }
  int64_t allocs() const { return allocs_; }

 private:
  const Place place_;
  std::set<void*> live_;
  int64_t allocs_ = 0;
};

class CapDevice final : public Device {
 public:
  explicit CapDevice(Place place) : place_(place), memory_(place) {}
  Place place() const override { return place_; }
  std::string Description() const override { return "fake capturing device"; }
  Allocator* allocator() override { return &memory_; }
  Allocator* host_allocator() override { return CpuAllocator::Default(); }
  Stream* compute_stream() override { return &stream_; }
  Stream* copy_stream() override { return &stream_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return absl::UnimplementedError("one stream");
  }
  // The stream runs work as it is enqueued: an event is complete once
  // recorded, and waiting for it has nothing to do.
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override {
    return std::unique_ptr<Event>(std::make_unique<CapEvent>());
  }
  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(NotCapturing("Copy"));
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* stream) override {
    const void* device_side = kind == CopyKind::kHostToDevice ? dst : src;
    Enqueue({device_side}, [=] { std::memcpy(dst, src, bytes); });
    return absl::OkStatus();
  }
  absl::Status BeginCapture(Stream* stream) override {
    recorded_.clear();
    spoiled_ = false;
    stream_.recording_ = &recorded_;
    ++captures_;
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(Stream* stream) override {
    stream_.recording_ = nullptr;
    if (spoiled_) return absl::FailedPreconditionError("the capture was invalidated");
    return std::unique_ptr<DeviceGraph>(
        std::make_unique<CapGraph>(std::move(recorded_), &launches_));
  }
  absl::Status RecordEvent(Event*, Stream*) override { return absl::OkStatus(); }
  absl::Status StreamWaitEvent(Stream*, Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeEvent(Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeStream(Stream*) override { return NotCapturing("SynchronizeStream"); }
  absl::Status Synchronize() override { return NotCapturing("Synchronize"); }

  // Enqueues `work`, which reads and writes the device memory at `ptrs`.
  void Enqueue(std::vector<const void*> ptrs, Work work) {
    stream_.Enqueue([this, ptrs, work] {
      for (const void* p : ptrs) dead_accesses_ += memory_.Live(p) ? 0 : 1;
      work();
    });
  }

  int captures() const { return captures_; }
  int launches() const { return launches_; }
  int dead_accesses() const { return dead_accesses_; }
  int64_t allocs() const { return memory_.allocs(); }

 private:
  absl::Status NotCapturing(const char* what) {
    if (stream_.recording_ == nullptr) return absl::OkStatus();
    spoiled_ = true;
    return absl::FailedPreconditionError(absl::StrCat(what, " while capturing"));
  }

  const Place place_;
  CapAllocator memory_;
  CapStream stream_;
  std::vector<Work> recorded_;
  bool spoiled_ = false;
  int captures_ = 0, launches_ = 0, dead_accesses_ = 0;
};

class CapFactory final : public DeviceFactory {
 public:
  int DeviceCount() override { return 1; }
  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    return std::unique_ptr<Device>(std::make_unique<CapDevice>(Place(CapType(), index)));
  }
  static DeviceType CapType() {
    static const DeviceType type = DeviceType::Register("capdev", "CapPlace");
    return type;
  }
};

const DeviceFactoryRegistrar cap_registrar("capdev", "CapPlace", std::make_unique<CapFactory>());

CapDevice* Cap() {
  return static_cast<CapDevice*>(
      *DeviceRegistry::Global().GetDevice(Place(CapFactory::CapType(), 0)));
}

// Kernels of capdev: float32 only, work enqueued on the device's stream.
class FillKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(value_, GetAttr<double>(op.attrs, "value", op.type));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext* ctx) override {
    RETURN_IF_ERROR(ctx->AllocateInferredOutputs());
    Tensor* out = ctx->OutputVar("Out")->mutable_tensor();
    float* o = out->data<float>();
    const int64_t n = out->NumElements();
    const float v = static_cast<float>(value_);
    Cap()->Enqueue({o}, [=] { std::fill(o, o + n, v); });
    return absl::OkStatus();
  }

 private:
  double value_ = 0;
};

class ScaleKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(scale_, GetAttr<double>(op.attrs, "scale", op.type));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const float* in = x->data<float>();
    float* o = out->data<float>();
    const int64_t n = x->NumElements();
    const float s = static_cast<float>(scale_);
    Cap()->Enqueue({in, o}, [=] {
      for (int64_t i = 0; i < n; ++i) o[i] = s * in[i];
    });
    return absl::OkStatus();
  }

 private:
  double scale_ = 1;
};

class AddKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const float* a = x->data<float>();
    const float* b = y->data<float>();
    float* o = out->data<float>();
    const int64_t n = x->NumElements();
    Cap()->Enqueue({a, b, o}, [=] {
      for (int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
    });
    return absl::OkStatus();
  }
};

// Param -= lr * Grad in place; lr read on the host at launch time, as a
// CUDA kernel argument.
class SgdKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* param, ctx->InputTensor("Param"));
    const Variable* grad_var = ctx->InputVar("Grad");
    const bool sparse = grad_var != nullptr && grad_var->is_selected_rows();
    const Tensor* grad = sparse ? &grad_var->selected_rows().value() : nullptr;
    if (!sparse) {
      ASSIGN_OR_RETURN(grad, ctx->InputTensor("Grad"));
    }
    ASSIGN_OR_RETURN(const Tensor* lr, ctx->InputTensor("LearningRate"));
    float* p = param->data<float>();
    const float* g = grad->data<float>();
    const float rate = lr->data<float>()[0];
    ctx->Report("learning_rate", rate);  // host code: runs eagerly and at capture
    const int64_t n = param->NumElements();
    if (sparse) {
      // The row list is host data the launch holds, as a CUDA kernel's
      // uploaded row list.
      const std::vector<int64_t> rows = grad_var->selected_rows().rows();
      const int64_t dim = rows.empty() ? 0 : grad->NumElements() / rows.size();
      Cap()->Enqueue({p, g}, [=] {
        for (size_t i = 0; i < rows.size(); ++i) {
          for (int64_t j = 0; j < dim; ++j) p[rows[i] * dim + j] -= rate * g[i * dim + j];
        }
      });
      return ctx->SetOutput("ParamOut", *param);
    }
    Cap()->Enqueue({p, g}, [=] {
      for (int64_t i = 0; i < n; ++i) p[i] -= rate * g[i];
    });
    return ctx->SetOutput("ParamOut", *param);
  }
};

// Out = sum(X) / n, but validates X on the host first (a synchronous read,
// like a kernel checking ids): it cannot be captured.
class MeanKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    std::vector<float> host(x->NumElements());
    RETURN_IF_ERROR(
        ctx->device()->Copy(CopyKind::kDeviceToHost, host.data(), x->raw_data(), x->NumBytes()));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), Shape({1})));
    const float* in = x->data<float>();
    float* o = out->data<float>();
    const int64_t n = x->NumElements();
    Cap()->Enqueue({in, o}, [=] {
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += in[i];
      o[0] = sum / n;
    });
    return absl::OkStatus();
  }
};

// Out = X's shape, written on the host (a host-memory output): the step
// runs eagerly between graph launches.
class ShapeKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->AllocateOutput("Out", DataType::kInt32, Shape({x->shape().rank()})));
    for (int d = 0; d < x->shape().rank(); ++d) {
      out->data<int32_t>()[d] = static_cast<int32_t>(x->shape().dim(d));
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(KernelDef("fill_constant", "capdev"), FillKernel);
REGISTER_KERNEL(KernelDef("shape", "capdev").HostMemory("Out"), ShapeKernel);
REGISTER_KERNEL(KernelDef("scale", "capdev"), ScaleKernel);
REGISTER_KERNEL(KernelDef("elementwise_add", "capdev"), AddKernel);
REGISTER_KERNEL(KernelDef("sgd", "capdev").HostMemory("LearningRate"), SgdKernel);
REGISTER_KERNEL(KernelDef("mean", "capdev"), MeanKernel);

Place CapPlace() { return Place(CapFactory::CapType(), 0); }

Tensor Floats(std::vector<float> v) {
  return Tensor::FromVector<float>(Shape({static_cast<int64_t>(v.size())}), v);
}

std::vector<float> Values(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.NumElements());
}

// The values of variable `name` of `scope`, wherever it lives.
std::vector<float> ValuesOf(Scope& scope, const std::string& name) {
  return Values(*CopyTensorTo(scope.Var(name)->tensor(), CPUPlace()));
}

std::vector<float> Feed(int step, int n = 4) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.25f * (step + 1) + i;
  return v;
}

// x -> z = 2x + w (+ mean(z) when `with_mean`), then w -= lr * z: a
// training-like step whose parameter changes every run.
struct Model {
  explicit Model(bool with_mean = false, bool host_scale = false) {
    Var x = b.Data("x", DataType::kFloat32, Shape({4}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({4}), Initializer::Constant(0.5));
    {
      auto host = b.device_guard("cpu");  // read by sgd as a HostMemory argument
      b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.125);
    }
    Var y;
    if (host_scale) {
      auto guard = b.device_guard("cpu");
      y = b.Scale(x, 2.0);
    } else {
      y = b.Scale(x, 2.0);
    }
    z = b.ElementwiseAdd(y, w);
    if (with_mean) fetches.push_back(b.Mean(z).name);
    OpDesc sgd;
    sgd.type = "sgd";
    sgd.inputs = {{"Param", {w.name}}, {"Grad", {z.name}}, {"LearningRate", {"lr"}}};
    sgd.outputs = {{"ParamOut", {w.name}}};
    b.main_program().block().AppendOp(std::move(sgd));
    fetches.insert(fetches.begin(), z.name);
  }
  ProgramBuilder b;
  Var z;
  std::vector<std::string> fetches;
};

// One executor, scope and plan over a Model.
struct Runner {
  Runner(Model* m, bool capture) {
    ExecutorOptions options;
    options.capture_graphs = capture;
    exe = std::make_unique<Executor>(CapPlace(), options);
    EXPECT_OK(m->b.status());
    EXPECT_OK(exe->Run(m->b.startup_program(), &scope).status());
    plan = *exe->Prepare(m->b.main_program(), scope, {"x"}, m->fetches);
  }
  std::vector<Tensor> Step(const std::vector<float>& x, RunStats* stats) {
    absl::StatusOr<std::vector<Tensor>> out =
        exe->Run(plan.get(), &scope, {{"x", Floats(x)}}, stats);
    EXPECT_OK(out.status());
    return out.ok() ? *out : std::vector<Tensor>();
  }
  std::vector<float> W() { return ValuesOf(scope, "w"); }

  std::unique_ptr<Executor> exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
};

TEST(GraphCaptureTest, ReplaysMatchEagerRunsWithNewFeedsEachStep) {
  Model m;
  Runner eager(&m, false), graph(&m, true);
  const int captures = Cap()->captures(), launches = Cap()->launches();
  for (int step = 0; step < 20; ++step) {
    RunStats es, gs;
    std::vector<Tensor> e = eager.Step(Feed(step), &es);
    std::vector<Tensor> g = graph.Step(Feed(step), &gs);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    EXPECT_EQ(gs.captured, step == 1) << "step " << step;
    EXPECT_EQ(gs.replayed, step >= 1) << "step " << step;
    EXPECT_FALSE(es.replayed);
    // The graph's copies and ops are the plan's: they happen inside it.
    EXPECT_EQ(gs.copies_h2d, es.copies_h2d);
    EXPECT_EQ(gs.copies_h2d, 1);
    EXPECT_EQ(gs.ops, es.ops);
    EXPECT_EQ(gs.ledger.size(), es.ledger.size());
    EXPECT_EQ(gs.fetch_copies, 1);
    // Kernels' reports come from their host code: a replay has none.
    EXPECT_EQ(es.reports.count("learning_rate"), 1u);
    EXPECT_EQ(gs.reports.count("learning_rate"), step <= 1 ? 1u : 0u) << "step " << step;
  }
  EXPECT_EQ(Cap()->captures() - captures, 1);
  EXPECT_EQ(Cap()->launches() - launches, 19);
  EXPECT_EQ(Cap()->dead_accesses(), 0);
  EXPECT_TRUE(graph.plan->graph_fallback_reason().empty());
  // The parameter moved: the replays updated it.
  EXPECT_NE(graph.W()[0], 0.5f);
}

TEST(GraphCaptureTest, ReplaysAllocateNoDeviceMemory) {
  Model m;
  Runner graph(&m, true);
  RunStats stats;
  graph.Step(Feed(0), &stats);
  graph.Step(Feed(1), &stats);
  const int64_t allocs = Cap()->allocs();
  for (int step = 2; step < 6; ++step) graph.Step(Feed(step), &stats);
  EXPECT_TRUE(stats.replayed);
  EXPECT_EQ(Cap()->allocs(), allocs);
}

TEST(GraphCaptureTest, ChangedLearningRateIsCapturedAgain) {
  Model m;
  Runner eager(&m, false), graph(&m, true);
  const int captures = Cap()->captures();
  for (int step = 0; step < 6; ++step) {
    if (step == 4) {
      for (Runner* r : {&eager, &graph})
        r->scope.Var("lr")->mutable_tensor()->data<float>()[0] = 0.5f;
    }
    RunStats es, gs;
    std::vector<Tensor> e = eager.Step(Feed(step), &es);
    std::vector<Tensor> g = graph.Step(Feed(step), &gs);
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    EXPECT_EQ(gs.captured, step == 1 || step == 4) << "step " << step;
  }
  EXPECT_EQ(Cap()->captures() - captures, 2);
}

TEST(GraphCaptureTest, ChangedFeedShapeIsCapturedAgain) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1}));
  Var y = b.Scale(x, 3.0);
  ExecutorOptions options;
  options.capture_graphs = true;
  Executor exe(CapPlace(), options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {y.name}));
  const std::vector<std::vector<float>> feeds = {{1, 2}, {3, 4}, {5, 6}, {1, 2, 3}, {4, 5, 6}};
  const std::vector<bool> captured = {false, true, false, true, false};
  for (size_t i = 0; i < feeds.size(); ++i) {
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(auto out, exe.Run(plan.get(), &scope, {{"x", Floats(feeds[i])}}, &stats));
    std::vector<float> want;
    for (float v : feeds[i]) want.push_back(3 * v);
    EXPECT_THAT(Values(out[0]), ElementsAreArray(want)) << "run " << i;
    EXPECT_EQ(stats.captured, captured[i]) << "run " << i;
    EXPECT_EQ(stats.replayed, i >= 1) << "run " << i;
  }
}

TEST(GraphCaptureTest, MixedStepLaunchesItsDeviceSegmentBetweenHostSteps) {
  Model m(/*with_mean=*/false, /*host_scale=*/true);
  Runner eager(&m, false), graph(&m, true);
  const int captures = Cap()->captures(), launches = Cap()->launches();
  for (int step = 0; step < 8; ++step) {
    RunStats es, gs;
    std::vector<Tensor> e = eager.Step(Feed(step), &es);
    std::vector<Tensor> g = graph.Step(Feed(step), &gs);
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    EXPECT_EQ(gs.captured, step == 1) << "step " << step;
    EXPECT_EQ(gs.replayed, step >= 1) << "step " << step;
    // The host scale runs eagerly; the copy up, the add and the sgd are one launch.
    EXPECT_EQ(gs.graph_launches, step >= 1 ? 1 : 0) << "step " << step;
    EXPECT_EQ(gs.ungraphed_device_steps, 0) << "step " << step;
    EXPECT_EQ(gs.ops, es.ops);
    EXPECT_EQ(gs.copies_h2d, es.copies_h2d);
  }
  EXPECT_EQ(Cap()->captures() - captures, 1);
  EXPECT_EQ(Cap()->launches() - launches, 7);
  EXPECT_EQ(Cap()->dead_accesses(), 0);
  EXPECT_EQ(graph.plan->graph_fallback_reason(), "");
  EXPECT_EQ(graph.plan->graph_summary(), "1 graph segment (#1-#3 on capdev:0)");
}

TEST(GraphCaptureTest, KernelReadingDeviceValuesOnTheHostRunsEagerlyBetweenTwoSegments) {
  Model m(/*with_mean=*/true);
  Runner eager(&m, false), graph(&m, true);
  const int captures = Cap()->captures();
  for (int step = 0; step < 5; ++step) {
    RunStats es, gs;
    std::vector<Tensor> e = eager.Step(Feed(step), &es);
    std::vector<Tensor> g = graph.Step(Feed(step), &gs);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(Values(g[1]), ElementsAreArray(Values(e[1]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    EXPECT_EQ(gs.replayed, step >= 1);
    EXPECT_EQ(gs.graph_launches, step >= 1 ? 2 : 0) << "step " << step;
    EXPECT_EQ(gs.ungraphed_device_steps, step >= 1 ? 1 : 0) << "step " << step;
    EXPECT_EQ(gs.ops, es.ops);
  }
  // Step 1: the whole step's capture failed at 'mean', then its two sides.
  EXPECT_EQ(Cap()->captures() - captures, 3);
  EXPECT_EQ(graph.plan->graph_fallback_reason(), "");
  EXPECT_EQ(graph.plan->graph_summary(),
            "2 graph segments (#0-#2 on capdev:0, #4 on capdev:0); device steps run eagerly: "
            "#3 'mean': op 'mean' (#3) on capdev:0: Copy while capturing");
}

// x (fed) -> y = 2x on capdev -> h = 3y + 1 on cpu -> z = h + w on capdev,
// w -= lr * z: device work, a copy down, a host kernel, a copy up, device
// work: two segments, the first copying down what the host step reads.
struct RoundTrip {
  RoundTrip() {
    Var x = b.Data("x", DataType::kFloat32, Shape({-1}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({4}), Initializer::Constant(0.5));
    {
      auto host = b.device_guard("cpu");
      b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.125);
    }
    Var y = b.Scale(x, 2.0);
    Var h;
    {
      auto host = b.device_guard("cpu");
      h = b.Scale(y, 3.0, 1.0);
    }
    Var z = b.ElementwiseAdd(h, w);
    OpDesc sgd;
    sgd.type = "sgd";
    sgd.inputs = {{"Param", {w.name}}, {"Grad", {z.name}}, {"LearningRate", {"lr"}}};
    sgd.outputs = {{"ParamOut", {w.name}}};
    b.main_program().block().AppendOp(std::move(sgd));
    fetches = {h.name, z.name};
  }
  ProgramBuilder b;
  std::vector<std::string> fetches;
};

struct RoundTripRunner {
  explicit RoundTripRunner(bool capture) {
    ExecutorOptions options;
    options.capture_graphs = capture;
    exe = std::make_unique<Executor>(CapPlace(), options);
    EXPECT_OK(m.b.status());
    EXPECT_OK(exe->Run(m.b.startup_program(), &scope).status());
    plan = *exe->Prepare(m.b.main_program(), scope, {"x"}, m.fetches);
  }
  absl::StatusOr<std::vector<Tensor>> Step(const std::vector<float>& x, RunStats* stats) {
    return exe->Run(plan.get(), &scope, {{"x", Floats(x)}}, stats);
  }
  std::vector<float> W() { return ValuesOf(scope, "w"); }

  RoundTrip m;
  std::unique_ptr<Executor> exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
};

TEST(GraphCaptureTest, ValuesCopiedDownBetweenSegmentsAreReadAfterTheLaunch) {
  RoundTripRunner eager(false), graph(true);
  const int captures = Cap()->captures(), launches = Cap()->launches();
  std::vector<Tensor> kept;  // fetched host values must stay as they were
  std::vector<std::vector<float>> kept_values;
  for (int step = 0; step < 10; ++step) {
    RunStats es, gs;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> e, eager.Step(Feed(step), &es));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> g, graph.Step(Feed(step), &gs));
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(Values(g[1]), ElementsAreArray(Values(e[1]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    EXPECT_EQ(gs.captured, step == 1) << "step " << step;
    EXPECT_EQ(gs.graph_launches, step >= 1 ? 2 : 0) << "step " << step;
    EXPECT_EQ(gs.ungraphed_device_steps, 0) << "step " << step;
    EXPECT_EQ(gs.copies_d2h, es.copies_d2h);
    EXPECT_EQ(gs.copies_h2d, es.copies_h2d);
    kept.push_back(g[0]);
    kept_values.push_back(Values(g[0]));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_THAT(Values(kept[i]), ElementsAreArray(kept_values[i])) << "run " << i;
  }
  EXPECT_EQ(Cap()->captures() - captures, 2);
  EXPECT_EQ(Cap()->launches() - launches, 18);
  EXPECT_EQ(Cap()->dead_accesses(), 0);
  EXPECT_EQ(graph.plan->graph_summary(), "2 graph segments (#0-#2 on capdev:0, #4-#6 on capdev:0)");
}

TEST(GraphCaptureTest, ANewFeedShapeCapturesTheSegmentsAgain) {
  // x -> 2x on capdev -> 3(2x) + 1 on cpu -> its half on capdev.
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1}));
  Var y = b.Scale(x, 2.0);
  Var h;
  {
    auto host = b.device_guard("cpu");
    h = b.Scale(y, 3.0, 1.0);
  }
  Var z = b.Scale(h, 0.5);
  ExecutorOptions options;
  options.capture_graphs = true;
  Executor exe(CapPlace(), options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {h.name, z.name}));
  const std::vector<int> sizes = {4, 4, 4, 2, 2, 4, 4};
  const std::vector<bool> captured = {false, true, false, true, false, true, false};
  for (size_t run = 0; run < sizes.size(); ++run) {
    const std::vector<float> feed = Feed(static_cast<int>(run), sizes[run]);
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(auto out, exe.Run(plan.get(), &scope, {{"x", Floats(feed)}}, &stats));
    std::vector<float> want_h, want_z;
    for (float v : feed) {
      want_h.push_back(3 * (2 * v) + 1);
      want_z.push_back(0.5f * want_h.back());
    }
    EXPECT_THAT(Values(out[0]), ElementsAreArray(want_h)) << "run " << run;
    EXPECT_THAT(Values(out[1]), ElementsAreArray(want_z)) << "run " << run;
    EXPECT_EQ(stats.captured, captured[run]) << "run " << run;
    EXPECT_EQ(stats.graph_launches, run >= 1 ? 2 : 0) << "run " << run;
  }
  EXPECT_EQ(plan->graph_summary(), "2 graph segments (#0-#2 on capdev:0, #4-#5 on capdev:0)");
}

// A learning rate computed on capdev (a scale of the host's), copied down
// and read on the host by capdev's sgd (HostMemory): the copy runs only
// when the graph launches, so the sgd that reads its result starts a new
// segment, captured after the first one ran.
TEST(GraphCaptureTest, AHostValueCopiedDownIsReadOnlyAfterTheSegmentThatCopiesItRan) {
  auto make = [](ProgramBuilder* b) {
    Var x = b->Data("x", DataType::kFloat32, Shape({4}));
    Var w = b->CreateParameter("w", DataType::kFloat32, Shape({4}), Initializer::Constant(0.5));
    Var lr;
    {
      auto host = b->device_guard("cpu");
      lr = b->CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.25);
    }
    Var rate = b->Scale(lr, 0.5);  // on capdev
    Var z = b->ElementwiseAdd(b->Scale(x, 2.0), w);
    OpDesc sgd;
    sgd.type = "sgd";
    sgd.inputs = {{"Param", {w.name}}, {"Grad", {z.name}}, {"LearningRate", {rate.name}}};
    sgd.outputs = {{"ParamOut", {w.name}}};
    b->main_program().block().AppendOp(std::move(sgd));
    return z.name;
  };
  ProgramBuilder b;
  const std::string z = make(&b);
  ASSERT_OK(b.status());
  Scope scopes[2];
  std::unique_ptr<Executor> exes[2];
  std::unique_ptr<Plan> plans[2];
  for (int g = 0; g < 2; ++g) {
    ExecutorOptions options;
    options.capture_graphs = g == 1;
    options.in_order = g == 0;
    exes[g] = std::make_unique<Executor>(CapPlace(), options);
    ASSERT_OK(exes[g]->Run(b.startup_program(), &scopes[g]).status());
    ASSERT_OK_AND_ASSIGN(plans[g], exes[g]->Prepare(b.main_program(), scopes[g], {"x"}, {z}));
  }
  for (int step = 0; step < 5; ++step) {
    std::vector<float> got[2];
    RunStats stats;
    for (int g = 0; g < 2; ++g) {
      ASSERT_OK(exes[g]
                    ->Run(plans[g].get(), &scopes[g], {{"x", Floats(Feed(step))}},
                          g == 1 ? &stats : nullptr)
                    .status());
      got[g] = ValuesOf(scopes[g], "w");
    }
    EXPECT_THAT(got[1], ElementsAreArray(got[0])) << "step " << step;
    EXPECT_EQ(stats.graph_launches, step >= 1 ? 2 : 0) << "step " << step;
    EXPECT_EQ(stats.ungraphed_device_steps, 0) << "step " << step;
  }
  EXPECT_THAT(plans[1]->graph_summary(), ::testing::StartsWith("2 graph segments"));
}

// A host reshape of a value a segment copies down shares the segment's
// buffer, which the next launch writes: its fetched value is a copy.
TEST(GraphCaptureTest, AFetchedHostViewOfAValueCopiedDownKeepsItsValues) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4}));
  Var y = b.Scale(x, 2.0);  // on capdev
  Var r;
  {
    auto host = b.device_guard("cpu");
    r = b.Reshape(y, {2, 2});
  }
  ExecutorOptions options;
  options.capture_graphs = true;
  Executor exe(CapPlace(), options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {r.name}));
  std::vector<Tensor> kept;
  for (int run = 0; run < 5; ++run) {
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(auto out, exe.Run(plan.get(), &scope, {{"x", Floats(Feed(run))}}, &stats));
    EXPECT_EQ(stats.graph_launches, run >= 1 ? 1 : 0) << "run " << run;
    kept.push_back(out[0]);
  }
  for (int run = 0; run < 5; ++run) {
    std::vector<float> want;
    for (float v : Feed(run)) want.push_back(2 * v);
    EXPECT_THAT(Values(kept[run]), ElementsAreArray(want)) << "run " << run;
  }
}

TEST(GraphCaptureTest, AStepWhoseHostValueChangesOnEveryRunRunsEagerlyFromThenOn) {
  Model m;
  Runner eager(&m, false), graph(&m, true);
  for (int step = 0; step < 8; ++step) {
    for (Runner* r : {&eager, &graph}) {
      r->scope.Var("lr")->mutable_tensor()->data<float>()[0] = 0.125f / (step + 1);
    }
    RunStats es, gs;
    std::vector<Tensor> e = eager.Step(Feed(step), &es);
    std::vector<Tensor> g = graph.Step(Feed(step), &gs);
    EXPECT_THAT(Values(g[0]), ElementsAreArray(Values(e[0]))) << "step " << step;
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
    // Steps 1-3 capture the whole step; step 4 gives up on the sgd, whose
    // learning rate changes, and captures the rest once more.
    EXPECT_EQ(gs.captured, step >= 1 && step <= 4) << "step " << step;
    EXPECT_EQ(gs.graph_launches, step >= 1 ? 1 : 0) << "step " << step;
    EXPECT_EQ(gs.ungraphed_device_steps, step >= 4 ? 1 : 0) << "step " << step;
  }
  EXPECT_EQ(graph.plan->graph_fallback_reason(), "");
  EXPECT_EQ(graph.plan->graph_summary(),
            "1 graph segment (#0-#2 on capdev:0); device steps run eagerly: #3 'sgd': its "
            "segment was captured again on 3 runs in a row (last: the host value of 'lr' read by "
            "'sgd' changed)");
}

// z = 2x + w on capdev, then a host lookup of fed ids, then w -= lr * z:
// a host step that can fail after the first segment was launched.
struct LookupBetweenSegments {
  explicit LookupBetweenSegments(bool capture) {
    Var x = b.Data("x", DataType::kFloat32, Shape({4}));
    Var ids = b.Data("ids", DataType::kInt64, Shape({2}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({4}), Initializer::Constant(0.5));
    Var z = b.ElementwiseAdd(b.Scale(x, 2.0), w);
    Var rows;
    {
      auto host = b.device_guard("cpu");
      b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.125);
      Var table =
          b.CreateParameter("table", DataType::kFloat32, Shape({5, 3}), Initializer::Constant(1.5));
      rows = b.LookupTable(ids, table);
    }
    OpDesc sgd;
    sgd.type = "sgd";
    sgd.inputs = {{"Param", {w.name}}, {"Grad", {z.name}}, {"LearningRate", {"lr"}}};
    sgd.outputs = {{"ParamOut", {w.name}}};
    b.main_program().block().AppendOp(std::move(sgd));
    ExecutorOptions options;
    options.capture_graphs = capture;
    options.in_order = !capture;  // the reference
    exe = std::make_unique<Executor>(CapPlace(), options);
    EXPECT_OK(b.status());
    EXPECT_OK(exe->Run(b.startup_program(), &scope).status());
    plan = *exe->Prepare(b.main_program(), scope, {"x", "ids"}, {z.name, rows.name});
  }
  absl::StatusOr<std::vector<Tensor>> Step(int step, int64_t bad_id) {
    std::vector<int64_t> ids = {step % 5, bad_id >= 0 ? bad_id : (step + 2) % 5};
    return exe->Run(
        plan.get(), &scope,
        {{"x", Floats(Feed(step))}, {"ids", Tensor::FromVector<int64_t>(Shape({2}), ids)}});
  }
  std::vector<float> W() { return ValuesOf(scope, "w"); }

  ProgramBuilder b;
  std::unique_ptr<Executor> exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
};

TEST(GraphCaptureTest, AFailedHostStepBetweenSegmentsLeavesTheNextRunsExact) {
  LookupBetweenSegments eager(false), graph(true);
  for (int step = 0; step < 8; ++step) {
    const int64_t bad = step == 4 ? 9 : -1;  // the table has 5 rows
    absl::StatusOr<std::vector<Tensor>> e = eager.Step(step, bad);
    absl::StatusOr<std::vector<Tensor>> g = graph.Step(step, bad);
    if (step == 4) {
      ASSERT_FALSE(g.ok());
      EXPECT_THAT(std::string(g.status().message()), ::testing::HasSubstr("lookup_table"));
      EXPECT_THAT(std::string(g.status().message()), ::testing::HasSubstr("9"));
      EXPECT_EQ(g.status().code(), e.status().code());
    } else {
      ASSERT_OK(g.status());
      ASSERT_OK(e.status());
      EXPECT_THAT(Values((*g)[0]), ElementsAreArray(Values((*e)[0]))) << "step " << step;
      EXPECT_THAT(Values((*g)[1]), ElementsAreArray(Values((*e)[1]))) << "step " << step;
    }
    // The failed run stopped before the update: w is as the run before left it.
    EXPECT_THAT(graph.W(), ElementsAreArray(eager.W())) << "step " << step;
  }
  EXPECT_EQ(graph.plan->graph_summary(), "2 graph segments (#0-#2 on capdev:0, #4 on capdev:0)");
}

TEST(GraphCaptureTest, HostOnlyPlanAndDeviceWithoutCaptureRunEagerly) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2}));
  Var y = b.Scale(x, 3.0);
  ExecutorOptions options;
  options.capture_graphs = true;
  for (const Place& place : {CPUPlace(), Place(*ParsePlace("sim:0"))}) {
    Executor exe(place, options);
    Scope scope;
    ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {y.name}));
    for (int run = 0; run < 3; ++run) {
      RunStats stats;
      ASSERT_OK_AND_ASSIGN(auto out, exe.Run(plan.get(), &scope, {{"x", Floats({1, 2})}}, &stats));
      EXPECT_THAT(Values(out[0]), ElementsAreArray({3.0f, 6.0f}));
      EXPECT_FALSE(stats.replayed);
    }
    EXPECT_EQ(plan->graph_fallback_reason(), place.is_host()
                                                 ? "the plan has no device work to capture"
                                                 : "sim:0 does not support graph capture");
  }
}

// A seeded random program over cpu and capdev: scale and add ops on feeds,
// parameters and each other (each op on either place), sometimes a mean on
// capdev (which cannot be captured), one sgd per parameter on either
// place; every value has 4 elements.
struct RandomMixedProgram {
  explicit RandomMixedProgram(uint32_t seed) : rng(seed) {
    std::vector<Var> pool = {b.Data("x0", DataType::kFloat32, Shape({4})),
                             b.Data("x1", DataType::kFloat32, Shape({4}))};
    Var lr;
    {
      auto host = b.device_guard("cpu");
      lr = b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.0625);
    }
    // In a third of the programs (their own random stream: the others are
    // as before) the updates read a rate computed on capdev and copied down.
    std::mt19937 rate_rng(seed ^ 0x5eedu);
    if (rate_rng() % 3 == 0) lr = b.Scale(lr, 0.5);
    std::vector<Var> params;
    const int num_params = 1 + Pick(2);
    for (int i = 0; i < num_params; ++i) {
      const std::string name = absl::StrCat("w", i);
      const Initializer init = Initializer::Constant(0.25 * (i + 1));
      if (Pick(2) == 0) {
        auto host = b.device_guard("cpu");
        params.push_back(b.CreateParameter(name, DataType::kFloat32, Shape({4}), init));
      } else {
        params.push_back(b.CreateParameter(name, DataType::kFloat32, Shape({4}), init));
      }
      pool.push_back(params.back());
    }
    const int ops = 3 + Pick(8);
    for (int i = 0; i < ops; ++i) {
      std::optional<ProgramBuilder::DeviceGuardScope> host;
      if (Pick(2) == 0) host.emplace(b.device_guard("cpu"));
      const Var x = pool[Pick(pool.size())];
      if (Pick(8) == 0) {
        host.reset();  // on capdev, which cannot capture it
        fetches.push_back(b.Mean(x).name);
      } else if (Pick(2) == 0) {
        pool.push_back(b.Scale(x, 0.25 * (1 + Pick(6)) * (Pick(2) ? 1 : -1), 0.125 * Pick(3)));
      } else {
        pool.push_back(b.ElementwiseAdd(x, pool[Pick(pool.size())]));
      }
    }
    for (const Var& w : params) {
      std::optional<ProgramBuilder::DeviceGuardScope> host;
      if (Pick(2) == 0) host.emplace(b.device_guard("cpu"));
      OpDesc sgd;
      sgd.type = "sgd";
      sgd.inputs = {{"Param", {w.name}},
                    {"Grad", {pool[2 + Pick(pool.size() - 2)].name}},
                    {"LearningRate", {lr.name}}};
      sgd.outputs = {{"ParamOut", {w.name}}};
      b.main_program().block().AppendOp(std::move(sgd));
    }
    fetches.push_back(pool[pool.size() - 1].name);
    fetches.push_back(pool[Pick(pool.size())].name);
    if (rate_rng() % 2 == 0) {  // a host view of a value, fetched
      auto host = b.device_guard("cpu");
      fetches.push_back(b.Reshape(pool[2 + rate_rng() % (pool.size() - 2)], {2, 2}).name);
    }
  }
  size_t Pick(size_t n) { return rng() % n; }

  std::mt19937 rng;
  ProgramBuilder b;
  std::vector<std::string> fetches;
};

TEST(GraphCaptureTest, RandomMixedProgramsReplayExactlyAsInOrderRuns) {
  const char* env = std::getenv("TANDEM_GRAPH_PROGRAMS");
  const int programs = env != nullptr ? std::atoi(env) : 80;
  int launched = 0, split = 0;
  for (int p = 0; p < programs; ++p) {
    const uint32_t seed = 7000 + p;
    RandomMixedProgram program(seed);
    ASSERT_OK(program.b.status()) << "seed " << seed;
    struct Side {
      std::unique_ptr<Executor> exe;
      Scope scope;
      std::unique_ptr<Plan> plan;
    } sides[2];
    for (int g = 0; g < 2; ++g) {
      ExecutorOptions options;
      options.capture_graphs = g == 1;
      options.in_order = g == 0;  // the reference
      sides[g].exe = std::make_unique<Executor>(CapPlace(), options);
      ASSERT_OK(sides[g].exe->Run(program.b.startup_program(), &sides[g].scope).status());
      ASSERT_OK_AND_ASSIGN(sides[g].plan,
                           sides[g].exe->Prepare(program.b.main_program(), sides[g].scope,
                                                 {"x0", "x1"}, program.fetches));
    }
    int launches = 0;
    // The graph side's fetched tensors and their values when fetched: later
    // runs must not write them.
    std::vector<std::pair<Tensor, std::vector<float>>> kept;
    for (int step = 0; step < 7; ++step) {
      if (step == 4) {  // a new learning rate: segments reading it capture again
        for (Side& side : sides) side.scope.Var("lr")->mutable_tensor()->data<float>()[0] = 0.03f;
      }
      if (step == 5) {  // w0 in a new buffer (same values): segments reading it capture again
        for (Side& side : sides) {
          Variable* w = side.scope.Var("w0");
          ASSERT_OK_AND_ASSIGN(Tensor moved, CopyTensorTo(w->tensor(), CPUPlace()));
          ASSERT_OK_AND_ASSIGN(Tensor back, CopyTensorTo(moved, w->tensor().place()));
          w->set(back);
        }
      }
      const FeedMap feeds = {{"x0", Floats(Feed(step))}, {"x1", Floats(Feed(step + 9))}};
      RunStats stats[2];
      std::vector<std::vector<float>> got[2];
      for (int g = 0; g < 2; ++g) {
        absl::StatusOr<std::vector<Tensor>> out =
            sides[g].exe->Run(sides[g].plan.get(), &sides[g].scope, feeds, &stats[g]);
        ASSERT_OK(out.status()) << "seed " << seed << " step " << step;
        for (const Tensor& t : *out) {
          got[g].push_back(Values(t));
          if (g == 1) kept.emplace_back(t, got[g].back());
        }
        for (const VarDesc& v : program.b.main_program().block().vars()) {
          if (v.persistable && v.name != "lr") {
            got[g].push_back(ValuesOf(sides[g].scope, v.name));
          }
        }
      }
      ASSERT_EQ(got[1], got[0]) << "seed " << seed << " step " << step
                                << "; graphs: " << sides[1].plan->graph_summary() << "\n"
                                << sides[1].plan->placed().program.DebugString();
      launches += stats[1].graph_launches;
    }
    for (size_t k = 0; k < kept.size(); ++k) {
      ASSERT_EQ(Values(kept[k].first), kept[k].second)
          << "seed " << seed << ", fetch " << k << " changed after it was returned";
    }
    launched += launches > 0 ? 1 : 0;
    split += absl::StrContains(sides[1].plan->graph_summary(), "run eagerly") ? 1 : 0;
  }
  std::printf("%d random mixed programs: %d launched graphs, %d split around an eager step\n",
              programs, launched, split);
  // The programs exercise what they are for: most launch graphs, some split.
  EXPECT_GT(launched, programs / 2) << launched << " of " << programs;
  EXPECT_GT(split, 0);
  EXPECT_EQ(Cap()->dead_accesses(), 0);
}

// A sparse gradient made on the host (lookup_table_grad of fed ids) and
// applied on capdev: its row list changes with the ids, and a launch that
// baked in other rows would update the wrong rows.
TEST(GraphCaptureTest, SparseRowsCopiedUpAreCheckedBeforeEachLaunch) {
  auto make = [](bool capture, Scope* scope, std::unique_ptr<Executor>* exe) {
    ProgramBuilder b;
    b.Data("ids", DataType::kInt64, Shape({2}));
    b.Data("dout", DataType::kFloat32, Shape({2, 3}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({5, 3}), Initializer::Constant(1.0));
    {
      auto host = b.device_guard("cpu");
      b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.5);
      OpDesc grad;
      grad.type = "lookup_table_grad";
      grad.inputs = {{"Ids", {"ids"}}, {"W", {w.name}}, {"Out@GRAD", {"dout"}}};
      grad.outputs = {{"W@GRAD", {"w@GRAD"}}};
      grad.attrs = {{"is_sparse", true}, {"padding_idx", int64_t{-1}}};
      EXPECT_OK(
          b.main_program().block().AddVar(VarDesc{"w@GRAD", DataType::kFloat32, Shape({5, 3})}));
      b.main_program().block().AppendOp(std::move(grad));
    }
    OpDesc sgd;
    sgd.type = "sgd";
    sgd.inputs = {{"Param", {w.name}}, {"Grad", {"w@GRAD"}}, {"LearningRate", {"lr"}}};
    sgd.outputs = {{"ParamOut", {w.name}}};
    b.main_program().block().AppendOp(std::move(sgd));
    ExecutorOptions options;
    options.capture_graphs = capture;
    options.in_order = !capture;
    *exe = std::make_unique<Executor>(CapPlace(), options);
    EXPECT_OK(b.status());
    EXPECT_OK((*exe)->Run(b.startup_program(), scope).status());
    return *(*exe)->Prepare(b.main_program(), *scope, {"ids", "dout"}, {});
  };
  Scope scopes[2];
  std::unique_ptr<Executor> exes[2];
  std::unique_ptr<Plan> plans[2] = {make(false, &scopes[0], &exes[0]),
                                    make(true, &scopes[1], &exes[1])};
  for (int step = 0; step < 8; ++step) {
    const std::vector<int64_t> ids = {step % 5, (step * 3 + 1) % 5};
    const FeedMap feeds = {{"ids", Tensor::FromVector<int64_t>(Shape({2}), ids)},
                           {"dout", Floats({1, 2, 3, 4, 5, 6}).Reshaped(Shape({2, 3}))}};
    for (int g = 0; g < 2; ++g) ASSERT_OK(exes[g]->Run(plans[g].get(), &scopes[g], feeds).status());
    EXPECT_THAT(ValuesOf(scopes[1], "w"), ElementsAreArray(ValuesOf(scopes[0], "w")))
        << "step " << step << ": " << plans[1]->graph_summary();
  }
}

TEST(GraphCaptureTest, TheSummaryNamesADeviceStepThatWritesHostMemory) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4}));
  Var y = b.Scale(x, 2.0);
  OpDesc shape;
  shape.type = "shape";
  shape.inputs = {{"Input", {y.name}}};
  shape.outputs = {{"Out", {"y_shape"}}};
  ASSERT_OK(b.main_program().block().AddVar(VarDesc{"y_shape", DataType::kInt32, Shape({1})}));
  b.main_program().block().AppendOp(std::move(shape));
  Var z = b.Scale(y, 0.5);
  ExecutorOptions options;
  options.capture_graphs = true;
  Executor exe(CapPlace(), options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {z.name, "y_shape"}));
  for (int run = 0; run < 4; ++run) {
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(auto out, exe.Run(plan.get(), &scope, {{"x", Floats(Feed(run))}}, &stats));
    EXPECT_THAT(Values(out[0]), ElementsAreArray(Feed(run))) << "run " << run;
    EXPECT_EQ(out[1].data<int32_t>()[0], 4);
    EXPECT_EQ(stats.graph_launches, run >= 1 ? 2 : 0) << "run " << run;
    EXPECT_EQ(stats.ungraphed_device_steps, run >= 1 ? 1 : 0) << "run " << run;
  }
  EXPECT_EQ(plan->graph_summary(),
            "2 graph segments (#0-#1 on capdev:0, #3 on capdev:0); device steps run eagerly: "
            "#2 'shape': writes its host-memory output 'Out' on the host, which a replay would "
            "not redo");
}

class SpanCounter : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override { types.push_back(e.op->type); }
  std::vector<std::string> types;
};

TEST(GraphCaptureTest, ObserversSeeOneGraphLaunchSpanPerReplay) {
  Model m;
  Runner graph(&m, true);
  RunStats stats;
  graph.Step(Feed(0), &stats);
  graph.Step(Feed(1), &stats);
  SpanCounter spans;
  SetExecutionObserver(&spans);
  graph.Step(Feed(2), &stats);
  SetExecutionObserver(nullptr);
  EXPECT_THAT(spans.types, ElementsAreArray({"graph_launch"}));
}

}  // namespace
}  // namespace tandem
