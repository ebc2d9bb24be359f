// The memory walk alone (memory_walk.h): allocations, frees after the last
// use and on a rebind, in-place updates, kept copy sources, fetch copies,
// kernels' scratch, where each place peaks, and two runs in flight. EstimateMemory's tests
// (tests/runtime) check it on whole programs against the allocators.
#include "framework/estimate/memory_walk.h"

#include "gtest/gtest.h"

namespace tandem {
namespace {

const Place kDevice(DeviceType::GPU(), 0);
constexpr int kHost = 0, kDev = 1;  // slots of {cpu, gpu:0}

MemoryProgram TwoPlaces(int vars) {
  MemoryProgram m;
  m.places = {CPUPlace(), kDevice};
  m.vars.resize(vars);
  return m;
}

TEST(MemoryWalk, OutputsAreAllocatedWhileInputsLiveAndFreedAfterTheirLastUse) {
  // w (resident, 100) -> a = f(w) (10) -> b = g(a) (20) -> c = h(b) (30).
  MemoryProgram m = TwoPlaces(4);
  m.vars[0].persistable = true;
  m.residents.push_back({0, kDev, 100, MemoryCategory::kParameter});
  m.ops.push_back({.outputs = {{1, kDev, 10}}});
  m.ops.push_back({.outputs = {{2, kDev, 20}}});
  m.ops.push_back({.outputs = {{3, kDev, 30}}});
  SetUses({{0}, {1}, {2}}, {{1}, {2}, {3}}, &m);
  EXPECT_EQ(m.ops[0].frees, std::vector<int>{});  // w is persistable
  EXPECT_EQ(m.ops[1].frees, std::vector<int>{1});
  EXPECT_EQ(m.ops[2].frees, (std::vector<int>{2, 3}));
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{110, 130, 150}));
  EXPECT_EQ(r.peak[kDev].bytes, 150);  // w + b + c while h runs
  EXPECT_EQ(r.peak[kDev].op, 2);
  EXPECT_EQ(r.peak[kHost].bytes, 0);
  ASSERT_EQ(r.values.size(), 4u);
  EXPECT_EQ(r.values[1].born, 0);
  EXPECT_EQ(r.values[1].died, 1);
  EXPECT_TRUE(r.values[2].live_at(2));
  EXPECT_FALSE(r.values[1].live_at(2));
}

TEST(MemoryWalk, ARebindFreesTheOldValueAndInPlaceUpdatesShareIt) {
  // x = f() (40); x = g(x) (40, a new value); p (resident, 64) updated in place.
  MemoryProgram m = TwoPlaces(2);
  m.vars[1].persistable = true;
  m.residents.push_back({1, kDev, 64, MemoryCategory::kParameter});
  m.ops.push_back({.outputs = {{0, kDev, 40}}});
  m.ops.push_back({.outputs = {{0, kDev, 40}}});
  m.ops.push_back({.outputs = {{1, kDev, 64, /*in_place=*/1}}});
  SetUses({{}, {0}, {0, 1}}, {{0}, {0}, {1}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{104, 144, 104}));
  EXPECT_EQ(r.values.size(), 3u);  // the update made no value
  EXPECT_EQ(r.values[1].died, 1);  // the first x, replaced by g
  EXPECT_EQ(r.values[2].died, 2);  // the second x, after its last use
}

TEST(MemoryWalk, KeptCopySourcesLiveToTheEndAndFetchesGetAHostCopy) {
  // y on the device (50), copied to the host (kept source), fetched from the device.
  MemoryProgram m = TwoPlaces(3);
  m.vars[2].fetched = true;
  m.fetches = {2};
  m.ops.push_back({.outputs = {{0, kDev, 50}}});
  m.ops.push_back({.copy = true, .copy_source = 0, .keep_source = true, .outputs = {{1, kHost}}});
  m.ops.push_back({.outputs = {{2, kDev, 8}}});
  SetUses({{}, {0}, {1}}, {{0}, {1}, {2}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.values[1].bytes, 50);  // the copy takes its source's bytes
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{50, 50, 58}));
  EXPECT_EQ(r.peak[kDev].bytes, 58);
  EXPECT_EQ(r.peak[kDev].op, 2);       // the kept y and the fetched value
  EXPECT_EQ(r.peak[kHost].bytes, 50);  // the copy; the fetched value's host copy is smaller
  EXPECT_EQ(r.peak[kHost].op, 1);
  EXPECT_EQ(r.fetch_values_begin, 3);
  ASSERT_EQ(r.values.size(), 4u);
  EXPECT_EQ(r.values[3].place, kHost);
  EXPECT_EQ(r.values[3].bytes, 8);
}

