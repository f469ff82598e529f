// Softmax (multinomial logistic) regression trained by SGD on the log loss.
//
//   scores:         s_k = w_k·x + b_k
//   probabilities:  p_k = e^(s_k) / Σ_j e^(s_j)
//   loss:           -log p_y
//   update, every class k, t_k = 1 if k = y else 0:
//                   w_k ← (1 - η·λ)·w_k + η·s·(t_k - p_k)·x
//                   b_k ← b_k + η·s·(t_k - p_k)      (the bias is not
//                                                      regularized)
//
// Probabilities and the loss are computed with the largest score subtracted,
// so they neither overflow nor underflow. Predicts the most probable class,
// the first among ties. Not thread-safe.

#ifndef HALFSPACE_CORE_ALGORITHMS_SOFTMAX_REGRESSION_H_
#define HALFSPACE_CORE_ALGORITHMS_SOFTMAX_REGRESSION_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class SoftmaxRegression final : public MulticlassLinearClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0, l2 >= 0,
  // learning_rate * l2 < 1.
  SoftmaxRegression(int64_t dimension, double learning_rate, double l2);

  MulticlassUpdate Learn(Features x, int y, double s,
                         std::vector<double>& scores,
                         std::vector<double>& probabilities) override;
  void Predict(Features x, std::vector<double>& scores,
               std::vector<double>& probabilities) const override;

 private:
  const double learning_rate_;
  const double l2_;
};

// Softmax regression's parameters.
struct SoftmaxRegressionParams {
  static constexpr absl::string_view kName = "softmax_regression";
  double learning_rate = 1.0;
  double l2 = 0.0;  // λ

  static auto Parameters() {
    using P = SoftmaxRegressionParams;
    return std::make_tuple(
        Param("learning_rate", ParameterKey::kLearningRate, &P::learning_rate),
        Param("l2", ParameterKey::kL2, &P::l2));
  }
  absl::Status Validate() const;
  int64_t DoublesPerClass(int64_t width) const { return Vectors(1, width); }
  std::unique_ptr<MulticlassClassifier> MakeClassifier(int64_t width) const {
    return std::make_unique<SoftmaxRegression>(width, learning_rate, l2);
  }
  bool Probabilistic() const { return true; }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_SOFTMAX_REGRESSION_H_
