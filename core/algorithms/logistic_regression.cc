#include "core/algorithms/logistic_regression.h"

#include <cmath>

namespace halfspace {

double Sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

double LogLoss(double margin) {
  if (margin > 0.0) return std::log1p(std::exp(-margin));
  return -margin + std::log1p(std::exp(margin));
}

LogisticRegression::LogisticRegression(int64_t dimension, double learning_rate,
                                       double l2)
    : LinearClassifier(dimension), learning_rate_(learning_rate), l2_(l2) {}

Update LogisticRegression::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  u.loss = LogLoss(u.margin);
  const double p = Sigmoid(u.score);
  u.probability = p;

  const double t = (y + 1) / 2;
  const double step = learning_rate_ * s * (t - p);
  if (l2_ > 0.0) {
    undo_->SaveAll(weights_);
    weights_.ScaleWeights(1.0 - learning_rate_ * l2_);
  } else {
    undo_->Save(weights_, x);
  }
  weights_.AddScaled(step, x, intercept_factor_);
  u.updated = step != 0.0 || l2_ > 0.0;
  return u;
}

absl::Status LogisticRegressionParams::Validate() const {
  absl::Status s = CheckLearningRate(kName, learning_rate);
  if (!s.ok()) return s;
  return CheckL2(kName, learning_rate, l2);
}

std::unique_ptr<OnlineClassifier> LogisticRegressionParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<LogisticRegression>(width, learning_rate, l2);
}

}  // namespace halfspace