TEST(MemoryWalk, HeldResidentsOutliveTheirLastUseAndUnboundCopiesTakeTheirOwnBytes) {
  // A fed host value (held by the caller) read once; a copy of a variable with no value.
  MemoryProgram m = TwoPlaces(3);
  m.residents.push_back({0, kHost, 16, MemoryCategory::kFeed, -1, /*held=*/true});
  m.ops.push_back({.copy = true, .copy_source = 0, .outputs = {{1, kDev}}});
  m.ops.push_back({.copy = true, .copy_source = 2, .unbound_bytes = 12, .outputs = {{1, kDev}}});
  SetUses({{0}, {2}}, {{1}, {1}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.values[0].died, std::numeric_limits<int>::max());
  EXPECT_EQ(r.values[1].bytes, 16);
  EXPECT_EQ(r.values[2].bytes, 12);
  EXPECT_EQ(r.live_after_alloc[kHost], (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{16, 28}));
}

TEST(MemoryWalk, ScratchLivesWhileItsOpRuns) {
  // a = f() (10) with 50 bytes of scratch; b = g(a) (20).
  MemoryProgram m = TwoPlaces(3);
  m.ops.push_back(
      {.outputs = {{0, kDev, 10}}, .scratch_bytes = 50, .scratch_var = 2, .scratch_place = kDev});
  m.ops.push_back({.outputs = {{1, kDev, 20}}});
  SetUses({{}, {0}}, {{0}, {1}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{60, 30}));
  ASSERT_EQ(r.values.size(), 3u);
  EXPECT_EQ(r.values[1].category, MemoryCategory::kScratch);
  EXPECT_EQ(r.values[1].var, 2);
  EXPECT_EQ(r.values[1].died, 0);
}

// w (a parameter on the device, 100) and the fed x (host, 8): x@dev = copy(x);
// a = f(x@dev) (10); b = g(a, w) (20); w updated in place from b.
MemoryProgram TrainingStep() {
  MemoryProgram m = TwoPlaces(5);
  m.vars[0].persistable = true;
  m.residents.push_back({0, kDev, 100, MemoryCategory::kParameter});
  m.residents.push_back({1, kHost, 8, MemoryCategory::kFeed, -1, /*held=*/true});
  m.ops.push_back({.copy = true, .copy_source = 1, .keep_source = true, .outputs = {{4, kDev}}});
  m.ops.push_back({.outputs = {{2, kDev, 10}}});
  m.ops.push_back({.outputs = {{3, kDev, 20}}});
  m.ops.push_back({.outputs = {{0, kDev, 100, /*in_place=*/0}}});
  m.pipelined = true;
  SetUses({{1}, {4}, {2, 0}, {0, 3}}, {{4}, {2}, {3}, {0}}, &m);
  return m;
}

TEST(MemoryWalk, OpsWaitForThemselvesTheWritersOfWhatTheyReadOrTheWholeRunBefore) {
  const MemoryProgram m = TrainingStep();
  EXPECT_EQ(m.ops[0].waits_for, 0);
  EXPECT_EQ(m.ops[1].waits_for, 1);
  EXPECT_EQ(m.ops[2].waits_for, 3);  // reads w, which op 3 writes
  EXPECT_EQ(m.ops[3].waits_for, 4);  // writes w: after the whole run before
}

TEST(MemoryWalk, TwoRunsInFlightShareThePersistablesAndHoldTheirOwnValues) {
  const MemoryWalkResult r = WalkMemory(TrainingStep());
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{108, 118, 130, 120}));
  EXPECT_EQ(r.peak[kDev].bytes, 130);
  ASSERT_EQ(r.pipelined.size(), 2u);
  // While the earlier run is at b = g(a, w), the later one may have made
  // x@dev and a (op 2 waits for the update): 130 + 8 + 10.
  EXPECT_EQ(r.pipelined[kDev].bytes, 148);
  EXPECT_EQ(r.pipelined[kDev].op, 2);
  EXPECT_EQ(r.pipelined[kDev].other_op, 1);
  // The host: the earlier run's feed, the later run's, the next run's and
  // RunAsync's copy of it.
  EXPECT_EQ(r.pipelined[kHost].bytes, 32);
  EXPECT_EQ(r.pipelined[kHost].op, 4);
}

// Workload 1's shape: every op of the later run waits for the earlier run's
// update, so the runs meet only once the earlier's ops are done; the device
// value its copy kept (y, 50) is held by its frame until the caller's Wait
// synchronises it, while the later run goes on (issue 31, item 1: the
// measured peak was that much above the estimate). The pipelined peak on
// the device is the earlier's end (y) beside the later's peak (y and g =
// 58), not the in-order one.
TEST(MemoryWalk, AnOverRunHoldsTheSourcesItsCopiesKeptUntilItIsWaitedFor) {
  MemoryProgram m = TwoPlaces(4);
  m.vars[3].persistable = true;
  m.residents.push_back({3, kDev, 0, MemoryCategory::kParameter});
  m.ops.push_back({.outputs = {{0, kDev, 50}}});  // y = f(w)
  m.ops.push_back({.copy = true, .copy_source = 0, .keep_source = true, .outputs = {{1, kHost}}});
  m.ops.push_back({.outputs = {{2, kDev, 8}}});                   // g = h(y@host)
  m.ops.push_back({.outputs = {{3, kDev, 0, /*in_place=*/3}}});  // w -= g
  m.pipelined = true;
  SetUses({{3}, {0}, {1}, {2, 3}}, {{0}, {1}, {2}, {3}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.peak[kDev].bytes, 58);
  ASSERT_EQ(r.pipelined.size(), 2u);
  EXPECT_EQ(r.pipelined[kDev].bytes, 108);  // not 58: the earlier's y is kept to its Wait
  EXPECT_EQ(r.pipelined[kDev].op, 4);       // the earlier run over, not yet waited for
  EXPECT_EQ(r.pipelined[kDev].other_op, 2);  // the later at g
}

TEST(MemoryWalk, InOrderRunsAreNotPipelined) {
  MemoryProgram m = TrainingStep();
  m.pipelined = false;
  EXPECT_TRUE(WalkMemory(m).pipelined.empty());
}

}  // namespace
}  // namespace tandem
