#include "core/algorithms/softmax_regression.h"

#include <algorithm>
#include <cmath>

namespace halfspace {

SoftmaxRegression::SoftmaxRegression(int64_t dimension, double learning_rate,
                                     double l2)
    : MulticlassLinearClassifier(dimension),
      learning_rate_(learning_rate),
      l2_(l2) {}

void SoftmaxRegression::Predict(Features x, std::vector<double>& scores,
                                std::vector<double>& probabilities) const {
  const size_t n = rows_.size();
  Scores(x, scores);
  probabilities.resize(n);
  const double top = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (size_t k = 0; k < n; ++k) {
    probabilities[k] = std::exp(scores[k] - top);
    sum += probabilities[k];
  }
  for (double& p : probabilities) p /= sum;
}

MulticlassUpdate SoftmaxRegression::Learn(Features x, int y, double s,
                                          std::vector<double>& scores,
                                          std::vector<double>& probabilities) {
  Predict(x, scores, probabilities);
  MulticlassUpdate u;
  u.predicted_class = ArgMax(scores);
  u.margin = MulticlassMargin(scores, y);
  // -log p_y = log Σ_j e^(s_j - top) - (s_y - top).
  const double top = scores[u.predicted_class];
  double sum = 0.0;
  for (double score : scores) sum += std::exp(score - top);
  u.loss = std::log(sum) - (scores[y] - top);

  for (int k = 0; k < num_classes(); ++k) {
    const double target = k == y ? 1.0 : 0.0;
    const double step = learning_rate_ * s * (target - probabilities[k]);
    if (l2_ > 0.0) {
      undo_->SaveAll(rows_[k]);
      rows_[k].ScaleWeights(1.0 - learning_rate_ * l2_);
    } else {
      undo_->Save(rows_[k], x);
    }
    rows_[k].AddScaled(step, x, intercept_factor_);
    u.updated = u.updated || step != 0.0 || l2_ > 0.0;
  }
  return u;
}

absl::Status SoftmaxRegressionParams::Validate() const {
  absl::Status s = CheckLearningRate(kName, learning_rate);
  if (!s.ok()) return s;
  return CheckL2(kName, learning_rate, l2);
}

}  // namespace halfspace
