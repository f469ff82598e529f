#include "core/algorithms/pocket_perceptron.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace halfspace {

PocketPerceptron::PocketPerceptron(int64_t dimension, double learning_rate,
                                   bool ratchet, bool predict_with_pocket)
    : learning_rate_(learning_rate),
      ratchet_(ratchet),
      predict_with_pocket_(predict_with_pocket),
      w_(dimension),
      pocket_(dimension) {}

Update PocketPerceptron::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(w_, x, y);
  u.loss = std::max(0.0, -u.margin);
  if (s == 0.0) return u;  // an example of weight 0 counts as none
  undo_->Save(run_);
  undo_->Save(pocket_run_);
  undo_->Save(pocket_mistakes_in_run_);
  undo_->Save(pocket_is_w_);
  if (!pocket_is_w_ && y * pocket_.Score(x) <= 0.0) {
    pocket_mistakes_in_run_ += 1;
  }
  if (u.margin <= 0.0) {
    undo_->Save(w_, x);
    w_.AddScaled(learning_rate_ * s * y, x, intercept_factor_);
    u.updated = true;
    pocket_is_w_ = false;
    run_ = 0;
    pocket_mistakes_in_run_ = 0;
    return u;
  }
  run_ += 1;
  if (pocket_is_w_) {
    pocket_run_ = run_;  // the same weights: the pocket's run goes on
  } else if (run_ > pocket_run_ && (!ratchet_ || pocket_mistakes_in_run_ > 0)) {
    undo_->SaveAll(pocket_);
    std::copy(w_.w.begin(), w_.w.end(), pocket_.w.begin());  // in place
    pocket_.b = w_.b;
    pocket_run_ = run_;
    pocket_is_w_ = true;
  }
  return u;
}

void PocketPerceptron::set_weights(LinearWeights weights) {
  pocket_ = weights;
  w_ = std::move(weights);
  run_ = pocket_run_ = pocket_mistakes_in_run_ = 0;
  pocket_is_w_ = true;
}

std::vector<double> PocketPerceptron::ExportState() const {
  std::vector<double> state = {run_, pocket_run_, pocket_mistakes_in_run_,
                               pocket_is_w_ ? 1.0 : 0.0};
  AppendTo(w_, state);
  AppendTo(pocket_, state);
  return state;
}

absl::Status PocketPerceptron::ImportState(absl::Span<const double> state) {
  const size_t expected = 4 + 2 * (w_.w.size() + 1);
  if (state.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("pocket perceptron state has ", state.size(),
                     " values; expected ", expected));
  }
  run_ = state[0];
  pocket_run_ = state[1];
  pocket_mistakes_in_run_ = state[2];
  pocket_is_w_ = state[3] != 0.0;
  state.remove_prefix(4);
  ReadFrom(state, w_);
  ReadFrom(state, pocket_);
  return absl::OkStatus();
}

std::unique_ptr<OnlineClassifier> PocketPerceptronParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<PocketPerceptron>(width, learning_rate, ratchet,
                                            predict_with_pocket);
}

}  // namespace halfspace
