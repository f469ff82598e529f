// Passive-aggressive classifiers (Crammer, Dekel, Keshet, Shalev-Shwartz and
// Singer, 2006), with the bias learned as scikit-learn's
// PassiveAggressiveClassifier does.
//
//   loss:    ℓ = max(0, 1 - y·(w·x + b))           (the hinge)
//   step:    PA      τ = ℓ / ‖x‖²
//            PA-I    τ = min(C, ℓ / ‖x‖²)
//            PA-II   τ = ℓ / (‖x‖² + 1/(2C))
//   update:  w ← w + s·τ·y·x,  b ← b + s·τ·y      (s: importance weight)
//
// ‖x‖² excludes the bias, as in scikit-learn; PA and PA-I skip x = 0.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_
#define HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_

#include <cstdint>

#include "core/algorithms/online_classifier.h"

namespace halfspace {

enum class PaVariant { kPa = 1, kPaI = 2, kPaII = 3 };

class PassiveAggressive final : public LinearClassifier {
 public:
  // REQUIRES: dimension >= 1; aggressiveness C > 0 for PA-I and PA-II.
  PassiveAggressive(int64_t dimension, PaVariant variant, double aggressiveness);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }

 private:
  PaVariant variant_;
  double aggressiveness_;  // C
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_
