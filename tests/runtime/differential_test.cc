// Differential test of the executor: seeded random training programs
// (tests/runtime/random_program.h) over cpu, sim:0 and sim:1, each run in
// order (the reference) and in every other mode of the executor
// (concurrent and pipelined with 1, 2 and 4 host workers, three runs in
// flight, handles waited in reverse order, Run between RunAsync and Wait,
// delayed sim streams, graph capture, updates not held for the commit:
// ExecutorOptions::atomic_updates off); every fetch of every step and every
// scope variable at the end must be bitwise the reference's, and no fetched
// tensor may change after its run returned it. Any error fails too.
//
// Environment (a long run by hand, e.g. 5000 programs from seed 1):
//   TANDEM_DIFFERENTIAL_PROGRAMS  programs (default kDefaultPrograms)
//   TANDEM_DIFFERENTIAL_SEED      the first seed (default 1)
//   TANDEM_DIFFERENTIAL_STEPS     training steps per run (default 4)
//   TANDEM_DIFFERENTIAL_MODES     comma-separated modes (ExecModeName) to
//                                 compare; default all
//   TANDEM_DIFFERENTIAL_SUMMARIES failing seeds whose program summary is
//                                 printed (default 20; the rest one line)
//   TANDEM_DIFFERENTIAL_VERBOSE   1: print every program's summary
//   TANDEM_DIFFERENTIAL_FETCH_PARAMETERS  0: never fetch a parameter (the
//                                 same programs otherwise)
//   TANDEM_DIFFERENTIAL_MAX_OPS   forward ops drawn at most (default 12)
//   TANDEM_DIFFERENTIAL_HANG_S    a run longer than this aborts (default 120)
//   TANDEM_DIFFERENTIAL_PLACES    device places the guards draw from besides
//                                 cpu (default sim:0,sim:1; e.g. gpu:0,sim:0)
//
//   bazel test //tests/runtime:differential_test --test_output=errors
//     --test_env=TANDEM_DIFFERENTIAL_PROGRAMS=5000 --test_timeout=3600
// (4 shards of 1250 programs, about 4 minutes each on 2 cores: mostly the
// delayed modes' sleeps). Each shard prints its counts at the end: programs,
// runs, failures and seconds per mode, and the failures grouped by mode and
// cause with their seeds.
//
// A failure names the seed and the mode; a crash or a hang prints the seed
// and mode of the run it happened in. To reproduce one program:
//   --test_env=TANDEM_DIFFERENTIAL_SEED=N --test_env=TANDEM_DIFFERENTIAL_PROGRAMS=1
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/place/place.h"
#include "gtest/gtest.h"
#include "tests/runtime/random_program.h"

