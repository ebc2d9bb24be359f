// A classifier trained on a simulated device moves through a safetensors
// file: exported (device tensors copied to the host), imported into a fresh
// scope on the parameters' places, it computes exactly what the original
// does; without a scope to follow, tensors land on the host or where mapped.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "framework/base/status_macros.h"
#include "framework/persistence/checkpoint.h"
#include "framework/persistence/safetensors.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct Model {
  ProgramBuilder b;
  std::string loss;
};

// fc(8) -> relu -> fc(3) -> softmax_with_cross_entropy -> mean, SGD.
absl::StatusOr<std::unique_ptr<Model>> MakeModel() {
  auto m = std::make_unique<Model>();
  Var x = m->b.Data("x", DataType::kFloat32, Shape({-1, 4}));
  Var label = m->b.Data("label", DataType::kInt64, Shape({-1, 1}));
  Var logits = m->b.Fc(m->b.Relu(m->b.Fc(x, 8)), 3);
  Var loss = m->b.ReduceMean(m->b.SoftmaxWithCrossEntropy(logits, label));
  RETURN_IF_ERROR(SGD(0.5).Minimize(&m->b, loss));
  m->loss = loss.name;
  return m;
}

FeedMap Batch() {
  std::vector<double> xs, ls;
  for (int i = 0; i < 12; ++i) {
    for (int d = 0; d < 4; ++d) xs.push_back((d == i % 3 ? 2.0 : 0.0) + 0.1 * ((i * 7 + d) % 5));
    ls.push_back(i % 3);
  }
  return {{"x", MakeTensor(DataType::kFloat32, Shape({12, 4}), xs)},
          {"label", MakeTensor(DataType::kInt64, Shape({12, 1}), ls)}};
}

// Runs `steps` training steps; returns the loss of each.
absl::StatusOr<std::vector<double>> Steps(Executor* exe, Model* m, Scope* scope, int steps) {
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe->Prepare(m->b.main_program(), *scope, {"x", "label"}, {m->loss}));
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe->Run(plan.get(), scope, Batch()));
    losses.push_back(ToDoubles(out[0])[0]);
  }
  return losses;
}

TEST(SafetensorsModel, ATrainedModelResumesExactlyFromTheFile) {
  const Place sim0 = *ParsePlace("sim:0");
  ASSERT_OK_AND_ASSIGN(const std::unique_ptr<Model> m, MakeModel());
  Executor exe(sim0);
  Scope trained;
  ASSERT_OK(exe.Run(m->b.startup_program(), &trained).status());
  ASSERT_OK_AND_ASSIGN(std::vector<double> first, Steps(&exe, m.get(), &trained, 20));
  EXPECT_LT(first.back(), first.front());
  const std::vector<std::string> names = PersistableVars(m->b.main_program());
  ASSERT_FALSE(names.empty());
  const std::string path = absl::StrCat(::testing::TempDir(), "/mlp.safetensors");
  ASSERT_OK(SaveSafetensors(m->b.main_program(), trained, path, {{"format", "pt"}}));

  // The file holds the device's values, on the host.
  ASSERT_OK_AND_ASSIGN(SafetensorsContents file, ReadSafetensors(path));
  ASSERT_EQ(file.tensors.size(), names.size());
  for (const SafetensorsTensor& t : file.tensors) {
    const Tensor& on_device = trained.Find(t.name)->tensor();
    EXPECT_EQ(t.tensor.place(), CPUPlace()) << t.name;
    EXPECT_EQ(ToDoubles(t.tensor), ToDoubles(on_device)) << t.name;
  }

  // A fresh run of the startup program, then the file: the parameters stay
  // on their device and the next steps are bit for bit the original's.
  Scope resumed;
  ASSERT_OK(exe.Run(m->b.startup_program(), &resumed).status());
  ASSERT_OK(LoadSafetensors(path, &resumed));
  for (const std::string& name : names) {
    EXPECT_EQ(resumed.Find(name)->tensor().place(), trained.Find(name)->tensor().place()) << name;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<double> original, Steps(&exe, m.get(), &trained, 5));
  ASSERT_OK_AND_ASSIGN(std::vector<double> again, Steps(&exe, m.get(), &resumed, 5));
  EXPECT_EQ(again, original);

  // No variables to follow: the host, or the places asked for.
  Scope empty;
  ASSERT_OK(LoadSafetensors(path, &empty));
  for (const std::string& name : names) {
    EXPECT_EQ(empty.Find(name)->tensor().place(), CPUPlace()) << name;
  }
  LoadSafetensorsOptions to_sim1;
  const Place sim1 = *ParsePlace("sim:1");
  to_sim1.places[names[0]] = sim1;
  Scope mapped;
  ASSERT_OK(LoadSafetensors(path, &mapped, to_sim1));
  EXPECT_EQ(mapped.Find(names[0])->tensor().place(), sim1);
  EXPECT_EQ(ToDoubles(mapped.Find(names[0])->tensor()), ToDoubles(empty.Find(names[0])->tensor()));
}

}  // namespace
}  // namespace tandem
