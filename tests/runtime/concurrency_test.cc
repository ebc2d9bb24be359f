// The concurrent executor against the in-order one: every result bitwise
// identical (training programs of the examples, random programs over cpu,
// sim:0 and sim:1), independent host branches really running at once, and
// errors of concurrent runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "backends/sim/sim_device.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/crop/crop_model.h"
#include "models/ctr/ctr_model.h"
#include "models/embedding/embedding_model.h"
#include "models/fashion_mnist/fashion_mnist_model.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

const Place kSim0 = *ParsePlace("sim:0");

// The bytes of a tensor, copied to the host.
std::string HostBytes(const Tensor& t) {
  absl::StatusOr<Tensor> host = CopyTensorTo(t, CPUPlace());
  CHECK(host.ok()) << host.status();
  return std::string(static_cast<const char*>(host->raw_data()), host->NumBytes());
}

// Fetches of every step, then every persistable variable at the end.
struct Trajectory {
  std::vector<std::string> fetched;
  std::map<std::string, std::string> persistables;
};

using FeedsForStep = std::function<FeedMap(int step)>;

enum class Mode {
  kInOrder,     // ExecutorOptions::in_order
  kConcurrent,  // Run, one run at a time
  kPipelined,   // RunAsync of step n + 1 before Wait of step n
};

// Runs the startup program, then `steps` runs of the main program.
Trajectory Train(ProgramBuilder& b, const Place& place, Mode mode,
                 const std::vector<std::string>& feed_names,
                 const std::vector<std::string>& fetches, const FeedsForStep& feeds, int steps) {
  ExecutorOptions options;
  options.in_order = mode == Mode::kInOrder;
  // The modes as named, every run: the schedule trial (which would run some
  // steps in order after the 4th) is tested on its own.
  options.schedule_trial.enabled = false;
  Executor exe(place, options);
  Scope scope;
  Trajectory t;
  absl::Status s = exe.Run(b.startup_program(), &scope).status();
  EXPECT_OK(s);
  if (!s.ok()) return t;
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(b.main_program(), scope, feed_names, fetches);
  EXPECT_OK(plan.status());
  if (!plan.ok()) return t;
  std::optional<RunHandle> in_flight;
  auto collect = [&](RunHandle& handle) {
    absl::StatusOr<std::vector<Tensor>> out = handle.Wait();
    EXPECT_OK(out.status());
    if (!out.ok()) return false;
    for (const Tensor& f : *out) t.fetched.push_back(HostBytes(f));
    return true;
  };
  for (int i = 0; i < steps; ++i) {
    absl::StatusOr<RunHandle> started = exe.RunAsync(plan->get(), &scope, feeds(i));
    EXPECT_OK(started.status());
    if (!started.ok()) return t;
    if (mode != Mode::kPipelined && !collect(*started)) return t;
    if (mode != Mode::kPipelined) continue;
    if (in_flight.has_value() && !collect(*in_flight)) return t;
    in_flight = *std::move(started);
  }
  if (in_flight.has_value() && !collect(*in_flight)) return t;
  for (const std::string& name : scope.Names()) {
    const Tensor* v = scope.Find(name)->data_tensor();
    if (v != nullptr && v->initialized()) t.persistables[name] = HostBytes(*v);
  }
  return t;
}

void ExpectSameTrajectory(const Trajectory& in_order, const Trajectory& concurrent) {
  ASSERT_FALSE(in_order.fetched.empty());
  EXPECT_EQ(in_order.fetched, concurrent.fetched);  // bitwise
  ASSERT_FALSE(in_order.persistables.empty());
  ASSERT_EQ(in_order.persistables.size(), concurrent.persistables.size());
  for (const auto& [name, bytes] : in_order.persistables) {
    auto it = concurrent.persistables.find(name);
    ASSERT_NE(it, concurrent.persistables.end()) << name;
    EXPECT_TRUE(it->second == bytes) << "persistable '" << name << "' differs";
  }
}

