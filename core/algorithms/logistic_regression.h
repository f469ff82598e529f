// Logistic regression trained by stochastic gradient descent on the log loss.
//
//   model:     p = P(y = +1 | x) = σ(w·x + b),  σ(z) = 1 / (1 + e^(-z))
//   target:    t = (y + 1) / 2 ∈ {0, 1}
//   update:    w ← w + η·s·(t - p)·x - η·λ·w,   b ← b + η·s·(t - p)
//              on every example (s is the importance weight, 1 by default;
//              the bias is not regularized)
//   loss:      -log p(y | x) = log(1 + e^(-y·f(x)))
//
// σ and the loss are evaluated in forms that neither overflow nor lose
// precision for large |f(x)|.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_LOGISTIC_REGRESSION_H_
#define HALFSPACE_CORE_ALGORITHMS_LOGISTIC_REGRESSION_H_

#include <cstdint>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

// σ(z), stable for any finite z.
double Sigmoid(double z);

// log(1 + e^(-m)), the log loss at margin m, stable for any finite m.
double LogLoss(double margin);

class LogisticRegression final : public LinearClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0, l2 >= 0,
  // learning_rate * l2 < 1.
  LogisticRegression(int64_t dimension, double learning_rate, double l2);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double score) const override {
    return Sigmoid(score);
  }

 private:
  double learning_rate_;
  double l2_;
};

// Logistic regression's parameters.
struct LogisticRegressionParams {
  static constexpr absl::string_view kName = "logistic_regression";
  double learning_rate = 1.0;
  double l2 = 0.0;  // λ

  static auto Parameters() {
    using P = LogisticRegressionParams;
    return std::make_tuple(
        Param("learning_rate", ParameterKey::kLearningRate, &P::learning_rate),
        Param("l2", ParameterKey::kL2, &P::l2));
  }
  absl::Status Validate() const;
  int64_t DoublesPerClass(int64_t width) const { return Vectors(1, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
  bool Probabilistic() const { return true; }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_LOGISTIC_REGRESSION_H_
