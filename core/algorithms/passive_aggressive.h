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
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/asgd_average.h"
#include "core/algorithms/lazy.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

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

// Passive-aggressive's parameters.
struct PassiveAggressiveParams {
  static constexpr absl::string_view kName = "passive_aggressive";
  PaVariant variant = PaVariant::kPaI;
  double aggressiveness = 1.0;   // C
  double intercept_decay = 1.0;  // the bias's step factor
  uint64_t average_from = 0;     // the first example averaged; 0: none

  static auto Parameters() {
    using P = PassiveAggressiveParams;
    return std::make_tuple(
        Param("variant", ParameterKey::kPaVariant, &P::variant),
        Param("aggressiveness", ParameterKey::kAggressiveness,
              &P::aggressiveness),
        Param("intercept_decay", ParameterKey::kInterceptDecay,
              &P::intercept_decay),
        Param("average_from", ParameterKey::kAverageFrom, &P::average_from));
  }
  absl::Status Validate() const;
  // The weights, and with averaging the ASGD sum and the average.
  int64_t DoublesPerClass(int64_t width) const {
    return Vectors(average_from > 0 ? 3 : 1, width);
  }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
  double InterceptDecay() const { return intercept_decay; }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_PASSIVE_AGGRESSIVE_H_