namespace tandem {
namespace differential {
namespace {

// The CI run: 4 shards of 250 programs, about 45 s each on 2 cores in the
// opt build (measured: 44-45 s, 90 s for the target with 2 shards at a time;
// 2/3 of it the delayed modes' sleeps).
constexpr int kDefaultPrograms = 1000;
constexpr int kSeedsPerBlock = 10;  // one test per block, so shard_count spreads them
constexpr int kDefaultSteps = 4;

int Programs() {
  return static_cast<int>(
      std::max<int64_t>(0, EnvInt("TANDEM_DIFFERENTIAL_PROGRAMS", kDefaultPrograms)));
}
uint64_t FirstSeed() { return static_cast<uint64_t>(EnvInt("TANDEM_DIFFERENTIAL_SEED", 1)); }
int Steps() {
  return static_cast<int>(std::max<int64_t>(1, EnvInt("TANDEM_DIFFERENTIAL_STEPS", kDefaultSteps)));
}
int NumBlocks() { return (Programs() + kSeedsPerBlock - 1) / kSeedsPerBlock; }

// The modes to compare; `error` names an unknown one.
std::vector<ExecMode> Modes(std::string* error) {
  const char* v = std::getenv("TANDEM_DIFFERENTIAL_MODES");
  if (v == nullptr || *v == '\0') return ComparedModes();
  std::vector<ExecMode> modes;
  for (absl::string_view name : absl::StrSplit(v, ',', absl::SkipEmpty())) {
    ExecMode m;
    if (!ParseExecMode(std::string(name), &m)) {
      std::vector<std::string> known;
      for (ExecMode k : ComparedModes()) known.push_back(ExecModeName(k));
      *error = absl::StrCat("TANDEM_DIFFERENTIAL_MODES: unknown mode '", name,
                            "' (known: ", absl::StrJoin(known, ", "), ")");
      return {};
    }
    modes.push_back(m);
  }
  return modes;
}

// --- Crash and hang reporting -------------------------------------------
// The run in progress, for a crash (signal) or a hang (watchdog) report.

char g_current[256] = "before the first run\n";
std::atomic<int64_t> g_run_started_ms{0};  // 0: no run in progress
struct sigaction g_previous[32];

void SetCurrent(uint64_t seed, const std::string& mode, bool running) {
  std::snprintf(g_current, sizeof(g_current),
                "%s seed %llu mode %s%s (reproduce with "
                "TANDEM_DIFFERENTIAL_SEED=%llu TANDEM_DIFFERENTIAL_PROGRAMS=1)\n",
                running ? "during" : "after", static_cast<unsigned long long>(seed), mode.c_str(),
                running ? "" : ", no run in progress", static_cast<unsigned long long>(seed));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void OnFatalSignal(int sig) {
  const char prefix[] = "\n*** differential_test: fatal signal ";
  (void)!write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  (void)!write(STDERR_FILENO, g_current, strlen(g_current));
  // The previous handler (default, or a sanitizer's) handles the signal
  // when it comes again: the faulting instruction re-executes, abort()
  // raises again, a kill is re-sent.
  sigaction(sig, &g_previous[sig], nullptr);
  if (sig == SIGTERM || sig == SIGINT) raise(sig);
}

// Prints the run in progress and aborts when one run takes longer than
// `limit_ms` (a deadlock in the executor).
class Watchdog {
 public:
  explicit Watchdog(int64_t limit_ms) : limit_ms_(limit_ms), thread_([this] { Loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      const int64_t started = g_run_started_ms.load();
      if (started != 0 && NowMs() - started > limit_ms_) {
        std::fprintf(stderr, "\n*** differential_test: a run took over %lld s (hang?) %s",
                     static_cast<long long>(limit_ms_ / 1000), g_current);
        std::fflush(stderr);
        std::abort();
      }
    }
  }
  const int64_t limit_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// --- Statistics, printed at the end -------------------------------------

struct ModeStats {
  int runs = 0, failures = 0;
  double seconds = 0;
};

struct Stats {
  int programs = 0, failed_programs = 0;
  int sparse = 0, dense_table = 0, host_param_on_device = 0, param_elsewhere = 0, clipped = 0;
  int layer_ops = 0, bf16 = 0, fp16 = 0, scale_changed = 0;
  double seconds = 0;
  std::map<std::string, ModeStats> modes;  // by name, the reference as "in_order"
  // Failure groups: "<mode>: <cause>" -> seeds.
  std::map<std::string, std::vector<uint64_t>> causes;
  int summaries_printed = 0;
};

Stats& GlobalStats() {
  static Stats* stats = new Stats();
  return *stats;
}

// A failure's cause without its numbers and names: the group it goes in.
std::string Cause(const std::string& message) {
  std::string first = message.substr(0, message.find('\n'));
  std::string out;
  bool in_quote = false;
  for (size_t i = 0; i < first.size(); ++i) {
    const char c = first[i];
    if (c == '0' && i + 1 < first.size() && first[i + 1] == 'x' && !in_quote) {  // an address
      out += "0x#";
      for (i += 2; i < first.size() && std::isxdigit(static_cast<unsigned char>(first[i])); ++i) {
      }
      --i;
      continue;
    }
    if (c == '\'') {  // a quoted name becomes '*'
      if (!in_quote) out += "'*'";
      in_quote = !in_quote;
      continue;
    }
    if (in_quote) continue;
    if (c >= '0' && c <= '9') {
      if (out.empty() || out.back() != '#') out += '#';
      continue;
    }
    out += c;
  }
  // Mismatches: where (fetch / variable), not the values.
  const size_t differs = out.find(" differs in ");
  if (differs != std::string::npos) out = out.substr(0, differs) + " differs";
  if (out.size() > 160) out = out.substr(0, 160) + "...";
  return out;
}

// Whether a float16 program's run ended with a loss scale other than its
// first (a step was skipped, or the scale grew).
bool LossScaleChanged(const GeneratedProgram& program, const Trajectory& t) {
  if (program.loss_scale_var.empty()) return false;
  auto it = t.variables.find(program.loss_scale_var);
  if (it == t.variables.end() || it->second.bytes.size() != sizeof(float)) return false;
  float scale;
  std::memcpy(&scale, it->second.bytes.data(), sizeof(float));
  return scale != static_cast<float>(program.initial_loss_scale);
}

class StatsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Stats& s = GlobalStats();
    std::string report = absl::StrCat(
        "\n=== differential_test: ", s.programs, " programs (", s.sparse, " with a sparse table, ",
        s.dense_table, " with a dense table, ", s.clipped, " clipping gradients, ", s.layer_ops,
        " with layer ops, ", s.bf16, " in bfloat16 and ", s.fp16, " in float16 (AMP; ",
        s.scale_changed, " of them skipped a step or grew the loss scale), ", s.param_elsewhere,
        " with a parameter first read away from its place, ", s.host_param_on_device,
        " of them a host parameter read on a device), ", Steps(), " steps per run, ",
        absl::StrFormat("%.1f", s.seconds), " s; ", s.failed_programs, " programs failed\n");
    for (const auto& [mode, m] : s.modes) {
      absl::StrAppend(&report, absl::StrFormat("  %-24s %5d runs %5d failed %7.1f s\n", mode,
                                               m.runs, m.failures, m.seconds));
    }
    if (!s.causes.empty()) absl::StrAppend(&report, "  failures by mode and cause:\n");
    for (const auto& [cause, seeds] : s.causes) {
      std::vector<uint64_t> some(seeds.begin(), seeds.begin() + std::min<size_t>(seeds.size(), 12));
      absl::StrAppend(&report, "    ", seeds.size(), "x ", cause, "\n      seeds ",
                      absl::StrJoin(some, " "), seeds.size() > some.size() ? " ..." : "", "\n");
    }
    std::fputs(report.c_str(), stdout);
    std::fflush(stdout);
  }
};

[[maybe_unused]] ::testing::Environment* const kStatsPrinter =
    ::testing::AddGlobalTestEnvironment(new StatsPrinter());

// --- The test ------------------------------------------------------------

class DifferentialTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = OnFatalSignal;
    sigemptyset(&action.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT}) {
      sigaction(sig, &action, &g_previous[sig]);
    }
    watchdog_ = new Watchdog(EnvInt("TANDEM_DIFFERENTIAL_HANG_S", 120) * 1000);
  }
  static void TearDownTestSuite() {
    delete watchdog_;
    watchdog_ = nullptr;
  }
  static Watchdog* watchdog_;
};

