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
// ‖x‖² excludes the bias, as in scikit-learn. PA and PA-I skip x = 0
// whole, as scikit-learn's PA-I does: no step, not averaged, not counted
// in the average's t; PA-II learns its bias from it. With averaging from
// example t0 on, predictions use the average of the weights after each example
// since t0 (scikit-learn's average=t0), kept in O(nonzeros) per example by
// AsgdAverage.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_
#define HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/algorithms/asgd_average.h"
#include "core/algorithms/lazy.h"
#include "core/algorithms/online_classifier.h"

namespace halfspace {

enum class PaVariant { kPa = 1, kPaI = 2, kPaII = 3 };

class PassiveAggressive final : public OnlineClassifier {
 public:
  // REQUIRES: dimension >= 1; aggressiveness C > 0 for PA-I and PA-II.
  // average_from: the first example averaged (1: all), or 0 for none.
  PassiveAggressive(int64_t dimension, PaVariant variant, double aggressiveness,
                    uint64_t average_from = 0);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }
  void EndBatch() override { prediction_.MarkStale(); }
  const LinearWeights& weights() const override;
  void set_weights(LinearWeights weights) override;
  // Empty without averaging; else the example count, the learning weights
  // and the average's state.
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  bool averaged() const { return average_.has_value(); }

  const PaVariant variant_;
  const double aggressiveness_;  // C
  const uint64_t average_from_;
  LinearWeights w_;  // the weights that learn
  std::optional<AsgdAverage> average_;
  Lazy<LinearWeights> prediction_;  // w_, or the average once it has begun
  double t_ = 1.0;                  // the index of the next example
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_