// Concurrent and pipelined training give the in-order trajectory, bit for bit.
void ExpectModesAgree(ProgramBuilder& b, const Place& place,
                      const std::vector<std::string>& feed_names,
                      const std::vector<std::string>& fetches, const FeedsForStep& feeds,
                      int steps) {
  const Trajectory expected = Train(b, place, Mode::kInOrder, feed_names, fetches, feeds, steps);
  for (Mode mode : {Mode::kConcurrent, Mode::kPipelined}) {
    SCOPED_TRACE(mode == Mode::kConcurrent ? "concurrent" : "pipelined");
    ExpectSameTrajectory(expected, Train(b, place, mode, feed_names, fetches, feeds, steps));
  }
}

Tensor Int64s(const std::vector<int64_t>& v) {
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64,
                               Shape({static_cast<int64_t>(v.size())}));
  std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

Tensor Floats(const Shape& shape, std::mt19937* rng) {
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, shape);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < *shape.NumElements(); ++i) t.data<float>()[i] = u(*rng);
  return t;
}

TEST(Concurrency, CtrTrainingIsBitwiseIdenticalToInOrder) {
  ProgramBuilder b;
  Adam adam(1e-2);
  CtrModelConfig config;
  config.vocab_sizes = {50, 80, 120, 200};
  config.embedding_dim = 8;
  config.hidden = {16, 8};
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(config, &adam, &b));
  std::vector<std::string> feed_names = {m.label.name};
  for (const Var& ids : m.ids) feed_names.push_back(ids.name);
  auto feeds = [&](int step) {
    std::mt19937_64 rng(step);  // consecutive batches share ids: small tables
    FeedMap f;
    std::vector<int64_t> labels(32);
    for (int64_t& l : labels) l = rng() % 2;
    f[m.label.name] = Int64s(labels);
    for (size_t k = 0; k < m.ids.size(); ++k) {
      std::vector<int64_t> ids(32);
      for (int64_t& id : ids) id = rng() % config.vocab_sizes[k];
      f[m.ids[k].name] = Int64s(ids);
    }
    return f;
  };
  for (const Place& place : {CPUPlace(), kSim0}) {
    SCOPED_TRACE(place.ToString());
    ExpectModesAgree(b, place, feed_names, {m.loss.name}, feeds, 6);
  }
}

// With every sim stream operation delayed, an async copy or event that the
// executor forgot to wait for, or a buffer it freed while a queued copy
// still reads it, gives other numbers than the in-order run.
TEST(Concurrency, CtrOnSimWithDelayedStreamsIsBitwiseIdenticalToInOrder) {
  ProgramBuilder b;
  Adam adam(1e-2);
  CtrModelConfig config;
  config.vocab_sizes = {30, 40};
  config.embedding_dim = 4;
  config.hidden = {8};
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(config, &adam, &b));
  const std::vector<std::string> names = {m.label.name, m.ids[0].name, m.ids[1].name};
  auto feeds = [&](int step) {
    std::mt19937_64 rng(100 + step);
    FeedMap f;
    std::vector<int64_t> labels(8), a(8), c(8);
    for (int i = 0; i < 8; ++i) {
      labels[i] = rng() % 2;
      a[i] = rng() % 30;
      c[i] = rng() % 40;
    }
    f[m.label.name] = Int64s(labels);
    f[m.ids[0].name] = Int64s(a);
    f[m.ids[1].name] = Int64s(c);
    return f;
  };
  const Trajectory expected = Train(b, kSim0, Mode::kInOrder, names, {m.loss.name}, feeds, 4);
  ASSERT_OK(SetSimStreamDelay(kSim0, absl::Microseconds(300)));
  const Trajectory concurrent = Train(b, kSim0, Mode::kConcurrent, names, {m.loss.name}, feeds, 4);
  const Trajectory pipelined = Train(b, kSim0, Mode::kPipelined, names, {m.loss.name}, feeds, 4);
  ASSERT_OK(SetSimStreamDelay(kSim0, absl::ZeroDuration()));
  ExpectSameTrajectory(expected, concurrent);
  ExpectSameTrajectory(expected, pipelined);
}

