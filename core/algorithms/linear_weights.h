// The parameters of a halfspace {x : w·x + b >= 0}: a dense weight vector w
// and a bias b, in double precision.
//
// A plain value type: copyable, not thread-safe. The Model that owns one
// guards it with its lock.

#ifndef HALFSPACE_CORE_ALGORITHMS_LINEAR_WEIGHTS_H_
#define HALFSPACE_CORE_ALGORITHMS_LINEAR_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/features/features.h"

namespace halfspace {

struct LinearWeights {
  LinearWeights() = default;
  // w = 0, b = 0 in R^dimension.
  explicit LinearWeights(int64_t dimension) : w(dimension, 0.0) {}

  // f(x) = w·x + b.  REQUIRES: every index of x is below w.size().
  double Score(const Features& x) const { return Dot(w, x) + b; }

  // w ← w + c·x and b ← b + f·c, f being the bias's factor (see
  // OnlineClassifier::set_intercept_factor).  REQUIRES: as Score.
  void AddScaled(double c, const Features& x, double f) {
    halfspace::AddScaled(c, x, absl::MakeSpan(w));
    b += f * c;
  }

  // w ← c·w (the bias is left alone).
  void ScaleWeights(double c) {
    for (double& wj : w) wj *= c;
  }

  // ‖w‖ (the bias excluded).
  double Norm() const;

  // w_j for j in [offset, offset + count), and b.
  // REQUIRES: the range lies within w.
  LinearWeights Slice(int64_t offset, int64_t count) const {
    LinearWeights slice;
    slice.w.assign(w.begin() + offset, w.begin() + offset + count);
    slice.b = b;
    return slice;
  }

  std::vector<double> w;
  double b = 0.0;
};

// Appends w then b to `out`, for a classifier's exported state.
void AppendTo(const LinearWeights& weights, std::vector<double>& out);

// Reads what AppendTo wrote into `weights` (whose size says how much) and
// advances `in`.  REQUIRES: in.size() > weights.w.size().
void ReadFrom(absl::Span<const double>& in, LinearWeights& weights);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_LINEAR_WEIGHTS_H_
