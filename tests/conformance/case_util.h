// Helpers shared by the conformance case files (cases*.cc): deterministic
// inputs with their float64 views, tolerances and labels.
//
//   auto [x, xa] = case_util::Input(DataType::kFloat32, Shape({2, 3}), ++seed);
//   ConformanceCase c;
//   c.label = case_util::Label("relu", DataType::kFloat32, "[2, 3]");
//   case_util::SetTolerance(&c, DataType::kFloat32, /*reduction=*/3);
//
// Test-only; stateless and thread-safe.
#ifndef TANDEM_TESTS_CONFORMANCE_CASE_UTIL_H_
#define TANDEM_TESTS_CONFORMANCE_CASE_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/reference.h"

namespace tandem::case_util {

inline const std::vector<DataType> kNumeric = {DataType::kFloat32, DataType::kFloat64,
                                               DataType::kInt32, DataType::kInt64};
inline const std::vector<DataType> kNumericWith16Bit = {DataType::kFloat32,  DataType::kFloat64,
                                                        DataType::kInt32,    DataType::kInt64,
                                                        DataType::kBFloat16, DataType::kFloat16};
inline const std::vector<DataType> kFloats = {DataType::kFloat32, DataType::kFloat64};
// The products' dtypes: kFloats and the 16-bit types, which accumulate in
// float32 and round once.
inline const std::vector<DataType> kFloatsWith16Bit = {DataType::kFloat32, DataType::kFloat64,
                                                       DataType::kBFloat16, DataType::kFloat16};

// Tolerances of a result of dtype `t` whose elements each sum about
// `reduction` terms; integers are exact. A 16-bit result is its float32
// sum rounded once: within two of its units in the last place
// (bfloat16 2^-7, float16 2^-10 relative) plus float32's summation error.
void SetTolerance(ConformanceCase* c, DataType t, int64_t reduction = 1);

// A random input (RandomTensor) and its float64 view (the values the
// kernel really sees).
std::pair<Tensor, reference::Array> Input(DataType t, const Shape& s, uint64_t seed);

// "op dtype what", e.g. "relu float32 [2, 3]".
std::string Label(const std::string& op, DataType t, const std::string& what);

// An update op's case `c` (float32 Param, dense Grad) with its Grad given in
// `grad_type` (bfloat16 or float16: a mixed-precision gradient the kernel
// widens), the label saying so; `*grad` gets the 16-bit values as float64.
ConformanceCase WithLowPrecisionGrad(const ConformanceCase& c, DataType grad_type,
                                     reference::Array* grad);

// X and Y shapes with the elementwise `axis`: same shape, row, column and
// both-sided broadcasts, 0-d, scalar sides, empty, axis alignment, odd sizes.
struct BroadcastConfig {
  Shape x, y;
  int64_t axis;
};
const std::vector<BroadcastConfig>& BroadcastConfigs();

}  // namespace tandem::case_util

#endif  // TANDEM_TESTS_CONFORMANCE_CASE_UTIL_H_
