// Selective sampling (active learning): which predicted instances to ask a
// label for. The margin-based rule of Cesa-Bianchi, Gentile and Zaniboni
// ("Worst-case analysis of selective sampling for linear classification",
// JMLR 2006): ask for the label of x with probability
//
//   p = b / (b + |f(x)|)
//
// so a model asks about the instances near its boundary and seldom about
// those it is sure of; b > 0 trades labels for accuracy (b → ∞ asks for
// every label). Learning only from the asked labels, each with importance
// weight 1/p, keeps the loss an unbiased estimate of the loss on all of
// them.
//
// The draw is a function of the example's id and the model's seed alone,
// so that a replay, a replica and the client itself decide alike:
//
//   h = FNV-1a-64(id's bytes)
//   x = SplitMix64(h XOR seed)
//   u = (x >> 11) · 2^-53            (uniform on [0, 1), 53 bits)
//   ask  ⇔  u < p
//
// where FNV-1a-64 starts from h = 0xCBF29CE484222325 and for each byte c
// sets h = (h XOR c) · 0x100000001B3, and SplitMix64(z) is Steele, Lea and
// Flood's finalizer:
//
//   z += 0x9E3779B97F4A7C15
//   z = (z XOR (z >> 30)) · 0xBF58476D1CE4E5B9
//   z = (z XOR (z >> 27)) · 0x94D049BB133111EB
//   SplitMix64(z) = z XOR (z >> 31)
//
// all modulo 2^64.

#ifndef HALFSPACE_CORE_MONITORS_SELECTIVE_SAMPLING_H_
#define HALFSPACE_CORE_MONITORS_SELECTIVE_SAMPLING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace halfspace {

// A model's setting: b > 0 to ask (0: the model does not sample), the
// seed its draws are keyed with, and whether an asked label is learned with
// weight 1 (the paper's selective perceptron, whose mistake bound holds for
// it) rather than its importance weight 1/p.
struct SelectiveSampling {
  double b = 0;
  uint32_t seed = 0;
  bool unweighted = false;
};

inline bool Enabled(const SelectiveSampling& s) { return s.b > 0; }

// The largest b: past it every probability rounds to 1 for any score a
// model gives.
inline constexpr double kMaxSamplingB = 1e12;

// OK for no sampling (b = 0) or b in (0, kMaxSamplingB].
absl::Status CheckSelectiveSampling(const SelectiveSampling& s);

// Whether to ask for one instance's label, with what probability, and the
// weight to learn the label with: 1/p when asked, unless the setting is
// unweighted; 1 when not asked.
struct LabelQuery {
  bool ask = false;
  double probability = 0;
  double weight = 1;
};

// The uniform draw on [0, 1) for `example_id` under `seed`.
double SamplingDraw(uint32_t seed, absl::string_view example_id);

// The query for an instance of score `score` (f(x); a multiclass model's gap
// between its two highest scores) and id `example_id`. A probability too
// small for 1/p to be finite never asks. REQUIRES: Enabled(s).
LabelQuery QueryLabel(const SelectiveSampling& s, double score,
                      absl::string_view example_id);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_SELECTIVE_SAMPLING_H_
