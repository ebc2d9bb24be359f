// Converts Tandem checkpoints (framework/persistence/checkpoint.h, e.g. what
// --checkpoint_dir of an example writes) to safetensors files and back, and
// lists the tensors of either, so a model trained here opens in PyTorch
// (safetensors.torch.load_file) and one from PyTorch loads here.
//
//   bazel run //tools:safetensors_convert -- --in=/tmp/fm/checkpoint --out=/tmp/fm.safetensors
//   bazel run //tools:safetensors_convert -- --in=/tmp/torch.safetensors --out=/tmp/fm/checkpoint
//   bazel run //tools:safetensors_convert -- --in=/tmp/fm.safetensors   # lists the tensors
//
// A path ending in ".safetensors" is a safetensors file, any other a
// checkpoint. A checkpoint's tensors are read onto the places they were
// saved from (a GPU checkpoint needs the GPU); a safetensors file's onto the
// host, so a checkpoint written from one restores its tensors on the host
// (the examples' --resume moves them to the places their startup gives).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "framework/base/status_macros.h"
#include "framework/persistence/checkpoint.h"
#include "framework/persistence/safetensors.h"
#include "gflags/gflags.h"

DEFINE_string(in, "", "the checkpoint or .safetensors file to read");
DEFINE_string(out, "", "where to write the conversion (nothing: list --in's tensors)");
DEFINE_string(metadata, "", "for a .safetensors --out: key=value[,key=value...] metadata");

namespace tandem {
namespace {

bool IsSafetensors(const std::string& path) { return absl::EndsWith(path, ".safetensors"); }

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(const std::string& flag) {
  std::map<std::string, std::string> metadata;
  if (flag.empty()) return metadata;
  for (absl::string_view item : absl::StrSplit(flag, ',')) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--metadata: '", item, "' is not key=value"));
    }
    metadata[kv[0]] = kv[1];
  }
  return metadata;
}

absl::Status Main() {
  if (FLAGS_in.empty()) return absl::InvalidArgumentError("--in is required");
  ASSIGN_OR_RETURN(const auto metadata, ParseMetadata(FLAGS_metadata));
  Scope scope;
  std::map<std::string, std::string> file_dtypes, in_metadata;
  if (IsSafetensors(FLAGS_in)) {
    ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(FLAGS_in));
    for (SafetensorsTensor& t : contents.tensors) {
      file_dtypes[t.name] = t.file_dtype;
      scope.Var(t.name)->set(std::move(t.tensor));
    }
    in_metadata = std::move(contents.metadata);
  } else {
    RETURN_IF_ERROR(LoadCheckpoint(FLAGS_in, &scope));
  }
  const std::vector<std::string> names = scope.Names();
  if (FLAGS_out.empty()) {
    for (const auto& [key, value] : in_metadata) {
      std::printf("metadata %s = %s\n", key.c_str(), value.c_str());
    }
    for (const std::string& name : names) {
      const Tensor& t = scope.Find(name)->tensor();
      auto file_dtype = file_dtypes.find(name);
      std::printf("%s %s%s on %s%s\n", name.c_str(), std::string(DataTypeName(t.dtype())).c_str(),
                  t.shape().ToString().c_str(), t.place().ToString().c_str(),
                  file_dtype == file_dtypes.end()
                      ? ""
                      : absl::StrCat(" (", file_dtype->second, " in the file)").c_str());
    }
    return absl::OkStatus();
  }
  if (IsSafetensors(FLAGS_out)) {
    RETURN_IF_ERROR(SaveSafetensors(scope, names, FLAGS_out, metadata));
  } else {
    if (!metadata.empty()) {
      return absl::InvalidArgumentError("--metadata needs a .safetensors --out");
    }
    RETURN_IF_ERROR(SaveCheckpoint(scope, names, FLAGS_out));
  }
  std::printf("wrote %zu tensors to %s\n", names.size(), FLAGS_out.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "converts a Tandem checkpoint to a .safetensors file (PyTorch, JAX, Hugging Face) or back,\n"
      "or lists the tensors of either:\n"
      "  safetensors_convert --in=CHECKPOINT --out=MODEL.safetensors [--metadata=format=pt]\n"
      "  safetensors_convert --in=MODEL.safetensors --out=CHECKPOINT\n"
      "  safetensors_convert --in=FILE");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const absl::Status s = tandem::Main();
  if (!s.ok()) {
    std::fprintf(stderr, "safetensors_convert: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
