#include "core/algorithms/perceptron.h"

#include <algorithm>

namespace halfspace {

Perceptron::Perceptron(int64_t dimension, double learning_rate,
                       double margin_threshold)
    : LinearClassifier(dimension),
      learning_rate_(learning_rate),
      margin_threshold_(margin_threshold) {}

Update Perceptron::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  u.loss = std::max(0.0, margin_threshold_ - u.margin);
  if (u.margin <= margin_threshold_ && s > 0.0) {
    undo_->Save(weights_, x);
    weights_.AddScaled(learning_rate_ * s * y, x, intercept_factor_);
    u.updated = true;
  }
  return u;
}

absl::Status PerceptronParams::Validate() const {
  absl::Status s = CheckLearningRate(kName, learning_rate);
  if (!s.ok()) return s;
  return CheckRange("perceptron.margin_threshold", margin_threshold, 0.0,
                    false);
}

std::unique_ptr<OnlineClassifier> PerceptronParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<Perceptron>(width, learning_rate, margin_threshold);
}

}  // namespace halfspace
