// Initializers: the startup op each one appends (Xavier fans from the
// shape) and the values it produces, bit-identical on cpu and sim:0.
#include <cmath>
#include <string>
#include <vector>

#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const OpDesc& InitOp(ProgramBuilder& b, const std::string& var) {
  for (const OpDesc& op : b.startup_program().block().ops()) {
    if (op.Output("Out") == var) return op;
  }
  ADD_FAILURE() << "no init op for " << var;
  static const OpDesc* const kNone = new OpDesc();
  return *kNone;
}

double DoubleAttr(const OpDesc& op, const std::string& name) {
  return std::get<double>(op.attrs.at(name));
}

// Default seeds are FNV-1a 64 of the name, shifted right by one: pinned so
// that default initial weights cannot drift between standard libraries.
TEST(Initializer, DefaultSeedIsFnv1aOfTheName) {
  EXPECT_EQ(DefaultSeed(""), int64_t{0xcbf29ce484222325u >> 1});
  EXPECT_EQ(DefaultSeed("a"), int64_t{0xaf63dc4c8601ec8cu >> 1});        // FNV-1a test vector
  EXPECT_EQ(DefaultSeed("foobar"), int64_t{0x85944171f73967e8u >> 1});   // FNV-1a test vector
  EXPECT_EQ(DefaultSeed("conv"), int64_t{424751549012428035});
  EXPECT_EQ(DefaultSeed("\xff"), int64_t{6319176063649936823});  // bytes taken unsigned

  ProgramBuilder b;
  b.CreateParameter("conv", DataType::kFloat32, Shape({2}), Initializer::Uniform(-1, 1));
  Var x = b.CreateParameter("x", DataType::kFloat32, Shape({2}), Initializer::Constant(1));
  Var y = b.Dropout(x, 0.5);
  ASSERT_OK(b.status());
  EXPECT_EQ(std::get<int64_t>(InitOp(b, "conv").attrs.at("seed")), 424751549012428035);
  EXPECT_EQ(InitOp(b, "x").attrs.count("seed"), 0u);
  const OpDesc& dropout = b.main_program().block().ops().back();
  ASSERT_EQ(dropout.type, "dropout");
  EXPECT_EQ(std::get<int64_t>(dropout.attrs.at("seed")), DefaultSeed(y.name));
  EXPECT_NE(DefaultSeed(y.name), DefaultSeed("conv"));
}

TEST(Initializer, XavierFansComeFromTheShape) {
  ProgramBuilder b;
  b.CreateParameter("fc", DataType::kFloat32, Shape({30, 20}), Initializer::XavierUniform(5));
  b.CreateParameter("conv", DataType::kFloat32, Shape({8, 4, 3, 3}), Initializer::XavierNormal());
  b.CreateParameter("bias", DataType::kFloat32, Shape({10}), Initializer::XavierUniform());
  b.CreateParameter("scalar", DataType::kFloat32, Shape(), Initializer::XavierNormal());
  b.CreateParameter("n", DataType::kFloat64, Shape({3}), Initializer::Normal(0.5, 0.25, 9));
  ASSERT_OK(b.status());

  const OpDesc& fc = InitOp(b, "fc");
  EXPECT_EQ(fc.type, "uniform_random");
  EXPECT_DOUBLE_EQ(DoubleAttr(fc, "max"), std::sqrt(6.0 / (30 + 20)));
  EXPECT_DOUBLE_EQ(DoubleAttr(fc, "min"), -std::sqrt(6.0 / (30 + 20)));
  EXPECT_EQ(std::get<int64_t>(fc.attrs.at("seed")), 5);
  // [out_c, in_c, kh, kw]: fan_in = 4 * 9, fan_out = 8 * 9.
  const OpDesc& conv = InitOp(b, "conv");
  EXPECT_EQ(conv.type, "gaussian_random");
  EXPECT_DOUBLE_EQ(DoubleAttr(conv, "std"), std::sqrt(2.0 / (36 + 72)));
  EXPECT_DOUBLE_EQ(DoubleAttr(conv, "mean"), 0.0);
  EXPECT_EQ(std::get<int64_t>(conv.attrs.at("seed")), DefaultSeed("conv"));
  EXPECT_DOUBLE_EQ(DoubleAttr(InitOp(b, "bias"), "max"), std::sqrt(6.0 / 20));
  EXPECT_DOUBLE_EQ(DoubleAttr(InitOp(b, "scalar"), "std"), 1.0);
  const OpDesc& n = InitOp(b, "n");
  EXPECT_EQ(n.type, "gaussian_random");
  EXPECT_DOUBLE_EQ(DoubleAttr(n, "mean"), 0.5);
  EXPECT_DOUBLE_EQ(DoubleAttr(n, "std"), 0.25);
  EXPECT_EQ(std::get<DataType>(n.attrs.at("dtype")), DataType::kFloat64);
}

TEST(Initializer, ValuesAreSeededIdenticalOnEveryPlaceAndDistributedAsAsked) {
  std::vector<std::vector<double>> normal_by_place, xavier_by_place;
  for (const char* place : {"cpu", "sim:0"}) {
    ProgramBuilder b;
    b.CreateParameter("n", DataType::kFloat32, Shape({200, 100}),
                      Initializer::Normal(0.5, 0.25, 9));
    b.CreateParameter("x", DataType::kFloat32, Shape({200, 100}), Initializer::XavierNormal(3));
    b.CreateParameter("u", DataType::kFloat32, Shape({200, 100}), Initializer::XavierUniform(3));
    ASSERT_OK(b.status());
    Executor exe(*ParsePlace(place));
    Scope scope;
    ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
    EXPECT_EQ(scope.Find("n")->tensor().place(), *ParsePlace(place));
    normal_by_place.push_back(ToDoubles(scope.Find("n")->tensor()));
    xavier_by_place.push_back(ToDoubles(scope.Find("x")->tensor()));
    const std::vector<double> u = ToDoubles(scope.Find("u")->tensor());
    const double limit = std::sqrt(6.0 / 300);
    double max_abs = 0;
    for (double v : u) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_LE(max_abs, limit);
    EXPECT_GT(max_abs, 0.99 * limit);
  }
  EXPECT_EQ(normal_by_place[0], normal_by_place[1]);
  EXPECT_EQ(xavier_by_place[0], xavier_by_place[1]);
  auto moments = [](const std::vector<double>& v) {
    double sum = 0, sq = 0;
    for (double x : v) sum += x;
    const double mean = sum / v.size();
    for (double x : v) sq += (x - mean) * (x - mean);
    return std::make_pair(mean, std::sqrt(sq / v.size()));
  };
  const auto [n_mean, n_std] = moments(normal_by_place[0]);
  EXPECT_NEAR(n_mean, 0.5, 0.01);
  EXPECT_NEAR(n_std, 0.25, 0.01);
  const auto [x_mean, x_std] = moments(xavier_by_place[0]);
  EXPECT_NEAR(x_mean, 0.0, 0.003);
  EXPECT_NEAR(x_std, std::sqrt(2.0 / 300), 0.003);
}

}  // namespace
}  // namespace tandem
