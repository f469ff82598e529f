#include "core/algorithms/sgd_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/algorithms/adagrad_classifier.h"

namespace halfspace {
namespace {

constexpr double kMaxLossDerivative = 1e12;
constexpr double kMinScale = 1e-9;  // below it, wscale is folded into v

}  // namespace

SgdClassifier::SgdClassifier(int64_t dimension, double learning_rate,
                             const SgdOptions& options)
    : eta0_(learning_rate),
      options_(options),
      loss_(MakeMarginLoss(options.loss)),
      v_(dimension),
      prediction_(LinearWeights(dimension)) {
  if (options_.schedule == Schedule::kOptimal) {
    // scikit-learn's heuristic, kept as written there (including the sign of
    // the derivative, which makes the max() pick 1).
    const double typical_w = std::sqrt(1.0 / std::sqrt(options_.alpha));
    const double eta_1 =
        typical_w / std::max(1.0, loss_->Derivative(-typical_w));
    optimal_t0_ = 1.0 / (eta_1 * options_.alpha);
  }
  if (Averaging()) average_.emplace(dimension);
  if (L1Share() > 0.0) q_.assign(dimension, 0.0);
}

double SgdClassifier::L1Share() const {
  if (options_.penalty == Penalty::kElasticNet) return options_.l1_ratio;
  return options_.penalty == Penalty::kL1 ? 1.0 : 0.0;
}

double SgdClassifier::LearningRate() const {
  switch (options_.schedule) {
    case Schedule::kOptimal:
      return 1.0 / (options_.alpha * (optimal_t0_ + t_ - 1.0));
    case Schedule::kInverseScaling:
      return eta0_ / std::pow(t_, options_.power_t);
    case Schedule::kConstant:
    case Schedule::kAdaGrad:  // AdaGradClassifier's
      return eta0_;
  }
  return eta0_;
}

Update SgdClassifier::Learn(Features x, int y, double s) {
  Update u;
  u.score = wscale_ * Dot(v_.w, x) + v_.b;
  u.margin = y * u.score;
  u.predicted_label = PredictedLabel(u.score);
  u.loss = loss_->Value(u.margin);
  u.probability = loss_->Probability(u.score);

  const double eta = LearningRate();
  const double derivative = std::clamp(y * loss_->Derivative(u.margin),
                                       -kMaxLossDerivative, kMaxLossDerivative);
  const bool has_penalty =
      options_.penalty != Penalty::kNone && options_.alpha > 0.0;
  const double step = -eta * derivative * s;
  undo_->Save(t_);
  undo_->Save(wscale_);
  if (step != 0.0 || L1Share() > 0.0) undo_->Save(v_, x);
  if (options_.penalty == Penalty::kL2 ||
      options_.penalty == Penalty::kElasticNet) {
    Scale(std::max(0.0, 1.0 - (1.0 - L1Share()) * eta * options_.alpha));
  }
  if (step != 0.0) {
    AddScaled(step / wscale_, x, absl::MakeSpan(v_.w));
    v_.b += step * intercept_factor_;
  }
  if (Averaging() && options_.average_from <= t_) {
    average_->Add(x, step, t_ - options_.average_from + 1.0, wscale_, v_.b,
                  *undo_);
  }
  if (L1Share() > 0.0) ApplyL1(x, eta);
  u.updated = derivative != 0.0 || has_penalty;
  t_ += 1.0;
  return u;
}

void SgdClassifier::Scale(double c) {
  wscale_ *= c;
  if (wscale_ < kMinScale) ResetScale();
}

void SgdClassifier::ResetScale() {
  undo_->SaveAll(v_.w);
  if (Averaging()) average_->Fold(v_.w, *undo_);
  v_.ScaleWeights(wscale_);
  wscale_ = 1.0;
}

void SgdClassifier::ApplyL1(const Features& x, double eta) {
  undo_->Save(u_);
  undo_->Save(q_, x);
  u_ += L1Share() * eta * options_.alpha;
  x.ForEach([&](size_t j, double) {
    const double before = v_.w[j];
    if (wscale_ * before > 0.0) {
      v_.w[j] = std::max(0.0, before - (u_ + q_[j]) / wscale_);
    } else if (wscale_ * before < 0.0) {
      v_.w[j] = std::min(0.0, before + (u_ - q_[j]) / wscale_);
    }
    q_[j] += wscale_ * (v_.w[j] - before);
  });
}

const LinearWeights& SgdClassifier::weights() const {
  return prediction_.Get([this](LinearWeights& prediction) {
    // Once averaging has begun, predictions use the average.
    const bool averaged = Averaging() && t_ - 1.0 >= options_.average_from;
    if (averaged) {
      average_->Get(v_.w, prediction);
    } else {
      std::vector<double>& w = prediction.w;
      for (size_t j = 0; j < w.size(); ++j) w[j] = wscale_ * v_.w[j];
      prediction.b = v_.b;
    }
  });
}

void SgdClassifier::set_weights(LinearWeights weights) {
  wscale_ = 1.0;
  if (Averaging()) average_->Set(weights);
  prediction_.Set(weights);
  v_ = std::move(weights);
}

std::vector<double> SgdClassifier::ExportState() const {
  // The raw representation, so that a restored model rounds exactly as the
  // original would.
  std::vector<double> state = {t_, u_, 0.0, wscale_};
  AppendTo(v_, state);
  if (Averaging()) average_->AppendTo(state);
  state.insert(state.end(), q_.begin(), q_.end());
  return state;
}

absl::Status SgdClassifier::ImportState(absl::Span<const double> state) {
  const size_t d = v_.w.size();
  const size_t expected =
      4 + (d + 1) + (Averaging() ? average_->state_size() : 0) + q_.size();
  if (state.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SGD state has ", state.size(), " values; expected ", expected));
  }
  t_ = state[0];
  u_ = state[1];
  wscale_ = state[3];
  state.remove_prefix(4);
  ReadFrom(state, v_);
  if (Averaging()) average_->ReadFrom(state);
  std::copy(state.begin(), state.end(), q_.begin());
  EndBatch();
  return absl::OkStatus();
}

absl::Status SgdParams::Validate() const {
  const SgdOptions& o = options;
  if (o.loss < LossKind::kHinge || o.loss > LossKind::kPerceptron) {
    return absl::InvalidArgumentError("sgd.loss is not one of halfspace's");
  }
  if (o.penalty < Penalty::kNone || o.penalty > Penalty::kElasticNet) {
    return absl::InvalidArgumentError("sgd.penalty is not one of halfspace's");
  }
  if (o.schedule < Schedule::kConstant || o.schedule > Schedule::kAdaGrad) {
    return absl::InvalidArgumentError("sgd.schedule is not one of halfspace's");
  }
  if (o.schedule == Schedule::kOptimal && o.alpha == 0.0) {
    return absl::InvalidArgumentError(
        "sgd.alpha is 0; it must be above 0 with the OPTIMAL schedule, which "
        "divides by it");
  }
  for (absl::Status s :
       {CheckLearningRate(kName, learning_rate),
        CheckRange("sgd.alpha", o.alpha, 0.0, false),
        CheckRange("sgd.l1_ratio", o.l1_ratio, 0.0, false, 1.0),
        CheckRange("sgd.power_t", o.power_t, 0.0, false),
        CheckRange("sgd.intercept_decay", o.intercept_decay, 0.0, false,
                   1.0)}) {
    if (!s.ok()) return s;
  }
  if (o.schedule == Schedule::kAdaGrad &&
      (o.penalty == Penalty::kL1 || o.penalty == Penalty::kElasticNet)) {
    return absl::InvalidArgumentError(
        "sgd.schedule ADAGRAD takes penalty NONE or L2, not L1 or "
        "ELASTIC_NET");
  }
  if (o.schedule == Schedule::kAdaGrad && o.average_from > 0) {
    return absl::InvalidArgumentError(
        "sgd.average_from takes the CONSTANT, OPTIMAL or INVERSE_SCALING "
        "schedule, not ADAGRAD");
  }
  return absl::OkStatus();
}

int64_t SgdParams::DoublesPerClass(int64_t width) const {
  if (options.schedule == Schedule::kAdaGrad) return Vectors(2, width);
  const bool l1 =
      options.penalty == Penalty::kL1 ||
      (options.penalty == Penalty::kElasticNet && options.l1_ratio > 0.0);
  return Vectors(2 + (options.average_from > 0 ? 1 : 0) + (l1 ? 1 : 0), width);
}

std::unique_ptr<OnlineClassifier> SgdParams::MakeClassifier(
    int64_t width) const {
  if (options.schedule == Schedule::kAdaGrad) {
    return std::make_unique<AdaGradClassifier>(
        width, learning_rate, options.loss,
        options.penalty == Penalty::kL2 ? options.alpha : 0.0);
  }
  return std::make_unique<SgdClassifier>(width, learning_rate, options);
}

}  // namespace halfspace
