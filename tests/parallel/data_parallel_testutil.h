// What the data-parallel tests share: the models (the Fashion-MNIST MLP
// and CNN with SGD, CTR with its tables on the host and Adam), their
// deterministic global batches, and the one-device run the replicas must
// match.
//
//   Trajectory one = OneDevice(Kind::kCtr, 20);      // losses, then the state
//   ... run DataParallel on Feeds(Kind::kCtr, step, BatchOf(Kind::kCtr)) ...
//   ExpectClose(one.losses, mine.losses, "loss per step");
//
// gtest assertions report mismatches (testonly).
#ifndef TANDEM_TESTS_PARALLEL_DATA_PARALLEL_TESTUTIL_H_
#define TANDEM_TESTS_PARALLEL_DATA_PARALLEL_TESTUTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/sim/sim_device.h"
#include "framework/parallel/data_parallel.h"
#include "framework/place/place.h"
#include "framework/program/program.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/tensor/scope.h"

namespace tandem {

enum class Kind { kMlp, kCnn, kCtr };

// The CTR model's vocabulary per id field.
extern const std::vector<int64_t> kVocab;

struct Model {
  ProgramBuilder b;
  std::vector<std::string> feeds;
  std::string loss;
};

// Builds `kind` into m (gtest failures on error).
void Build(Kind kind, Model* m);
// The global batch of `step`, deterministic. `bad_row` >= 0 puts an id out
// of range there (CTR).
FeedMap Feeds(Kind kind, int step, int64_t batch, int64_t bad_row = -1);
int64_t BatchOf(Kind kind);

struct Trajectory {
  std::vector<double> losses;                        // per step
  std::map<std::string, std::vector<double>> state;  // persistables after the last step
};

// Every persistable of `main` in `scope`, as doubles.
std::map<std::string, std::vector<double>> Snapshot(const Program& main, const Scope& scope);
// `steps` steps of `kind` on one device.
Trajectory OneDevice(Kind kind, int steps, const Place& place = SimPlace(0));
// DataParallel of `kind` (built into m) with `o` (its bucket_bytes set to
// 1 KiB: several buckets per step), initialised; null after a gtest failure.
std::unique_ptr<DataParallel> MakeDataParallel(Kind kind, DataParallelOptions o, Model* m);
// Equal within float32 reassociation (the halves of a batch are summed in
// another order than the whole).
void ExpectClose(const std::vector<double>& want, const std::vector<double>& got,
                 const std::string& what);

}  // namespace tandem

#endif  // TANDEM_TESTS_PARALLEL_DATA_PARALLEL_TESTUTIL_H_