TEST(Concurrency, FashionMnistFirstLayerOnCpuIsBitwiseIdenticalToInOrder) {
  ProgramBuilder b;
  Adam adam(1e-3);
  FashionMnistConfig config;
  config.hidden = {32, 16};
  config.first_layer_on_cpu = true;
  ASSERT_OK_AND_ASSIGN(FashionMnistModel m, BuildFashionMnistModel(config, &adam, &b));
  auto feeds = [&](int step) {
    std::mt19937 rng(step);
    std::vector<int64_t> labels(16);
    for (int64_t& l : labels) l = rng() % 10;
    return FeedMap{{m.image.name, Floats(Shape({16, 28, 28}), &rng)},
                   {m.label.name, Int64s(labels)}};
  };
  const std::vector<std::string> names = {m.image.name, m.label.name};
  ExpectModesAgree(b, kSim0, names, {m.loss.name}, feeds, 4);
}

TEST(Concurrency, EmbeddingOffloadIsBitwiseIdenticalToInOrder) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    ProgramBuilder b;
    EmbeddingConfig config;
    config.rows = 64;
    config.dim = 8;
    config.batch = 16;
    config.is_sparse = sparse;
    config.learning_rate = 0.5;
    ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
    auto feeds = [&](int step) {
      std::mt19937_64 rng(step);
      std::vector<int64_t> ids(16);
      for (int64_t& id : ids) id = rng() % 64;
      return FeedMap{{m.ids.name, Int64s(ids)}};
    };
    ExpectModesAgree(b, kSim0, {m.ids.name}, {m.loss.name}, feeds, 5);
  }
}

// A random program of elementwise ops over [3, 4] float32 values, each op
// under a random device_guard of cpu, sim:0 and sim:1; fetches the last few
// values.
struct RandomProgram {
  ProgramBuilder builder;
  std::vector<std::string> fetches;
};

void BuildRandomProgram(uint32_t seed, RandomProgram* p) {
  std::mt19937 rng(seed);
  ProgramBuilder& b = p->builder;
  const char* places[] = {"cpu", "sim:0", "sim:1"};
  std::vector<Var> values;
  for (int i = 0; i < 3; ++i) {
    auto g = b.device_guard(places[rng() % 3]);
    values.push_back(b.FillConstant({3, 4}, DataType::kFloat32, 0.25 * (i + 1)));
  }
  const int ops = 4 + rng() % 16;
  for (int i = 0; i < ops; ++i) {
    auto g = b.device_guard(places[rng() % 3]);
    Var x = values[rng() % values.size()];
    Var y = values[rng() % values.size()];
    switch (rng() % 5) {
      case 0:
        values.push_back(b.ElementwiseAdd(x, y));
        break;
      case 1:
        values.push_back(b.ElementwiseMul(x, y));
        break;
      case 2:
        values.push_back(b.Scale(x, 0.5, 0.125));
        break;
      case 3:
        values.push_back(b.Tanh(x));
        break;
      default:
        values.push_back(b.ElementwiseSub(x, y));
        break;
    }
  }
  for (size_t i = values.size() - 1 - rng() % 3; i < values.size(); ++i) {
    p->fetches.push_back(values[i].name);
  }
}

TEST(Concurrency, RandomProgramsOverThreePlacesMatchInOrder) {
  constexpr int kPrograms = 400;  // 5 runs each: 2000 concurrent runs
  for (uint32_t seed = 1; seed <= kPrograms; ++seed) {
    RandomProgram p;
    BuildRandomProgram(seed, &p);
    ASSERT_OK(p.builder.status());
    std::vector<std::string> expected, got;
    for (Mode mode : {Mode::kInOrder, Mode::kConcurrent, Mode::kPipelined}) {
      ExecutorOptions options;
      options.in_order = mode == Mode::kInOrder;
      Executor exe(CPUPlace(), options);
      Scope scope;
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                           exe.Prepare(p.builder.main_program(), scope, {}, p.fetches));
      std::vector<RunHandle> handles;  // pipelined: all started, then waited in order
      for (int run = 0; run < (mode == Mode::kInOrder ? 1 : 5); ++run) {
        ASSERT_OK_AND_ASSIGN(RunHandle h, exe.RunAsync(plan.get(), &scope));
        handles.push_back(std::move(h));
        if (mode == Mode::kPipelined && run + 1 < 5) continue;
        for (RunHandle& handle : handles) {
          ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, handle.Wait());
          std::vector<std::string>& into = mode == Mode::kInOrder ? expected : got;
          for (const Tensor& t : out) into.push_back(HostBytes(t));
        }
        handles.clear();
      }
    }
    ASSERT_EQ(got.size(), 10 * expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got[i] == expected[i % expected.size()])
          << "program " << seed << " run " << i / expected.size();
    }
  }
}

