#include "core/algorithms/asgd_average.h"

#include <algorithm>
#include <cmath>

namespace halfspace {

void AsgdAverage::Add(const Features& x, double c, double k, double wscale,
                      double bias, UndoLog& undo) {
  undo.Save(aw_, x);
  undo.Save(a_);
  undo.Save(b_);
  undo.Save(bias_);
  // w̄_k = w̄_{k-1} + (w_k - w̄_{k-1})/k, in scikit-learn's operations and
  // their order.
  const double mu = 1.0 / k;
  const double step = -c / wscale;
  x.ForEach([&](size_t j, double xj) { aw_[j] += a_ * xj * step; });
  if (k > 1.0) b_ /= 1.0 - mu;
  a_ += mu * b_ * wscale;
  bias_ += (bias - bias_) / k;
}

void AsgdAverage::Fold(const std::vector<double>& v, UndoLog& undo) {
  undo.SaveAll(aw_);
  undo.Save(a_);
  undo.Save(b_);
  const double inverse_b = 1.0 / b_;
  for (size_t j = 0; j < aw_.size(); ++j) {
    aw_[j] = (aw_[j] + a_ * v[j]) * inverse_b;
  }
  a_ = 0.0;
  b_ = 1.0;
}

void AsgdAverage::Get(const std::vector<double>& v,
                      LinearWeights& average) const {
  // As scikit-learn folds them at the end of a pass: aw + a·v, times 1/b.
  const double inverse_b = 1.0 / b_;
  for (size_t j = 0; j < aw_.size(); ++j) {
    average.w[j] = (aw_[j] + a_ * v[j]) * inverse_b;
  }
  average.b = bias_;
}

void AsgdAverage::Set(const LinearWeights& weights) {
  aw_ = weights.w;
  a_ = 0.0;
  b_ = 1.0;
  bias_ = weights.b;
}

void AsgdAverage::AppendTo(std::vector<double>& out) const {
  out.insert(out.end(), aw_.begin(), aw_.end());
  out.insert(out.end(), {a_, b_, bias_});
}

void AsgdAverage::ReadFrom(absl::Span<const double>& in) {
  const size_t d = aw_.size();
  std::copy(in.begin(), in.begin() + d, aw_.begin());
  a_ = in[d];
  b_ = in[d + 1];
  bias_ = in[d + 2];
  in.remove_prefix(d + 3);
}

}  // namespace halfspace
