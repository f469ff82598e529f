#include "core/algorithms/adagrad_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

constexpr double kMaxLossDerivative = 1e12;
constexpr double kEpsilon = 1e-8;

}  // namespace

AdaGradClassifier::AdaGradClassifier(int64_t dimension, double learning_rate,
                                     LossKind loss, double l2)
    : LinearClassifier(dimension),
      eta0_(learning_rate),
      l2_(l2),
      loss_(MakeMarginLoss(loss)),
      squared_gradients_(dimension, 0.0) {}

Update AdaGradClassifier::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  u.loss = loss_->Value(u.margin);
  u.probability = loss_->Probability(u.score);
  const double derivative = std::clamp(y * loss_->Derivative(u.margin),
                                       -kMaxLossDerivative, kMaxLossDerivative);
  const double gradient = derivative * s;
  std::vector<double>& w = weights_.w;
  auto step = [&](size_t j, double xj) {
    const double g = gradient * xj + l2_ * w[j];
    if (g == 0.0) return;
    squared_gradients_[j] += g * g;
    w[j] -= eta0_ * g / (std::sqrt(squared_gradients_[j]) + kEpsilon);
  };
  // Without L2 only x's nonzeros have a gradient.
  if (l2_ > 0.0) {
    undo_->SaveAll(w);
    undo_->SaveAll(squared_gradients_);
    x.ForEachCoordinate(w.size(), step);
  } else if (gradient != 0.0) {
    undo_->Save(w, x);
    undo_->Save(squared_gradients_, x);
    x.ForEach(step);
  }
  if (gradient != 0.0 && intercept_factor_ != 0.0) {
    undo_->Save(squared_bias_gradients_);
    undo_->Save(weights_.b);
    squared_bias_gradients_ += gradient * gradient;
    weights_.b -= intercept_factor_ * eta0_ * gradient /
                  (std::sqrt(squared_bias_gradients_) + kEpsilon);
  }
  u.updated = derivative != 0.0 || l2_ > 0.0;
  undo_->Save(t_);
  t_ += 1.0;
  return u;
}

std::vector<double> AdaGradClassifier::ExportState() const {
  std::vector<double> state = {t_, 0.0, squared_bias_gradients_, 1.0};
  AppendTo(weights_, state);
  state.insert(state.end(), squared_gradients_.begin(),
               squared_gradients_.end());
  return state;
}

absl::Status AdaGradClassifier::ImportState(absl::Span<const double> state) {
  const size_t d = weights_.w.size();
  const size_t expected = 4 + (d + 1) + d;
  if (state.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AdaGrad state has ", state.size(), " values; expected ", expected));
  }
  t_ = state[0];
  squared_bias_gradients_ = state[2];
  const double scale = state[3];
  state.remove_prefix(4);
  ReadFrom(state, weights_);
  weights_.ScaleWeights(scale);
  std::copy(state.begin(), state.end(), squared_gradients_.begin());
  return absl::OkStatus();
}

}  // namespace halfspace
