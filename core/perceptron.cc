#include "core/perceptron.h"

#include <algorithm>

namespace halfspace {

Perceptron::Perceptron(int64_t dimension, double learning_rate)
    : LinearClassifier(dimension), learning_rate_(learning_rate) {}

Update Perceptron::Learn(Features x, int y) {
  Update u;
  u.score = weights_.Score(x);
  u.margin = y * u.score;
  u.predicted_label = PredictedLabel(u.score);
  u.loss = std::max(0.0, -u.margin);
  if (u.margin <= 0.0) {
    weights_.AddScaled(learning_rate_ * y, x);
    u.updated = true;
  }
  return u;
}

}  // namespace halfspace
