#include "tests/parallel/data_parallel_testutil.h"

#include <cmath>
#include <memory>

#include "framework/backward/optimizer.h"
#include "framework/persistence/checkpoint.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/ctr/ctr_model.h"
#include "models/fashion_mnist/fashion_mnist_model.h"

namespace tandem {

const std::vector<int64_t> kVocab = {50, 80, 30};

void Build(Kind kind, Model* m) {
  if (kind == Kind::kCtr) {
    CtrModelConfig c;
    c.vocab_sizes = kVocab;
    c.embedding_dim = 8;
    c.hidden = {16, 8};
    Adam adam(0.01);
    absl::StatusOr<CtrModel> ctr = BuildCtrModel(c, &adam, &m->b);
    ASSERT_OK(ctr.status());
    for (const Var& ids : ctr->ids) m->feeds.push_back(ids.name);
    m->feeds.push_back(ctr->label.name);
    m->loss = ctr->loss.name;
    return;
  }
  FashionMnistConfig c;
  c.arch = kind == Kind::kCnn ? FashionMnistArch::kCnn : FashionMnistArch::kMlp;
  c.hidden = {32, 16};
  SGD sgd(0.1);
  absl::StatusOr<FashionMnistModel> fm = BuildFashionMnistModel(c, &sgd, &m->b);
  ASSERT_OK(fm.status());
  m->feeds = {fm->image.name, fm->label.name};
  m->loss = fm->loss.name;
}

FeedMap Feeds(Kind kind, int step, int64_t batch, int64_t bad_row) {
  FeedMap f;
  std::vector<double> label(batch);
  if (kind == Kind::kCtr) {
    for (size_t t = 0; t < kVocab.size(); ++t) {
      std::vector<double> ids(batch);
      for (int64_t i = 0; i < batch; ++i) ids[i] = (step * 13 + i * 7 + t * 3) % kVocab[t];
      if (t == 0 && bad_row >= 0) ids[bad_row] = kVocab[0] + 5;
      f["ids_" + std::to_string(t)] = MakeTensor(DataType::kInt64, Shape({batch}), ids);
    }
    for (int64_t i = 0; i < batch; ++i) label[i] = (step + i) % 3 == 0 ? 1 : 0;
    f["label"] = MakeTensor(DataType::kInt64, Shape({batch}), label);
    return f;
  }
  // Each class its own pattern, so that the models can learn it.
  std::vector<double> image;
  for (int64_t i = 0; i < batch; ++i) {
    label[i] = (i * 3 + step) % 10;
    for (int64_t p = 0; p < 28 * 28; ++p) {
      image.push_back(((p * 31 + static_cast<int64_t>(label[i]) * 97 + step) % 256) / 255.0);
    }
  }
  f["image"] = MakeTensor(DataType::kFloat32, Shape({batch, 28, 28}), image);
  f["label"] = MakeTensor(DataType::kInt64, Shape({batch}), label);
  return f;
}

int64_t BatchOf(Kind kind) { return kind == Kind::kCnn ? 8 : 16; }

std::map<std::string, std::vector<double>> Snapshot(const Program& main, const Scope& scope) {
  std::map<std::string, std::vector<double>> out;
  for (const std::string& name : PersistableVars(main)) {
    out[name] = ToDoubles(scope.Find(name)->tensor());
  }
  return out;
}

Trajectory OneDevice(Kind kind, int steps, const Place& place) {
  Model m;
  Build(kind, &m);
  Executor exe(place);
  Scope scope;
  Trajectory t;
  EXPECT_OK(exe.Run(m.b.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(m.b.main_program(), scope, m.feeds, {m.loss});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return t;
  for (int s = 0; s < steps; ++s) {
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(plan->get(), &scope, Feeds(kind, s, BatchOf(kind)));
    EXPECT_OK(out.status());
    if (!out.ok()) return t;
    t.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  t.state = Snapshot(m.b.main_program(), scope);
  return t;
}

std::unique_ptr<DataParallel> MakeDataParallel(Kind kind, DataParallelOptions o, Model* m) {
  Build(kind, m);
  o.bucket_bytes = 1024;
  absl::StatusOr<std::unique_ptr<DataParallel>> dp =
      DataParallel::Create(m->b.main_program(), m->b.startup_program(), m->feeds, {m->loss}, o);
  EXPECT_OK(dp.status());
  if (!dp.ok()) return nullptr;
  EXPECT_OK((*dp)->Initialize());
  return *std::move(dp);
}

void ExpectClose(const std::vector<double>& want, const std::vector<double>& got,
                 const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5 + 2e-4 * std::abs(want[i])) << what << " [" << i << "]";
  }
}

}  // namespace tandem
