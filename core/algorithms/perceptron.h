// Rosenblatt's perceptron, with an optional margin threshold τ >= 0.
//
//   start:     w = 0, b = 0
//   mistake:   y·(w·x + b) <= τ         (τ = 0 is the classic rule, so the
//                                        first example always updates)
//   update:    w ← w + η·s·y·x,  b ← b + η·s·y   (on a mistake only; s is
//                                        the importance weight, 1 by default)
//   loss:      max(0, τ - y·(w·x + b))  (τ = 0: the perceptron criterion)
//
// On data separable with margin γ by a unit-norm (w*, b*), with every
// ‖(x, 1)‖ <= R, it makes at most (R/γ)² updates (Novikoff, 1962).
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_PERCEPTRON_H_
#define HALFSPACE_CORE_ALGORITHMS_PERCEPTRON_H_

#include <cstdint>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class Perceptron final : public LinearClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0, margin_threshold >= 0.
  Perceptron(int64_t dimension, double learning_rate,
             double margin_threshold = 0.0);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }

 private:
  double learning_rate_;
  double margin_threshold_;
};

// The perceptron's parameters.
struct PerceptronParams {
  static constexpr absl::string_view kName = "perceptron";
  double learning_rate = 1.0;     // η
  double margin_threshold = 0.0;  // τ

  static auto Parameters() {
    using P = PerceptronParams;
    return std::make_tuple(
        Param("learning_rate", ParameterKey::kLearningRate, &P::learning_rate),
        Param("margin_threshold", ParameterKey::kMarginThreshold,
              &P::margin_threshold));
  }
  absl::Status Validate() const;
  int64_t DoublesPerClass(int64_t width) const { return Vectors(1, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_PERCEPTRON_H_