Watchdog* DifferentialTest::watchdog_ = nullptr;

// Runs `program` in `mode`, timing it and marking it as the run in progress.
Trajectory TimedRun(const GeneratedProgram& program, ExecMode mode, int steps, std::string* error) {
  SetCurrent(program.seed, ExecModeName(mode), /*running=*/true);
  const auto start = std::chrono::steady_clock::now();
  g_run_started_ms.store(NowMs());
  Trajectory t = RunTrajectory(program, mode, steps, error);
  g_run_started_ms.store(0);
  SetCurrent(program.seed, ExecModeName(mode), /*running=*/false);
  ModeStats& m = GlobalStats().modes[ExecModeName(mode)];
  ++m.runs;
  m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

TEST_P(DifferentialTest, RandomTrainingProgramsMatchInOrderInEveryMode) {
  std::string mode_error;
  const std::vector<ExecMode> modes = Modes(&mode_error);
  ASSERT_TRUE(mode_error.empty()) << mode_error;
  const int steps = Steps();
  const int programs = Programs();
  const int64_t max_summaries = EnvInt("TANDEM_DIFFERENTIAL_SUMMARIES", 20);
  Stats& stats = GlobalStats();
  RandomProgramOptions options;
  // Device places besides cpu (default sim:0,sim:1; "gpu:0,sim:0" on a GPU
  // machine): every guard draws from cpu, none and these, the executor's
  // default place from cpu and the first of them.
  if (const char* places = std::getenv("TANDEM_DIFFERENTIAL_PLACES"); places != nullptr) {
    options.guards = {"", "cpu"};
    for (absl::string_view p : absl::StrSplit(places, ',', absl::SkipEmpty())) {
      ASSERT_TRUE(ParsePlace(p).ok()) << "TANDEM_DIFFERENTIAL_PLACES: " << ParsePlace(p).status();
      options.guards.emplace_back(p);
    }
    ASSERT_GT(options.guards.size(), 2u) << "TANDEM_DIFFERENTIAL_PLACES names no place";
    options.default_places = {"cpu", options.guards[2]};
  }
  options.fetch_parameters = EnvInt("TANDEM_DIFFERENTIAL_FETCH_PARAMETERS", 1) != 0;
  options.max_ops = static_cast<int>(
      std::max<int64_t>(options.min_ops, EnvInt("TANDEM_DIFFERENTIAL_MAX_OPS", options.max_ops)));
  const auto block_start = std::chrono::steady_clock::now();
  for (int i = GetParam() * kSeedsPerBlock;
       i < std::min(programs, (GetParam() + 1) * kSeedsPerBlock); ++i) {
    const uint64_t seed = FirstSeed() + static_cast<uint64_t>(i);
    GeneratedProgram program;
    absl::Status built = BuildRandomTrainingProgram(seed, options, &program);
    ++stats.programs;
    if (!built.ok()) {
      ADD_FAILURE() << "seed " << seed << ": the generator failed: " << built;
      stats.causes["generator: " + Cause(std::string(built.message()))].push_back(seed);
      ++stats.failed_programs;
      continue;
    }
    if (EnvInt("TANDEM_DIFFERENTIAL_VERBOSE", 0) != 0) {
      std::fputs(ProgramSummary(program).c_str(), stdout);
    }
    stats.sparse += program.has_sparse_table;
    stats.dense_table += program.has_dense_table;
    stats.clipped += program.clips_gradients;
    stats.layer_ops += program.has_layer_ops;
    stats.bf16 += program.amp == DataType::kBFloat16;
    stats.fp16 += program.amp == DataType::kFloat16;
    stats.host_param_on_device += program.has_host_parameter_used_on_device;
    stats.param_elsewhere += program.has_parameter_used_elsewhere;
    // Failures of this program: "mode: what"; the summary once.
    std::vector<std::string> failures;
    auto fail = [&](ExecMode mode, const std::string& what) {
      ++stats.modes[ExecModeName(mode)].failures;
      stats.causes[absl::StrCat(ExecModeName(mode), ": ", Cause(what))].push_back(seed);
      failures.push_back(absl::StrCat(ExecModeName(mode), ": ", what));
    };
    std::string error;
    const Trajectory expected = TimedRun(program, ExecMode::kInOrder, steps, &error);
    // A fetched tensor that later runs changed fails its mode, but the
    // trajectory (recorded as each run returned) is still compared.
    auto check_kept = [&](ExecMode mode, const Trajectory& t) {
      if (!t.changed_after_run.empty()) fail(mode, "fetch changed later: " + t.changed_after_run);
    };
    if (!error.empty()) {
      fail(ExecMode::kInOrder, error);
    } else if (std::string bad = FirstNonFinite(expected); !bad.empty()) {
      fail(ExecMode::kInOrder, "the reference is not finite: " + bad);
    } else {
      check_kept(ExecMode::kInOrder, expected);
      stats.scale_changed += LossScaleChanged(program, expected);
      for (ExecMode mode : modes) {
        const Trajectory got = TimedRun(program, mode, steps, &error);
        if (!error.empty()) {
          fail(mode, "error: " + error);
          continue;
        }
        const std::string diff = CompareTrajectories(expected, got);
        if (!diff.empty()) fail(mode, "mismatch: " + diff);
        check_kept(mode, got);
      }
    }
    if (failures.empty()) continue;
    ++stats.failed_programs;
    std::string message =
        absl::StrCat("seed ", seed, ": ", failures.size(), " failures (", modes.size(),
                     " modes compared with in_order):\n  ", absl::StrJoin(failures, "\n  "), "\n");
    if (stats.summaries_printed++ < max_summaries) {
      absl::StrAppend(&message, ProgramSummary(program));
    } else {
      absl::StrAppend(&message, "(summary omitted; reproduce with TANDEM_DIFFERENTIAL_SEED=", seed,
                      " TANDEM_DIFFERENTIAL_PROGRAMS=1)");
    }
    ADD_FAILURE() << message;
  }
  stats.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - block_start).count();
}

