// Fuzz target: the shape inference of every registered op (//ops:all and the
// executor's copy ops), on random input metas (dtypes, SelectedRows, ranks,
// dims from 0 to 2^62 and -1), random attribute values of the declared
// types and, for small integer inputs, random values (the input format is
// tests/fuzz/infer_shape_fuzz_input.h). An op its schema refuses, or an
// input whose known dims' product overflows int64, is skipped, as Prepare
// refuses both before inferring. Inference must not crash, and:
//   - an error is a Status whose message names the op;
//   - on success every output it describes is an output argument of the
//     schema; one the op binds gets at most as many metas as it has
//     variables, each with a valid dtype and every dim >= -1.
#include <cstddef>
#include <cstdint>

#include "absl/strings/match.h"
#include "glog/logging.h"
#include "tests/fuzz/infer_shape_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::FuzzOp fuzz = tandem::DecodeFuzzOp(data, size);
  if (fuzz.schema == nullptr || !fuzz.schema->infer_shape()) return 0;
  if (!fuzz.schema->Validate(&fuzz.op).ok()) return 0;
  // What Prepare's validation guarantees of every meta it infers from.
  for (const auto& [arg, metas] : fuzz.inputs) {
    for (const tandem::TensorMeta& m : metas) {
      if (!m.shape.KnownElements().ok()) return 0;
    }
  }
  const tandem::OpDesc& op = fuzz.op;
  tandem::InferShapeContext ctx(op, fuzz.inputs, fuzz.ValuePointers());
  const absl::Status s = fuzz.schema->infer_shape()(&ctx);
  if (!s.ok()) {
    CHECK(absl::StrContains(s.message(), "'" + op.type + "'"))
        << "the error does not name the op: " << s;
    return 0;
  }
  for (const auto& [arg, metas] : ctx.outputs()) {
    bool declared = false;
    for (const tandem::OpSchema::ArgDef& a : fuzz.schema->outputs()) declared |= a.name == arg;
    CHECK(declared) << op.type << " infers " << arg << ", which is not one of its outputs";
    auto bound = op.outputs.find(arg);
    // An optional output left out may be described (nothing reads it).
    if (bound == op.outputs.end()) continue;
    CHECK_LE(metas.size(), bound->second.size()) << op.type << " infers too many " << arg;
    for (const tandem::TensorMeta& m : metas) {
      CHECK_LE(static_cast<int>(m.dtype), static_cast<int>(tandem::AllDataTypes().back()))
          << op.type << " output " << arg;
      for (int64_t d : m.shape.dims()) {
        CHECK_GE(d, -1) << op.type << " output " << arg << " " << m.shape.ToString();
      }
    }
  }
  return 0;
}
