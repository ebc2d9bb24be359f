// Safetensors: export scope variables (a checkpoint's tensors) to the
// format PyTorch, JAX and Hugging Face use, and import them back, so that a
// table or an MLP trained here moves to PyTorch and back.
//
//   // Export the persistable variables (parameters, optimizer state):
//   RETURN_IF_ERROR(SaveSafetensors(builder.main_program(), scope, "/tmp/mlp.safetensors",
//                                   {{"format", "pt"}}));
//   // In Python: safetensors.torch.load_file("/tmp/mlp.safetensors")
//   ...
//   // Import (all tensors of the file; each into its variable's place):
//   RETURN_IF_ERROR(LoadSafetensors("/tmp/mlp.safetensors", &scope));
//   // Or read the file without a scope, e.g. to rename or transpose:
//   ASSIGN_OR_RETURN(SafetensorsContents file, ReadSafetensors("/tmp/from_torch.safetensors"));
//   for (const SafetensorsTensor& t : file.tensors) Use(t.name, t.tensor);  // host tensors
//
// Format (https://github.com/huggingface/safetensors): an unsigned 64-bit
// little-endian header length N; N bytes of UTF-8 JSON, an object mapping
// each tensor name to {"dtype": "F32", "shape": [2, 3], "data_offsets":
// [begin, end]} plus an optional "__metadata__" object of string values,
// padded with trailing spaces; then the tensor bytes, little-endian and
// row-major, at offsets relative to the end of the header.
//
// Dtypes. Written: float32 "F32", float64 "F64", int32 "I32", int64 "I64",
// bool "BOOL" (one byte, 0 or 1), bfloat16 "BF16", float16 "F16". Read:
// those, and types that widen exactly: "I8", "U8", "I16", "U16" to int32;
// "U32" to int64 (SafetensorsTensor::file_dtype keeps the file's name).
// LoadSafetensors also widens a BF16 / F16 tensor (exactly) into a scope
// variable that holds float32 of the same shape: 16-bit checkpoints load
// into float32 programs; the other way (F32 into a 16-bit variable) would
// round and is refused like any other dtype mismatch.
// Other dtypes ("U64", "F8_E4M3", "C64", ...) are InvalidArgument.
//
// Writing: tensors are stored in order of decreasing element size (then in
// the order given), so each is aligned to its element size, and the header
// is padded to a multiple of 8 bytes, as the reference writer does. Device
// tensors are copied to the host one at a time. The file is written
// atomically (AtomicFileWriter: "<path>.tmp", fsync, rename).
//
// Reading is as strict as the reference reader, and bad input is an error,
// never a crash or a silently wrong tensor: a missing file is NotFound; a
// malformed one is DataLoss "safetensors '<path>': ..." naming the tensor
// and the offending value: a file shorter than 8 bytes, a header length
// beyond the file or above 100,000,000 bytes, a header that is not a JSON
// object (it must start with '{'), an entry without a string "dtype", an
// array "shape" of non-negative integers or "data_offsets" of two
// non-negative integers, offsets past the data, overlapping tensors, bytes
// that belong to no tensor, a byte count that does not match dtype and
// shape, a BOOL byte other than 0 or 1, a "__metadata__" value that is not
// a string. Functions are synchronous; not thread-safe for one Scope.
#ifndef TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_H_
#define TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/place/place.h"
#include "framework/program/program.h"
#include "framework/tensor/scope.h"
#include "framework/tensor/tensor.h"

namespace tandem {

// The header's upper bound on N, as the reference implementation's.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// The safetensors name of a Tandem dtype: "F32", "F64", "I32", "I64", "BOOL".
absl::string_view SafetensorsDtypeName(DataType dtype);

// One tensor read from a file.
struct SafetensorsTensor {
  std::string name;
  std::string file_dtype;  // as in the file: "F16", "F32", ...
  Tensor tensor;           // on the host, widened as in the header comment
};

struct SafetensorsContents {
  std::vector<SafetensorsTensor> tensors;  // in the order of their bytes in the file
  std::map<std::string, std::string> metadata;
};

// Reads every tensor and the metadata of the file at `path`.
absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path);

// Writes `tensors` (initialised dense tensors on any place) and `metadata`
// to `path`. InvalidArgument for an empty `path` (before anything is
// written), a repeated or reserved ("__metadata__") name, a name, key or
// value that is not valid UTF-8, or an uninitialised tensor; the errno's
// code naming the file when writing fails.
absl::Status WriteSafetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::string& path,
                              const std::map<std::string, std::string>& metadata = {});

// Saves the dense tensors `names` of `scope`. NotFound for a name the scope
// lacks; InvalidArgument for a variable that does not hold an initialised
// dense tensor; otherwise as WriteSafetensors.
absl::Status SaveSafetensors(const Scope& scope, const std::vector<std::string>& names,
                             const std::string& path,
                             const std::map<std::string, std::string>& metadata = {});

// Saves every persistable variable of `program` (PersistableVars, sorted).
absl::Status SaveSafetensors(const Program& program, const Scope& scope, const std::string& path,
                             const std::map<std::string, std::string>& metadata = {});

struct LoadSafetensorsOptions {
  // Where a tensor goes, by name. Otherwise: where the variable's current
  // tensor is, if the scope holds one; else the host.
  std::map<std::string, Place> places;
  // By default a tensor replacing an initialised dense tensor of the scope
  // must have its dtype (after widening) and shape: else InvalidArgument
  // naming both (a PyTorch nn.Linear weight is [out, in]; transpose it).
  // Set this to replace such variables whatever they held.
  bool allow_dtype_and_shape_change = false;
};

// Loads every tensor of the file at `path` into `scope` (creating the
// variables it lacks). Every tensor is read and checked before the scope
// changes, so on any error the scope is untouched. A place whose device does
// not exist is FailedPrecondition naming the tensor. Other errors as
// ReadSafetensors.
absl::Status LoadSafetensors(const std::string& path, Scope* scope,
                             const LoadSafetensorsOptions& options = {});

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_H_