// Blocks each host op until `expected` host ops are running at once (or a
// second passed), remembering how many ran together and on which workers.
class RendezvousObserver : public ExecutionObserver {
 public:
  explicit RendezvousObserver(int expected) : expected_(expected) {}
  void OnOpBegin(const OpEvent& e) override {
    if (e.is_copy || !e.place.is_host()) return;
    std::unique_lock<std::mutex> lock(mu_);
    workers_.insert(e.worker);
    ++running_;
    max_running_ = std::max(max_running_, running_);
    met_.notify_all();
    met_.wait_for(lock, std::chrono::seconds(1), [this] { return max_running_ >= expected_; });
  }
  void OnOpEnd(const OpEvent& e) override {
    if (e.is_copy || !e.place.is_host()) return;
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  int max_running() const { return max_running_; }
  const std::set<int>& workers() const { return workers_; }

 private:
  const int expected_;
  std::mutex mu_;
  std::condition_variable met_;
  int running_ = 0, max_running_ = 0;
  std::set<int> workers_;
};

TEST(Concurrency, IndependentHostBranchesRunAtTheSameTime) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y, z;
  {
    auto g = b.device_guard("cpu");
    y = b.Tanh(x);
    z = b.Relu(x);
  }
  ExecutorOptions options;
  options.host_workers = 2;
  Executor exe(kSim0, options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope, {"x"}, {y.name, z.name}));
  RendezvousObserver observer(2);
  SetExecutionObserver(&observer);
  Tensor xv = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, Shape({2, 2}));
  for (int i = 0; i < 4; ++i) xv.data<float>()[i] = i - 1.5f;
  absl::StatusOr<std::vector<Tensor>> out = exe.Run(plan.get(), &scope, {{"x", xv}});
  SetExecutionObserver(nullptr);
  ASSERT_OK(out.status());
  EXPECT_EQ(observer.max_running(), 2);
  EXPECT_EQ(observer.workers(), (std::set<int>{0, 1}));
  EXPECT_FLOAT_EQ((*out)[1].data<float>()[3], 1.5f);  // relu(1.5)
  EXPECT_FLOAT_EQ((*out)[0].data<float>()[0], std::tanh(-1.5f));
}

TEST(Concurrency, BadIdInAConcurrentRunNamesTheOpAndTheNextRunWorks) {
  ProgramBuilder b;
  Adam adam(1e-2);
  CtrModelConfig config;
  config.vocab_sizes = {10, 20};
  config.embedding_dim = 4;
  config.hidden = {8};
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(config, &adam, &b));
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope,
                                   {m.label.name, m.ids[0].name, m.ids[1].name}, {m.loss.name}));
  auto feeds = [&](int64_t bad) {
    return FeedMap{{m.label.name, Int64s({0, 1, 1})},
                   {m.ids[0].name, Int64s({1, 2, 3})},
                   {m.ids[1].name, Int64s({4, bad, 5})}};
  };
  absl::StatusOr<std::vector<Tensor>> bad = exe.Run(plan.get(), &scope, feeds(20));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("lookup_table"));
  EXPECT_THAT(bad.status().message(), HasSubstr("20"));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, feeds(6)));
    EXPECT_TRUE(std::isfinite(out[0].data<float>()[0]));
  }
}

// Records the stream of every device->host copy and the thread that
// dispatched each device kernel.
class CopyStreams : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.is_copy && e.copy_kind == CopyKind::kDeviceToHost) d2h_streams_.push_back(e.stream);
    if (!e.is_copy && !e.place.is_host()) kernel_workers_[e.op->type] = e.worker;
  }
  std::vector<Stream*> d2h_streams() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(d2h_streams_, {});
  }
  int kernel_worker(const std::string& type) {
    std::lock_guard<std::mutex> lock(mu_);
    return kernel_workers_.at(type);
  }

 private:
  std::mutex mu_;
  std::vector<Stream*> d2h_streams_;
  std::map<std::string, int> kernel_workers_;
};

