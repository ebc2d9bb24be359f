// The input format of //tests/fuzz:infer_shape_fuzzer: bytes that decode to
// one op of the registry (its arguments, attributes, the metas of its inputs
// and maybe the values of its integer inputs), and the encoder that turns an
// op of a real program into such bytes (the seed corpus).
//
//   FuzzOp op = DecodeFuzzOp(data, size);
//   if (op.schema != nullptr) (void)op.schema->infer_shape()(&ctx_of(op));
//   std::string seed = EncodeFuzzOp(desc, {{"X", {meta}}});   // decodes to desc
//
// Layout: the op type and '\n' (a type no op has, or no '\n' at all, picks
// an op of the registry by the type's hash), then bytes read in schema
// order, a missing byte reading as 0 (so "relu\n" alone is the op with every
// optional argument present once and every attribute its default):
//   - per input argument, then per output argument, a count byte c: bit 0
//     leaves an optional argument out; a duplicable one gets
//     (c >> 1) % 8 + 1 variables, others exactly one;
//   - per input variable a meta: a type byte t (dtype AllDataTypes()[(t & 7)
//     % 5], SelectedRows if t & 0x10), a rank byte (% 7) and a dim per rank
//     (Dim() below, never below -1);
//   - per integer input variable whose shape is known and holds at most 64
//     elements, a byte whose bit 0 says that its values follow (Int() each),
//     as the executor gives shape inference for host arguments;
//   - per attribute of the schema, a mode byte: even leaves an attribute
//     with a default out; otherwise (and always for a required one) a value
//     of the declared type: bool a byte's bit 0; int Int(); float Float();
//     string a length byte (% 33) and the bytes; dtype a byte % 5; lists a
//     length byte (% 9) and the elements.
// Dim(), Int() and Float() read one byte: below 16 (8 for floats) an index
// into a table of likely values (kDims, kInts, kFloats), 255 the next eight
// bytes as a little-endian int64 or double, anything else the table entry of
// that byte modulo the table's size.
//
// Variables are named "<Arg>.<k>" for inputs and "<Arg>.out.<k>" for outputs.
// Pure functions; thread-compatible.
#ifndef TANDEM_TESTS_FUZZ_INFER_SHAPE_FUZZ_INPUT_H_
#define TANDEM_TESTS_FUZZ_INFER_SHAPE_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/tensor.h"

namespace tandem {

struct FuzzOp {
  const OpSchema* schema = nullptr;  // null when no op is registered
  OpDesc op;                         // not yet Validate()d: attribute defaults absent
  std::map<std::string, std::vector<TensorMeta>> inputs;
  // Per input argument, a host tensor of values or an uninitialised tensor.
  std::map<std::string, std::vector<Tensor>> values;

  // The host values as InferShapeContext takes them (nullptr: unknown).
  std::map<std::string, std::vector<const Tensor*>> ValuePointers() const;
};

FuzzOp DecodeFuzzOp(const uint8_t* data, size_t size);

// Bytes that DecodeFuzzOp turns into `op` (of a registered type) with
// `inputs` as the metas of its inputs, no input values and the op's
// attributes: exactly, where every duplicable argument has at most 8
// variables and every list attribute at most 8 elements (longer ones are
// cut), and the variables are renamed as in the header comment.
std::string EncodeFuzzOp(const OpDesc& op,
                         const std::map<std::string, std::vector<TensorMeta>>& inputs);

}  // namespace tandem

#endif  // TANDEM_TESTS_FUZZ_INFER_SHAPE_FUZZ_INPUT_H_
