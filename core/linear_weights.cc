#include "core/linear_weights.h"

#include <cmath>

namespace halfspace {

double LinearWeights::Score(Features x) const {
  double dot = 0.0;
  for (size_t i = 0; i < w.size(); ++i) dot += w[i] * x[i];
  return dot + b;
}

void LinearWeights::AddScaled(double c, Features x) {
  for (size_t i = 0; i < w.size(); ++i) w[i] += c * x[i];
  b += c;
}

double LinearWeights::Norm() const { return std::sqrt(SquaredNorm(w)); }

}  // namespace halfspace
