// The tensors framework/persistence/testdata/tandem_written.safetensors holds:
// what :safetensors_interop_writer writes, safetensors_test checks Tandem
// still writes byte for byte, and tools/make_safetensors_testdata.py
// --verify checks the reference reader sees (its tandem_tensors() spells
// the same values out; keep them in step).
//
//   RETURN_IF_ERROR(WriteSafetensors(InteropTensors(), path, InteropMetadata()));
#ifndef TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_TESTDATA_H_
#define TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_TESTDATA_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tandem {

std::vector<std::pair<std::string, Tensor>> InteropTensors();
std::map<std::string, std::string> InteropMetadata();

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PERSISTENCE_SAFETENSORS_TESTDATA_H_
