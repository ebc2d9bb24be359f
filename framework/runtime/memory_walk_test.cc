// The memory walk alone (memory_walk.h): allocations, frees after the last
// use and on a rebind, in-place updates, kept copy sources, fetch copies and
// where each place peaks. EstimateMemory's tests (tests/runtime) check it on
// whole programs against the allocators.
#include "framework/runtime/memory_walk.h"

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
  SetLastUses({{0, 1}, {1, 2}, {2, 3}}, &m);
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
  SetLastUses({{0}, {0}, {0, 1}}, &m);
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
  SetLastUses({{0}, {0, 1}, {1, 2}}, &m);
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
  SetLastUses({{0, 1}, {2, 1}}, &m);
  const MemoryWalkResult r = WalkMemory(m);
  EXPECT_EQ(r.values[0].died, std::numeric_limits<int>::max());
  EXPECT_EQ(r.values[1].bytes, 16);
  EXPECT_EQ(r.values[2].bytes, 12);
  EXPECT_EQ(r.live_after_alloc[kHost], (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(r.live_after_alloc[kDev], (std::vector<int64_t>{16, 28}));
}

}  // namespace
}  // namespace tandem
