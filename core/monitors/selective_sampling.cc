#include "core/monitors/selective_sampling.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325u;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3u;
  }
  return h;
}

uint64_t SplitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

}  // namespace

absl::Status CheckSelectiveSampling(const SelectiveSampling& s) {
  if (s.b == 0 || (s.b > 0 && s.b <= kMaxSamplingB)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("selective_sampling.b is ", s.b, "; it must be in (0, ",
                   kMaxSamplingB, "], or 0 for no sampling"));
}

double SamplingDraw(uint32_t seed, absl::string_view example_id) {
  const uint64_t x = SplitMix64(Fnv1a64(example_id) ^ seed);
  return static_cast<double>(x >> 11) * 0x1p-53;
}

LabelQuery QueryLabel(const SelectiveSampling& s, double score,
                      absl::string_view example_id) {
  LabelQuery q;
  q.probability = s.b / (s.b + std::fabs(score));
  const double weight = 1 / q.probability;
  if (std::isfinite(weight) &&
      SamplingDraw(s.seed, example_id) < q.probability) {
    q.ask = true;
    if (!s.unweighted) q.weight = weight;
  }
  return q;
}

}  // namespace halfspace
