#include "core/algorithms/linear_weights.h"

#include <algorithm>
#include <cmath>

namespace halfspace {

double LinearWeights::Norm() const { return std::sqrt(SquaredNorm(w)); }

void AppendTo(const LinearWeights& weights, std::vector<double>& out) {
  out.insert(out.end(), weights.w.begin(), weights.w.end());
  out.push_back(weights.b);
}

void ReadFrom(absl::Span<const double>& in, LinearWeights& weights) {
  std::copy(in.begin(), in.begin() + weights.w.size(), weights.w.begin());
  weights.b = in[weights.w.size()];
  in.remove_prefix(weights.w.size() + 1);
}

}  // namespace halfspace
