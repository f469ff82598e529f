// The running average of weights that learn by steps, in O(nonzeros) per
// step: averaged SGD (Polyak and Juditsky; Bottou, "Stochastic Gradient
// Descent Tricks") kept as scikit-learn keeps it, so that an averaged model
// rounds as scikit-learn's does.
//
// The learning weights are w = wscale·v (wscale is 1 for algorithms without
// L2 shrinking). After the k-th averaged step the average is
//
//   w̄ = (aw + a·v) / b,   b̄ = the running mean of the bias,
//
// where a step v += (c/wscale)·x moves only x's coordinates of aw.
//
// Not thread-safe; its classifier serializes access.

#ifndef HALFSPACE_CORE_ALGORITHMS_ASGD_AVERAGE_H_
#define HALFSPACE_CORE_ALGORITHMS_ASGD_AVERAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/algorithms/linear_weights.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"

namespace halfspace {

class AsgdAverage {
 public:
  explicit AsgdAverage(int64_t dimension) : aw_(dimension, 0.0) {}

  // Takes in the step just made, v += (c/wscale)·x, after which the
  // learning bias is `bias` and the average covers k steps. Saves what it
  // changes into `undo`.
  void Add(const Features& x, double c, double k, double wscale, double bias,
           UndoLog& undo);

  // Folds a and b into aw, for a classifier about to fold wscale into v,
  // saving what it changes into `undo`.
  void Fold(const std::vector<double>& v, UndoLog& undo);

  // w̄ and b̄ into `average`, for v.  REQUIRES: the same dimension.
  void Get(const std::vector<double>& v, LinearWeights& average) const;

  // Starts again from `weights` as the average so far.
  void Set(const LinearWeights& weights);

  // The state, appended to `out`, and read back (advancing `in`); the
  // dimension's values plus three.
  void AppendTo(std::vector<double>& out) const;
  void ReadFrom(absl::Span<const double>& in);
  size_t state_size() const { return aw_.size() + 3; }

 private:
  std::vector<double> aw_;
  double a_ = 0.0;
  double b_ = 1.0;
  double bias_ = 0.0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_ASGD_AVERAGE_H_
