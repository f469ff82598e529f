#include "core/sgd_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

constexpr double kMaxLossDerivative = 1e12;
constexpr double kAdaGradEpsilon = 1e-8;

}  // namespace

SgdClassifier::SgdClassifier(int64_t dimension, double learning_rate,
                             const SgdOptions& options)
    : eta0_(learning_rate),
      options_(options),
      loss_(MakeMarginLoss(options.loss)),
      w_(dimension),
      average_(dimension) {
  if (options_.schedule == Schedule::kOptimal) {
    // scikit-learn's heuristic, kept as written there (including the sign of
    // the derivative, which makes the max() pick 1).
    const double typical_w = std::sqrt(1.0 / std::sqrt(options_.alpha));
    const double eta_1 =
        typical_w / std::max(1.0, loss_->Derivative(-typical_w));
    optimal_t0_ = 1.0 / (eta_1 * options_.alpha);
  }
  if (L1Share() > 0.0) q_.assign(dimension, 0.0);
  if (options_.schedule == Schedule::kAdaGrad) {
    squared_gradients_.assign(dimension, 0.0);
  }
}

double SgdClassifier::L1Share() const {
  switch (options_.penalty) {
    case Penalty::kNone:
    case Penalty::kL2:
      return 0.0;
    case Penalty::kL1:
      return 1.0;
    case Penalty::kElasticNet:
      return options_.l1_ratio;
  }
  return 0.0;
}

double SgdClassifier::LearningRate() const {
  switch (options_.schedule) {
    case Schedule::kOptimal:
      return 1.0 / (options_.alpha * (optimal_t0_ + t_ - 1.0));
    case Schedule::kInverseScaling:
      return eta0_ / std::pow(t_, options_.power_t);
    case Schedule::kConstant:
    case Schedule::kAdaGrad:
      return eta0_;
  }
  return eta0_;
}

Update SgdClassifier::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(w_, x, y);
  u.loss = loss_->Value(u.margin);
  u.probability = loss_->Probability(u.score);

  const double eta = LearningRate();
  const double derivative = std::clamp(y * loss_->Derivative(u.margin),
                                       -kMaxLossDerivative, kMaxLossDerivative);
  const bool has_penalty = options_.penalty != Penalty::kNone &&
                           options_.alpha > 0.0;
  if (options_.schedule == Schedule::kAdaGrad) {
    AdaGradStep(x, derivative * s);
  } else {
    const double step = -eta * derivative * s;
    const double shrink = 1.0 - (1.0 - L1Share()) * eta * options_.alpha;
    if (options_.penalty == Penalty::kL2 ||
        options_.penalty == Penalty::kElasticNet) {
      w_.ScaleWeights(std::max(0.0, shrink));
    }
    if (step != 0.0) w_.AddScaled(step, x);
  }
  if (Averaging() && options_.average_from <= t_) {
    const double k = t_ - options_.average_from + 1.0;
    for (size_t j = 0; j < w_.w.size(); ++j) {
      average_.w[j] += (w_.w[j] - average_.w[j]) / k;
    }
    average_.b += (w_.b - average_.b) / k;
  }
  if (L1Share() > 0.0) ApplyL1(eta);
  u.updated = derivative != 0.0 || has_penalty;
  t_ += 1.0;
  return u;
}

void SgdClassifier::AdaGradStep(const Features& x, double gradient) {
  const double l2 = options_.penalty == Penalty::kL2 ? options_.alpha : 0.0;
  auto step = [&](size_t j, double xj) {
    const double g = gradient * xj + l2 * w_.w[j];
    if (g == 0.0) return;
    squared_gradients_[j] += g * g;
    w_.w[j] -= eta0_ * g /
               (std::sqrt(squared_gradients_[j]) + kAdaGradEpsilon);
  };
  // Without L2 only x's nonzeros have a gradient.
  if (l2 > 0.0) {
    x.ForEachCoordinate(w_.w.size(), step);
  } else {
    x.ForEach(step);
  }
  if (gradient != 0.0) {
    squared_bias_gradients_ += gradient * gradient;
    w_.b -= eta0_ * gradient /
            (std::sqrt(squared_bias_gradients_) + kAdaGradEpsilon);
  }
}

void SgdClassifier::ApplyL1(double eta) {
  u_ += L1Share() * eta * options_.alpha;
  for (size_t j = 0; j < w_.w.size(); ++j) {
    const double before = w_.w[j];
    if (before > 0.0) {
      w_.w[j] = std::max(0.0, before - (u_ + q_[j]));
    } else if (before < 0.0) {
      w_.w[j] = std::min(0.0, before + (u_ - q_[j]));
    }
    q_[j] += w_.w[j] - before;
  }
}

const LinearWeights& SgdClassifier::weights() const {
  // Once averaging has begun, predictions use the average.
  const bool averaged = Averaging() && t_ - 1.0 >= options_.average_from;
  return averaged ? average_ : w_;
}

void SgdClassifier::set_weights(LinearWeights weights) {
  average_ = weights;
  w_ = std::move(weights);
}

std::vector<double> SgdClassifier::ExportState() const {
  std::vector<double> state = {t_, u_, squared_bias_gradients_};
  if (Averaging()) {
    AppendTo(w_, state);
    AppendTo(average_, state);
  }
  state.insert(state.end(), q_.begin(), q_.end());
  state.insert(state.end(), squared_gradients_.begin(),
               squared_gradients_.end());
  return state;
}

absl::Status SgdClassifier::ImportState(absl::Span<const double> state) {
  const size_t d = w_.w.size();
  const size_t expected = 3 + (Averaging() ? 2 * (d + 1) : 0) + q_.size() +
                          squared_gradients_.size();
  if (state.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SGD state has ", state.size(), " values; expected ", expected));
  }
  t_ = state[0];
  u_ = state[1];
  squared_bias_gradients_ = state[2];
  state.remove_prefix(3);
  if (Averaging()) {
    ReadFrom(state, w_);
    ReadFrom(state, average_);
  }
  std::copy(state.begin(), state.begin() + q_.size(), q_.begin());
  state.remove_prefix(q_.size());
  std::copy(state.begin(), state.end(), squared_gradients_.begin());
  return absl::OkStatus();
}

}  // namespace halfspace
