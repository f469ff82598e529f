#include "core/algorithms/multiclass_perceptron.h"

#include <algorithm>

namespace halfspace {

MulticlassPerceptron::MulticlassPerceptron(int64_t dimension,
                                           double learning_rate)
    : MulticlassLinearClassifier(dimension), learning_rate_(learning_rate) {}

void MulticlassPerceptron::Predict(Features x, std::vector<double>& scores,
                                   std::vector<double>& probabilities) const {
  Scores(x, scores);
  probabilities.clear();
}

MulticlassUpdate MulticlassPerceptron::Learn(
    Features x, int y, double s, std::vector<double>& scores,
    std::vector<double>& probabilities) {
  Predict(x, scores, probabilities);
  MulticlassUpdate u;
  u.predicted_class = ArgMax(scores);
  u.margin = MulticlassMargin(scores, y);
  u.loss = std::max(0.0, -u.margin);
  if (u.margin <= 0.0 && s > 0.0) {
    int rival = -1;
    for (int k = 0; k < num_classes(); ++k) {
      if (k != y && (rival < 0 || scores[k] > scores[rival])) rival = k;
    }
    undo_->Save(rows_[y], x);
    undo_->Save(rows_[rival], x);
    rows_[y].AddScaled(learning_rate_ * s, x, intercept_factor_);
    rows_[rival].AddScaled(-learning_rate_ * s, x, intercept_factor_);
    u.updated = true;
  }
  return u;
}

}  // namespace halfspace
