// The GPT example's text: a file, or every text file of a directory,
// read as bytes and split into a training and a validation part.
//
//   ASSIGN_OR_RETURN(Corpus corpus, Corpus::Load("/usr/share/games/fortunes", 0.1));
//   corpus.TrainWindows(/*seq=*/64, /*batch=*/8, /*step=*/12, /*seed=*/1, &tokens, &targets);
//
// The default corpus is Debian's `fortunes` package (/usr/share/games/fortunes,
// about 2.6 MB of English quotations, jokes and literature; tools/setup.sh
// installs it): real prose, free, a size a byte-level model learns from in
// minutes. A directory's files are read in name order, skipping symbolic
// links and fortune's "*.dat" index files. Thread-compatible; immutable after
// Load.
#ifndef TANDEM_EXAMPLES_GPT_CORPUS_H_
#define TANDEM_EXAMPLES_GPT_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem {

class Corpus {
 public:
  // Reads `path` and keeps its last `validation_fraction` (in (0, 1)) for
  // validation. NotFound when `path` does not exist; InvalidArgument naming
  // the file and offset when one holds a NUL byte (not text) and when a
  // directory holds no text file.
  static absl::StatusOr<Corpus> Load(const std::string& path, double validation_fraction);

  int64_t train_bytes() const { return split_; }
  int64_t validation_bytes() const { return static_cast<int64_t>(text_.size()) - split_; }
  int64_t files() const { return files_; }

  // InvalidArgument unless both parts hold a window of seq + 1 bytes.
  absl::Status CheckFits(int64_t seq) const;

  // `batch` windows of the training part, drawn from (seed, step) alone (a
  // resumed run draws what the uninterrupted one would): window b starts at
  // SplitMix64(((seed * 1000003 + step) * 4096 + b) mod 2^64) mod
  // (train_bytes - seq). Tokens [batch * seq] and targets, each token's
  // next byte.
  void TrainWindows(int64_t seq, int64_t batch, int64_t step, int64_t seed,
                    std::vector<int64_t>* tokens, std::vector<int64_t>* targets) const;
  // Validation batch `index` of `count`: windows evenly spaced over the
  // validation part, the same on every call.
  void ValidationWindows(int64_t seq, int64_t batch, int64_t index, int64_t count,
                         std::vector<int64_t>* tokens, std::vector<int64_t>* targets) const;

 private:
  void Window(int64_t start, int64_t seq, std::vector<int64_t>* tokens,
              std::vector<int64_t>* targets) const;

  std::string text_;
  int64_t split_ = 0;  // text_[0, split_) trains, the rest validates
  int64_t files_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_GPT_CORPUS_H_
