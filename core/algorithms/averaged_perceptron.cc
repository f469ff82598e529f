#include "core/algorithms/averaged_perceptron.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace halfspace {

AveragedPerceptron::AveragedPerceptron(int64_t dimension, double learning_rate,
                                       double margin_threshold)
    : learning_rate_(learning_rate),
      margin_threshold_(margin_threshold),
      w_(dimension),
      u_(dimension),
      average_(LinearWeights(dimension)) {}

Update AveragedPerceptron::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(w_, x, y);
  u.loss = std::max(0.0, margin_threshold_ - u.margin);
  if (u.margin <= margin_threshold_ && s > 0.0) {
    const double delta = learning_rate_ * s * y;
    undo_->Save(w_, x);
    undo_->Save(u_, x);
    w_.AddScaled(delta, x, intercept_factor_);
    u_.AddScaled(examples_ * delta, x, intercept_factor_);
    u.updated = true;
  }
  undo_->Save(examples_);
  examples_ += 1.0;
  return u;
}

const LinearWeights& AveragedPerceptron::weights() const {
  return average_.Get([this](LinearWeights& average) {
    if (examples_ == 0.0) {
      average = w_;
      return;
    }
    for (size_t j = 0; j < w_.w.size(); ++j) {
      average.w[j] = w_.w[j] - u_.w[j] / examples_;
    }
    average.b = w_.b - u_.b / examples_;
  });
}

void AveragedPerceptron::set_weights(LinearWeights weights) {
  std::fill(u_.w.begin(), u_.w.end(), 0.0);
  u_.b = 0.0;
  average_.Set(weights);
  w_ = std::move(weights);
}

std::vector<double> AveragedPerceptron::ExportState() const {
  std::vector<double> state = {examples_};
  AppendTo(w_, state);
  AppendTo(u_, state);
  return state;
}

absl::Status AveragedPerceptron::ImportState(absl::Span<const double> state) {
  const size_t d = w_.w.size();
  if (state.size() != 1 + 2 * (d + 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("averaged perceptron state has ", state.size(),
                     " values; expected ", 1 + 2 * (d + 1)));
  }
  examples_ = state[0];
  state.remove_prefix(1);
  ReadFrom(state, w_);
  ReadFrom(state, u_);
  EndBatch();
  return absl::OkStatus();
}

absl::Status AveragedPerceptronParams::Validate() const {
  absl::Status s = CheckLearningRate(kName, learning_rate);
  if (!s.ok()) return s;
  return CheckRange("averaged_perceptron.margin_threshold", margin_threshold,
                    0.0, false);
}

std::unique_ptr<OnlineClassifier> AveragedPerceptronParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<AveragedPerceptron>(width, learning_rate,
                                              margin_threshold);
}

}  // namespace halfspace