INSTANTIATE_TEST_SUITE_P(Seeds, DifferentialTest, ::testing::Range(0, NumBlocks()),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("Block", info.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DifferentialTest);

// The generator is a function of the seed: the same program and feeds twice.
TEST(RandomProgram, IsAFunctionOfTheSeed) {
  for (uint64_t seed : {1, 2, 3, 77}) {
    GeneratedProgram a, b;
    ASSERT_TRUE(BuildRandomTrainingProgram(seed, RandomProgramOptions(), &a).ok());
    ASSERT_TRUE(BuildRandomTrainingProgram(seed, RandomProgramOptions(), &b).ok());
    EXPECT_EQ(ProgramSummary(a), ProgramSummary(b));
    EXPECT_EQ(a.builder->main_program().DebugString(), b.builder->main_program().DebugString());
    const FeedMap fa = a.Feeds(2), fb = b.Feeds(2);
    ASSERT_EQ(fa.size(), fb.size());
    for (const auto& [name, t] : fa) {
      ASSERT_EQ(t.NumBytes(), fb.at(name).NumBytes());
      EXPECT_EQ(std::memcmp(t.raw_data(), fb.at(name).raw_data(), t.NumBytes()), 0) << name;
    }
  }
}

// The generator covers what it promises over the CI's seeds: every op
// family, every guard, sparse and dense tables, parameters on the host read
// on a device.
TEST(RandomProgram, CoversTheOpsAndPlaces) {
  std::set<std::string> types, guards;
  int sparse = 0, host_on_device = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    GeneratedProgram p;
    ASSERT_TRUE(BuildRandomTrainingProgram(seed, RandomProgramOptions(), &p).ok()) << seed;
    for (const OpDesc& op : p.builder->main_program().block().ops()) {
      types.insert(op.type);
      if (op.role == OpRole::kForward) guards.insert(op.op_device);
    }
    sparse += p.has_sparse_table;
    host_on_device += p.has_host_parameter_used_on_device;
  }
  const std::vector<std::string> expected_types = {"elementwise_add",
                                                   "elementwise_sub",
                                                   "elementwise_mul",
                                                   "scale",
                                                   "relu",
                                                   "sigmoid",
                                                   "tanh",
                                                   "gelu",
                                                   "matmul",
                                                   "mul",
                                                   "fc",
                                                   "reduce_sum",
                                                   "reduce_mean",
                                                   "slice",
                                                   "softmax",
                                                   "concat",
                                                   "reshape",
                                                   "transpose",
                                                   "split",
                                                   "shape",
                                                   "crop_tensor",
                                                   "mean",
                                                   "square_error_cost",
                                                   "lookup_table",
                                                   "fill_constant",
                                                   "sgd",
                                                   "momentum",
                                                   "adam"};
  for (const std::string& type : expected_types) {
    EXPECT_TRUE(types.count(type)) << type;
  }
  EXPECT_EQ(guards, (std::set<std::string>{"", "cpu", "sim:0", "sim:1"}));
  EXPECT_GT(sparse, 10);
  EXPECT_GT(host_on_device, 10);
}

}  // namespace
}  // namespace differential
}  // namespace tandem
