#include "core/algorithms/passive_aggressive.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace halfspace {

PassiveAggressive::PassiveAggressive(int64_t dimension, PaVariant variant,
                                     double aggressiveness,
                                     uint64_t average_from)
    : variant_(variant),
      aggressiveness_(aggressiveness),
      average_from_(average_from),
      w_(dimension),
      // Without averaging w_ is what predicts.
      prediction_(LinearWeights(average_from > 0 ? dimension : 0)) {
  if (average_from_ > 0) average_.emplace(dimension);
}

Update PassiveAggressive::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(w_, x, y);
  u.loss = u.margin <= 1.0 ? 1.0 - u.margin : 0.0;

  const double squared_norm = SquaredNorm(x);
  // PA and PA-I have no step for x = 0 (ℓ/‖x‖²): scikit-learn's PA-I skips
  // such an example whole, so it is neither averaged nor counted in t.
  if (squared_norm == 0.0 && variant_ != PaVariant::kPaII) return u;
  double tau = 0.0;
  switch (variant_) {
    case PaVariant::kPa:
      tau = u.loss / squared_norm;
      break;
    case PaVariant::kPaI:
      tau = std::min(aggressiveness_, u.loss / squared_norm);
      break;
    case PaVariant::kPaII:
      tau = u.loss / (squared_norm + 0.5 / aggressiveness_);
      break;
  }
  const double step = tau * y * s;
  if (step != 0.0) {
    undo_->Save(w_, x);
    w_.AddScaled(step, x, intercept_factor_);
    u.updated = true;
  }
  // As scikit-learn, every example from average_from on enters the
  // average, whether it updated or not.
  if (averaged() && static_cast<double>(average_from_) <= t_) {
    average_->Add(x, step, t_ - static_cast<double>(average_from_) + 1.0,
                  /*wscale=*/1.0, w_.b, *undo_);
  }
  undo_->Save(t_);
  t_ += 1.0;
  return u;
}

const LinearWeights& PassiveAggressive::weights() const {
  if (!averaged()) return w_;
  return prediction_.Get([this](LinearWeights& prediction) {
    if (t_ - 1.0 >= static_cast<double>(average_from_)) {
      average_->Get(w_.w, prediction);
    } else {
      prediction = w_;
    }
  });
}

void PassiveAggressive::set_weights(LinearWeights weights) {
  if (averaged()) average_->Set(weights);
  prediction_.Set(weights);
  w_ = std::move(weights);
}

std::vector<double> PassiveAggressive::ExportState() const {
  if (!averaged()) return {};
  std::vector<double> state = {t_};
  AppendTo(w_, state);
  average_->AppendTo(state);
  return state;
}

absl::Status PassiveAggressive::ImportState(absl::Span<const double> state) {
  const size_t expected =
      averaged() ? 1 + w_.w.size() + 1 + average_->state_size() : 0;
  if (state.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("passive-aggressive state has ", state.size(),
                     " values; expected ", expected));
  }
  if (!averaged()) return absl::OkStatus();
  t_ = state[0];
  state.remove_prefix(1);
  ReadFrom(state, w_);
  average_->ReadFrom(state);
  EndBatch();
  return absl::OkStatus();
}

absl::Status PassiveAggressiveParams::Validate() const {
  if (variant < PaVariant::kPa || variant > PaVariant::kPaII) {
    return absl::InvalidArgumentError(
        "passive_aggressive.variant is not one of halfspace's");
  }
  absl::Status s = CheckRange("passive_aggressive.aggressiveness",
                              aggressiveness, 0.0, true);
  if (!s.ok()) return s;
  return CheckRange("passive_aggressive.intercept_decay", intercept_decay, 0.0,
                    false, 1.0);
}

std::unique_ptr<OnlineClassifier> PassiveAggressiveParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<PassiveAggressive>(width, variant, aggressiveness,
                                             average_from);
}

}  // namespace halfspace