// Workload 2 with the slice on sim:0 is one chain (shape -> copy -> slice
// -> copy back -> crop_tensor reading the shape on the host): a run that
// nothing overlaps keeps the copy back on the compute stream and the
// calling thread waits for it itself (crop_tensor is dispatched by it, not
// a worker); pipelined runs use the copy stream. Same output either way.
TEST(Concurrency, SoloRunOfAChainKeepsItsCopyOnTheComputeStream) {
  ProgramBuilder b;
  ASSERT_OK_AND_ASSIGN(Var out, BuildCropModel(/*slice_on_cpu=*/false, &b));
  ExecutorOptions options;
  options.host_workers = 2;
  Executor exe(kSim0, options);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope, {}, {out.name}));
  ASSERT_OK_AND_ASSIGN(Device * sim, DeviceRegistry::Global().GetDevice(kSim0));
  CopyStreams observer;
  SetExecutionObserver(&observer);
  absl::StatusOr<std::vector<Tensor>> solo = exe.Run(plan.get(), &scope);
  const std::vector<Stream*> solo_streams = observer.d2h_streams();
  const int crop_worker = observer.kernel_worker("crop_tensor");
  ASSERT_OK_AND_ASSIGN(RunHandle first, exe.RunAsync(plan.get(), &scope));
  ASSERT_OK_AND_ASSIGN(RunHandle second, exe.RunAsync(plan.get(), &scope));
  absl::StatusOr<std::vector<Tensor>> pipelined = second.Wait();
  ASSERT_OK(first.Wait().status());
  SetExecutionObserver(nullptr);
  ASSERT_OK(solo.status());
  ASSERT_OK(pipelined.status());
  EXPECT_EQ(solo_streams, (std::vector<Stream*>{sim->compute_stream()}));
  EXPECT_EQ(crop_worker, -1);
  EXPECT_EQ(observer.d2h_streams(), (std::vector<Stream*>{sim->copy_stream(), sim->copy_stream()}));
  EXPECT_EQ(solo->at(0).shape(), Shape({1, 3, 5, 5}));
  EXPECT_EQ(HostBytes(solo->at(0)), HostBytes(pipelined->at(0)));
}

// A device step that neither feeds nor follows the copy could run during
// it: even a solo run keeps the copy on the copy stream.
TEST(Concurrency, SoloRunKeepsACopyStreamWhenComputeCanOverlapIt) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var a = b.Scale(x, 2.0);
  Var host;
  {
    auto g = b.device_guard("cpu");
    host = b.Tanh(a);
  }
  Var other = b.Relu(x);
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope, {"x"}, {host.name, other.name}));
  ASSERT_OK_AND_ASSIGN(Device * sim, DeviceRegistry::Global().GetDevice(kSim0));
  Tensor xv = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, Shape({2, 2}));
  for (int i = 0; i < 4; ++i) xv.data<float>()[i] = i - 1.5f;
  CopyStreams observer;
  SetExecutionObserver(&observer);
  absl::StatusOr<std::vector<Tensor>> out = exe.Run(plan.get(), &scope, {{"x", xv}});
  SetExecutionObserver(nullptr);
  ASSERT_OK(out.status());
  EXPECT_EQ(observer.d2h_streams(), (std::vector<Stream*>{sim->copy_stream()}));
  EXPECT_FLOAT_EQ(out->at(0).data<float>()[0], std::tanh(-3.0f));
  EXPECT_FLOAT_EQ(out->at(1).data<float>()[3], 1.5f);
}

