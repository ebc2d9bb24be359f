// IDX files (the MNIST / Fashion-MNIST format), plain or gzip-compressed.
//
//   ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile("train-images-idx3-ubyte.gz"));
//   images.type;              // IdxType::kUint8
//   images.dims;              // {60000, 28, 28}
//   images.data.data();       // 60000 * 28 * 28 bytes, host byte order
//
// Format: two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16,
// 0x0C int32, 0x0D float32, 0x0E float64), the number of dims, each dim as
// a big-endian uint32, then the elements in row-major order, big-endian.
// A gzip file (by its magic) is decompressed while reading; byte offsets in
// messages then count decompressed bytes. Errors name the file and the
// byte offset: a short file is DataLoss (truncated), as is corrupt gzip
// data; a bad magic, an unknown type code, zero dims or bytes left after
// the last element are InvalidArgument; a missing file is NotFound.
// Functions are synchronous and thread-safe.
#ifndef TANDEM_DATA_IDX_H_
#define TANDEM_DATA_IDX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem {

enum class IdxType : uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

// Bytes per element of `type`.
int IdxTypeSize(IdxType type);

// An IDX array read into memory.
struct IdxArray {
  IdxType type = IdxType::kUint8;
  std::vector<int64_t> dims;  // dims[0]: items (examples)
  std::vector<uint8_t> data;  // elements in host byte order

  int64_t num_items() const { return dims.empty() ? 0 : dims[0]; }
  // Elements per item: the product of dims[1..].
  int64_t item_elements() const;
  // Element `i` (flat index) as a double.
  double Value(int64_t i) const;
};

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

}  // namespace tandem

#endif  // TANDEM_DATA_IDX_H_
