// The memory estimate (framework/runtime/memory_estimate.h): exact bytes of
// small programs, the canonical workloads' estimates against the
// allocators' measured peak of a steady-state step on cpu and sim:0 (within
// 10%), and Prepare refusing plans that cannot fit a place.
#include <unistd.h>

#include <functional>
#include <iostream>
#include <random>

#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/runtime/memory_estimate.h"
#include "framework/runtime/placer.h"
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
  for (const Place& place : {CPUPlace(), kSim0}) {
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
        std::vector<Allocator*> allocators = {CpuAllocator::Default()};
        if (!place.is_host()) allocators.push_back(AllocatorOf(place));
        for (Allocator* a : allocators) a->ResetPeak();
        ASSERT_OK(exe.Run(plan.get(), &scope, w->feeds).status());
        for (Allocator* a : allocators) {
          const int64_t measured = a->GetStats().peak_bytes_in_use;
          const int64_t estimated =
              plan->MemoryEstimate().PeakBytes(a->place() == CPUPlace() ? CPUPlace() : place);
          SCOPED_TRACE(plan->PlacementTable());
          EXPECT_NEAR(static_cast<double>(estimated), static_cast<double>(measured),
                      0.1 * static_cast<double>(measured))
              << a->Name() << ": estimated " << estimated << ", measured " << measured;
          std::cout << w->name << " on " << place.ToString()
                    << (in_order ? ", in order" : ", concurrent") << ": " << a->Name()
                    << " estimated " << estimated << " B, measured " << measured << " B\n";
        }
      }
    }
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
