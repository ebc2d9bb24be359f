// Writes the seed corpus of //tests/fuzz:infer_shape_fuzzer: the ops of the
// models' training programs (Fashion-MNIST MLP and CNN with SGD, Momentum
// and Adam, the CTR model with sparse tables, the embedding model, the crop
// workload) and of their startup programs, each with its inputs' declared
// metas (at most kPerType distinct ones per op type), then "<type>\n" alone
// (every default) for each registered op that none of them uses.
//
//   bazel run //tests/fuzz:infer_shape_fuzzer_seeds -- $PWD/tests/fuzz/infer_shape_fuzzer_corpus
//
// Files are named <type>.<n>; existing files of that directory are replaced.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "framework/program/program_builder.h"
#include "glog/logging.h"
#include "models/crop/crop_model.h"
#include "models/ctr/ctr_model.h"
#include "models/embedding/embedding_model.h"
#include "models/fashion_mnist/fashion_mnist_model.h"
#include "tests/fuzz/infer_shape_fuzz_input.h"

namespace tandem {
namespace {

constexpr int kPerType = 3;

void Check(const absl::Status& s) { CHECK(s.ok()) << s; }

class Seeds {
 public:
  void Add(const Program& program) {
    const Block& block = program.block();
    for (const OpDesc& op : block.ops()) {
      std::map<std::string, std::vector<TensorMeta>> inputs;
      for (const auto& [arg, vars] : op.inputs) {
        for (const std::string& v : vars) {
          const VarDesc* d = block.FindVar(v);
          CHECK(d != nullptr) << op.type << " reads undeclared " << v;
          inputs[arg].push_back({d->dtype, d->shape, d->kind == VarKind::kSelectedRows});
        }
      }
      std::set<std::string>& seen = by_type_[op.type];
      if (seen.size() < kPerType) seen.insert(EncodeFuzzOp(op, inputs));
    }
  }

  void AddBuilder(ProgramBuilder& b) {
    Check(b.status());
    Add(b.main_program());
    Add(b.startup_program());
  }

  void Write(const std::filesystem::path& dir) {
    for (const std::string& type : OpRegistry::Global().RegisteredOps()) {
      if (by_type_[type].empty()) by_type_[type].insert(type + "\n");
    }
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    int files = 0;
    for (const auto& [type, seeds] : by_type_) {
      int n = 0;
      for (const std::string& bytes : seeds) {
        std::ofstream out(dir / absl::StrCat(type, ".", n++), std::ios::binary);
        out << bytes;
        CHECK(out.good()) << "cannot write into " << dir;
        ++files;
      }
    }
    std::printf("%d seeds for %zu op types in %s\n", files, by_type_.size(), dir.c_str());
  }

 private:
  std::map<std::string, std::set<std::string>> by_type_;
};

void AddFashionMnist(FashionMnistArch arch, Optimizer* optimizer, Seeds* seeds) {
  ProgramBuilder b;
  FashionMnistConfig config;
  config.arch = arch;
  Check(BuildFashionMnistModel(config, optimizer, &b).status());
  seeds->AddBuilder(b);
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: infer_shape_fuzzer_seeds DIR\n");
    return 2;
  }
  using namespace tandem;  // NOLINT: a small main
  Seeds seeds;
  SGD sgd(0.01);
  Momentum momentum(0.01, 0.9, /*use_nesterov=*/true);
  Adam adam(1e-3);
  AddFashionMnist(FashionMnistArch::kMlp, &sgd, &seeds);
  AddFashionMnist(FashionMnistArch::kCnn, &momentum, &seeds);
  AddFashionMnist(FashionMnistArch::kMlp, &adam, &seeds);
  {
    ProgramBuilder b;
    CtrModelConfig config;
    config.vocab_sizes = {1000, 2000};
    Adam ctr_adam(1e-3);
    Check(BuildCtrModel(config, &ctr_adam, &b).status());
    seeds.AddBuilder(b);
  }
  for (bool sparse : {false, true}) {
    ProgramBuilder b;
    EmbeddingConfig config;
    config.rows = 1000;
    config.is_sparse = sparse;
    Check(BuildEmbeddingModel(config, &b).status());
    seeds.AddBuilder(b);
  }
  {
    ProgramBuilder b;
    Check(BuildCropModel(/*slice_on_cpu=*/true, &b).status());
    seeds.AddBuilder(b);
  }
  seeds.Write(argv[1]);
  return 0;
}
