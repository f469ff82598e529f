#include "core/algorithms/passive_aggressive.h"

#include <algorithm>

namespace halfspace {

PassiveAggressive::PassiveAggressive(int64_t dimension, PaVariant variant,
                                     double aggressiveness)
    : LinearClassifier(dimension),
      variant_(variant),
      aggressiveness_(aggressiveness) {}

Update PassiveAggressive::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  u.loss = u.margin <= 1.0 ? 1.0 - u.margin : 0.0;

  const double squared_norm = SquaredNorm(x);
  double tau = 0.0;
  switch (variant_) {
    case PaVariant::kPa:
      if (squared_norm > 0.0) tau = u.loss / squared_norm;
      break;
    case PaVariant::kPaI:
      if (squared_norm > 0.0) {
        tau = std::min(aggressiveness_, u.loss / squared_norm);
      }
      break;
    case PaVariant::kPaII:
      tau = u.loss / (squared_norm + 0.5 / aggressiveness_);
      break;
  }
  const double step = tau * y * s;
  if (step != 0.0) {
    weights_.AddScaled(step, x, intercept_factor_);
    u.updated = true;
  }
  return u;
}

}  // namespace halfspace