// Records the type of every host op in the order they begin.
class HostOpOrder : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override {
    if (e.is_copy || !e.place.is_host()) return;
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back(e.op->type);
  }
  // How many times `pattern` occurs in the order, as consecutive host ops.
  int Count(const std::vector<std::string>& pattern) {
    std::lock_guard<std::mutex> lock(mu_);
    int count = 0;
    for (size_t i = 0; i + pattern.size() <= ops_.size(); ++i) {
      count += std::equal(pattern.begin(), pattern.end(), ops_.begin() + i);
    }
    return count;
  }
  // How many sparse updates (sgd) began after the next step's lookup had
  // begun: more lookups than updates so far, counting this one.
  int UpdatesWithTheNextLookupAhead() {
    std::lock_guard<std::mutex> lock(mu_);
    int lookups = 0, updates = 0, ahead = 0;
    for (const std::string& op : ops_) {
      lookups += op == "lookup_table";
      if (op != "sgd") continue;
      ahead += lookups > ++updates;
    }
    return ahead;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> ops_;
};

// x [4, 8] through four layers tanh(h w_i) on sim:0, the weights w0..w3
// living on the host (device_guard("cpu"); each scaled by 0.5 there first
// when scale_on_host), mean loss, SGD on the host. Returns the loss (no
// name when Minimize failed, which the test then reports).
Var HostWeightsDeviceLayers(ProgramBuilder& b, bool scale_on_host) {
  Var h = b.Data("x", DataType::kFloat32, Shape({4, 8}));
  std::vector<Var> weights;
  {
    auto guard = b.device_guard("cpu");
    for (int i = 0; i < 4; ++i) {
      Var w = b.CreateParameter(absl::StrCat("w", i), DataType::kFloat32, Shape({8, 8}));
      weights.push_back(scale_on_host ? b.Scale(w, 0.5) : w);
    }
  }
  for (Var w : weights) h = b.Tanh(b.Matmul(h, w));
  Var loss = b.Mean(h);
  SGD sgd(0.1);
  const absl::Status s = sgd.Minimize(&b, loss);
  EXPECT_OK(s);
  return s.ok() ? loss : Var();
}

// Feeds of x for `steps` steps: uniform [0, 1) values from `seed`.
FeedsForStep RandomBatches(int steps, unsigned seed) {
  std::mt19937 rng(seed);
  auto batches = std::make_shared<std::vector<Tensor>>();
  for (int i = 0; i < steps; ++i) batches->push_back(Floats(Shape({4, 8}), &rng));
  return [batches](int step) { return FeedMap{{"x", batches->at(step)}}; };
}

// Host steps that feed a device start before those that feed only the
// host (HostReadyQueue). The updates of host-resident weights are held for
// the commit and released together; the next run's host scale of the first
// updated weight (a copy up and the device's matmul wait for it) begins
// before the run before's remaining updates, and the values stay exact.
TEST(Pipelining, HostStepsThatFeedADeviceOvertakeTheUpdatesOfTheRunBefore) {
  ProgramBuilder b;
  const Var loss = HostWeightsDeviceLayers(b, /*scale_on_host=*/true);
  ASSERT_TRUE(loss.valid());
  const FeedsForStep feeds = RandomBatches(6, /*seed=*/7);
  const Trajectory expected = Train(b, kSim0, Mode::kInOrder, {"x"}, {loss.name}, feeds, 6);
  HostOpOrder order;
  SetExecutionObserver(&order);
  const Trajectory got = Train(b, kSim0, Mode::kPipelined, {"x"}, {loss.name}, feeds, 6);
  SetExecutionObserver(nullptr);
  ExpectSameTrajectory(expected, got);
  // sgd, scale, sgd: a scale of the next run between two updates of one
  // run. In ready order (first come, first served) the four updates of a
  // run would all begin before the next run's first scale.
  EXPECT_GE(order.Count({"sgd", "scale", "sgd"}), 4);  // runs 1..4 at least
}

// Records the Param of every host update (sgd) in the order they begin.
class HostUpdateOrder : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override {
    if (e.is_copy || !e.place.is_host() || e.op->type != "sgd") return;
    std::lock_guard<std::mutex> lock(mu_);
    params_.push_back(e.op->inputs.at("Param")[0]);
  }
  std::vector<std::string> params() {
    std::lock_guard<std::mutex> lock(mu_);
    return params_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> params_;
};

