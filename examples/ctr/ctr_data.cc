#include "examples/ctr/ctr_data.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

// SplitMix64's finaliser: a bijective 64-bit mix.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A hash of the key words, each mixed in turn.
uint64_t Hash(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return Mix(Mix(Mix(Mix(a) ^ b) ^ c) ^ d);
}

// Uniform in [0, 1) from the top 53 bits.
double Uniform(uint64_t bits) { return (bits >> 11) * 0x1.0p-53; }

// Standard normal (Box-Muller) from two hashes of `key`.
double Normal(uint64_t key) {
  const double u1 = 1.0 - Uniform(Mix(key));  // (0, 1]
  const double u2 = Uniform(Mix(key ^ 0x5851F42D4C957F2DULL));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Domain tags keep the hashed quantities independent.
constexpr uint64_t kIdTag = 1, kWeightTag = 2, kNoiseTag = 3, kLabelTag = 4;

}  // namespace

absl::StatusOr<CtrDataset> CtrDataset::Create(CtrDataConfig config) {
  if (config.vocab_sizes.empty()) {
    return absl::InvalidArgumentError("ctr data: vocab_sizes is empty; give one size per field");
  }
  for (size_t f = 0; f < config.vocab_sizes.size(); ++f) {
    if (config.vocab_sizes[f] < 2) {
      return absl::InvalidArgumentError(absl::StrCat("ctr data: vocabulary size of field ", f,
                                                     " must be >= 2, got ", config.vocab_sizes[f]));
    }
  }
  if (!(config.weight_std >= 0) || !std::isfinite(config.weight_std) || !(config.noise_std >= 0) ||
      !std::isfinite(config.noise_std) || !std::isfinite(config.bias)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ctr data: weight_std and noise_std must be finite and >= 0 and bias finite, got ",
        config.weight_std, ", ", config.noise_std, ", ", config.bias));
  }
  return CtrDataset(std::move(config));
}

double CtrDataset::HiddenWeight(int field, int64_t id) const {
  return config_.weight_std * Normal(Hash(config_.seed, kWeightTag, field, id));
}

CtrExamples CtrDataset::Examples(CtrStream stream, int64_t first, int64_t count) const {
  const int fields = num_fields();
  const uint64_t s = static_cast<uint64_t>(stream);
  CtrExamples out;
  out.ids.assign(fields, std::vector<int64_t>(count));
  out.labels.resize(count);
  out.oracle_logits.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t example = static_cast<uint64_t>(first + i);
    const uint64_t key = Hash(config_.seed, s, example, 0);
    double logit = config_.bias;
    for (int f = 0; f < fields; ++f) {
      const int64_t v = config_.vocab_sizes[f];
      const double u = Uniform(Hash(key, kIdTag, f, 0));
      const int64_t id = std::min<int64_t>(
          v - 1, static_cast<int64_t>(std::floor(std::pow(static_cast<double>(v + 1), u))) - 1);
      out.ids[f][i] = id;
      logit += HiddenWeight(f, id);
    }
    out.oracle_logits[i] = logit;
    logit += config_.noise_std * Normal(Hash(key, kNoiseTag, 0, 0));
    const double p = 1.0 / (1.0 + std::exp(-logit));
    out.labels[i] = Uniform(Hash(key, kLabelTag, 0, 0)) < p ? 1 : 0;
  }
  return out;
}

}  // namespace tandem
