#include "examples/gpt/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// The bytes of `file`; InvalidArgument when it holds a NUL byte.
absl::StatusOr<std::string> ReadText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("corpus: cannot open '", file.string(), "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("corpus: '", file.string(), "' is not text: a NUL byte at offset ", nul));
  }
  return text;
}

// The files of directory `dir` the corpus reads, in name order.
std::vector<fs::path> TextFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_symlink() || !e.is_regular_file()) continue;
    if (absl::EndsWith(e.path().filename().string(), ".dat")) continue;  // fortune's indexes
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// SplitMix64's output function of `x` (Steele et al.): a well-mixed 64-bit
// value, easy to reproduce in any language (examples/python/gpt.py does).
uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

}  // namespace

absl::StatusOr<Corpus> Corpus::Load(const std::string& path, double validation_fraction) {
  if (!(validation_fraction > 0 && validation_fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "corpus: the validation fraction must be in (0, 1), got ", validation_fraction));
  }
  std::error_code error;
  if (!fs::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat(
        "corpus: '", path, "' does not exist (the default is Debian's fortunes package: ",
        "apt-get install fortunes, or tools/setup.sh)"));
  }
  Corpus c;
  std::vector<fs::path> files =
      fs::is_directory(path) ? TextFiles(path) : std::vector<fs::path>{fs::path(path)};
  for (const fs::path& file : files) {
    ASSIGN_OR_RETURN(std::string text, ReadText(file));
    c.text_ += text;
    ++c.files_;
  }
  if (c.text_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("corpus: '", path, "' holds no text"));
  }
  c.split_ = static_cast<int64_t>(c.text_.size() * (1 - validation_fraction));
  return c;
}

absl::Status Corpus::CheckFits(int64_t seq) const {
  if (train_bytes() > seq + 1 && validation_bytes() > seq + 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("corpus: ", train_bytes(), " training and ", validation_bytes(),
                   " validation bytes cannot fill a window of seq + 1 = ", seq + 1, " bytes"));
}

void Corpus::Window(int64_t start, int64_t seq, std::vector<int64_t>* tokens,
                    std::vector<int64_t>* targets) const {
  for (int64_t t = 0; t < seq; ++t) {
    tokens->push_back(static_cast<unsigned char>(text_[start + t]));
    targets->push_back(static_cast<unsigned char>(text_[start + t + 1]));
  }
}

void Corpus::TrainWindows(int64_t seq, int64_t batch, int64_t step, int64_t seed,
                          std::vector<int64_t>* tokens, std::vector<int64_t>* targets) const {
  tokens->clear();
  targets->clear();
  const uint64_t starts = static_cast<uint64_t>(split_ - seq);  // 0 .. split_ - seq - 1
  for (int64_t b = 0; b < batch; ++b) {
    const uint64_t key =
        (static_cast<uint64_t>(seed) * 1000003u + static_cast<uint64_t>(step)) * 4096u +
        static_cast<uint64_t>(b);
    Window(static_cast<int64_t>(SplitMix64(key) % starts), seq, tokens, targets);
  }
}

void Corpus::ValidationWindows(int64_t seq, int64_t batch, int64_t index, int64_t count,
                               std::vector<int64_t>* tokens, std::vector<int64_t>* targets) const {
  tokens->clear();
  targets->clear();
  const int64_t windows = batch * count, room = validation_bytes() - seq - 1;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t w = index * batch + b;
    Window(split_ + room * w / std::max<int64_t>(windows, 1), seq, tokens, targets);
  }
}

}  // namespace tandem