// Updates held for the commit start in the order their gradients came
// down (the backward's: the last layer's first), not in program order,
// which would have the one host thread wait for the first layer's gradient,
// the last to come, before any update begins (GPT's offloaded optimizer:
// no overlap of host updates with the backward). The values stay exact.
TEST(Commit, HeldUpdatesStartInTheOrderTheirGradientsArrive) {
  ProgramBuilder b;
  const Var loss = HostWeightsDeviceLayers(b, /*scale_on_host=*/false);
  ASSERT_TRUE(loss.valid());
  const FeedsForStep feeds = RandomBatches(3, /*seed=*/11);
  const Trajectory expected = Train(b, kSim0, Mode::kInOrder, {"x"}, {loss.name}, feeds, 3);
  HostUpdateOrder order;
  SetExecutionObserver(&order);
  const Trajectory got = Train(b, kSim0, Mode::kConcurrent, {"x"}, {loss.name}, feeds, 3);
  SetExecutionObserver(nullptr);
  ExpectSameTrajectory(expected, got);
  const std::vector<std::string> backward = {"w3", "w2", "w1", "w0"};
  std::vector<std::string> want;
  for (int run = 0; run < 3; ++run) want.insert(want.end(), backward.begin(), backward.end());
  EXPECT_EQ(order.params(), want);
}

// Allocations on sim:0 of one steady-state training run of a residual
// block, out = h + tanh(h) with h = relu(x w) on sim:0, mean loss, SGD,
// in `mode`; with `fetch_add_grads`, the add's two gradients are fetched
// too. Also returns the fetched loss of each of the three runs.
int64_t ResidualStepAllocations(Mode mode, bool fetch_add_grads, std::vector<float>* losses) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({16, 32}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({32, 32}),
                            Initializer::Uniform(-0.5, 0.5, /*seed=*/3));
  Var h = b.Relu(b.Matmul(x, w));
  Var t = b.Tanh(h);
  Var loss = b.Mean(b.ElementwiseAdd(h, t));
  SGD sgd(0.1);
  EXPECT_OK(sgd.Minimize(&b, loss));
  std::vector<std::string> fetches = {loss.name};
  for (const OpDesc& op : b.main_program().block().ops()) {
    if (op.type != "elementwise_add_grad" || !fetch_add_grads) continue;
    fetches.push_back(op.Output("X@GRAD"));
    fetches.push_back(op.Output("Y@GRAD"));
  }
  EXPECT_EQ(fetches.size(), fetch_add_grads ? 3u : 1u);
  ExecutorOptions options;
  options.in_order = mode == Mode::kInOrder;
  options.schedule_trial.enabled = false;
  Executor exe(kSim0, options);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan = exe.Prepare(b.main_program(), scope, {"x"}, fetches);
  EXPECT_OK(plan.status());
  if (!plan.ok()) return -1;
  std::mt19937 rng(5);
  const Tensor batch = Floats(Shape({16, 32}), &rng);
  Allocator* sim = (*DeviceRegistry::Global().GetDevice(kSim0))->allocator();
  int64_t before = 0;
  for (int run = 0; run < 3; ++run) {
    if (run == 2) before = sim->GetStats().num_allocs;
    absl::StatusOr<std::vector<Tensor>> got = exe.Run(plan->get(), &scope, {{"x", batch}});
    EXPECT_OK(got.status());
    if (!got.ok()) return -1;
    losses->push_back(got->at(0).data<float>()[0]);
  }
  return sim->GetStats().num_allocs - before;
}

// elementwise_add_grad binds both gradients of an add whose operands are
// not broadcast to Out@GRAD's own buffer (KernelDef::ForwardsInput) where
// the plan allows it: two fewer device allocations a run than when the
// gradients are fetched (the plan then keeps them apart), and the same
// losses, in order and concurrently.
TEST(ForwardedInputs, AnAddsGradientsShareOutGradsBufferUnlessFetched) {
  for (Mode mode : {Mode::kInOrder, Mode::kConcurrent}) {
    SCOPED_TRACE(mode == Mode::kInOrder ? "in order" : "concurrent");
    std::vector<float> forwarded_losses, kept_losses;
    const int64_t forwarded = ResidualStepAllocations(mode, false, &forwarded_losses);
    const int64_t kept = ResidualStepAllocations(mode, true, &kept_losses);
    EXPECT_EQ(kept - forwarded, 2);
    EXPECT_EQ(forwarded_losses, kept_losses);
    ASSERT_EQ(forwarded_losses.size(), 3u);
    EXPECT_NE(forwarded_losses[0], forwarded_losses[2]);  // trained
  }
}

// Workload 1 pipelined: the lookup of step n + 1 does not wait for step n's
// sparse update (only for the rows it writes), and the table after 6 steps
// is the in-order one, bit for bit, whether consecutive batches share ids
// (rows copied after the update) or not.
TEST(Pipelining, SparseLookupsOverlapTheUpdateAndKeepTheTableExact) {
  for (bool shared_ids : {true, false}) {
    SCOPED_TRACE(shared_ids ? "consecutive batches share ids" : "disjoint batches");
    ProgramBuilder b;
    EmbeddingConfig config;
    config.rows = 4096;
    config.dim = 8;
    config.batch = 64;
    config.is_sparse = true;
    config.learning_rate = 0.5;
    ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
    auto feeds = [&](int step) {
      std::vector<int64_t> ids(64);
      for (int k = 0; k < 64; ++k) {
        // shared: ids 0..31 in every batch; else each step its own range
        ids[k] = shared_ids ? (k % 2 == 0 ? k / 2 : 100 + 64 * step + k) : 64 * step + k;
      }
      return FeedMap{{m.ids.name, Int64s(ids)}};
    };
    const Trajectory expected =
        Train(b, kSim0, Mode::kInOrder, {m.ids.name}, {m.loss.name}, feeds, 6);
    for (Mode mode : {Mode::kConcurrent, Mode::kPipelined}) {
      HostOpOrder order;
      SetExecutionObserver(&order);
      const Trajectory got = Train(b, kSim0, mode, {m.ids.name}, {m.loss.name}, feeds, 6);
      SetExecutionObserver(nullptr);
      ExpectSameTrajectory(expected, got);
      if (mode == Mode::kConcurrent) {
        EXPECT_EQ(order.UpdatesWithTheNextLookupAhead(), 0);
      } else {
        EXPECT_GE(order.UpdatesWithTheNextLookupAhead(), 4);  // steps 1..4 at least
      }
    }
  }
}

// A bad id in a pipelined run: that run returns the lookup's error, the run
// started after it is cancelled naming it, the run before it is unharmed,
// nothing is left running and the next runs work.
TEST(Pipelining, BadIdFailsItsRunCancelsTheNextAndTheNextRunsWork) {
  ProgramBuilder b;
  EmbeddingConfig config;
  config.rows = 100;
  config.dim = 4;
  config.batch = 3;
  config.is_sparse = true;
  ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
  auto feeds = [&](int64_t id) { return FeedMap{{m.ids.name, Int64s({1, id, 2})}}; };
  ASSERT_OK(exe.Run(plan.get(), &scope, feeds(3)).status());  // the first run is synchronous
  ASSERT_OK_AND_ASSIGN(RunHandle good, exe.RunAsync(plan.get(), &scope, feeds(4)));
  ASSERT_OK_AND_ASSIGN(RunHandle bad, exe.RunAsync(plan.get(), &scope, feeds(100)));
  ASSERT_OK_AND_ASSIGN(RunHandle after, exe.RunAsync(plan.get(), &scope, feeds(5)));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, good.Wait());
  EXPECT_TRUE(std::isfinite(out[0].data<float>()[0]));
  absl::StatusOr<std::vector<Tensor>> failed = bad.Wait();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(failed.status().message(), HasSubstr("lookup_table"));
  EXPECT_THAT(failed.status().message(), HasSubstr("100"));
  absl::StatusOr<std::vector<Tensor>> cancelled = after.Wait();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(cancelled.status().message(), HasSubstr("100"));
  EXPECT_EQ(after.Wait().status().code(), absl::StatusCode::kFailedPrecondition);  // once only
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> next, exe.Run(plan.get(), &scope, feeds(6 + i)));
    EXPECT_TRUE(std::isfinite(next[0].data<float>()[0]));
  }
}

}  // namespace
}  // namespace tandem
