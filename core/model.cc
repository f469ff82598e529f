#include "core/model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/averaged_perceptron.h"
#include "core/logistic_regression.h"
#include "core/perceptron.h"
#include "core/pocket_perceptron.h"

namespace halfspace {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
}

std::unique_ptr<OnlineClassifier> MakeClassifier(const ModelSpec& spec) {
  switch (spec.algorithm) {
    case Algorithm::kPerceptron:
      return std::make_unique<Perceptron>(spec.dimension, spec.learning_rate,
                                          spec.margin_threshold);
    case Algorithm::kLogisticRegression:
      return std::make_unique<LogisticRegression>(
          spec.dimension, spec.learning_rate, spec.l2);
    case Algorithm::kAveragedPerceptron:
      return std::make_unique<AveragedPerceptron>(spec.dimension,
                                                  spec.learning_rate);
    case Algorithm::kPassiveAggressive:
      return std::make_unique<PassiveAggressive>(
          spec.dimension, spec.pa_variant, spec.aggressiveness);
    case Algorithm::kSgd:
      return std::make_unique<SgdClassifier>(spec.dimension,
                                             spec.learning_rate, spec.sgd);
    case Algorithm::kPocketPerceptron:
      return std::make_unique<PocketPerceptron>(
          spec.dimension, spec.learning_rate, spec.ratchet,
          spec.predict_with_pocket);
  }
  return nullptr;
}

// OK when `ok`; otherwise "<field> is <value>; it must be <rule>".
absl::Status Require(bool ok, absl::string_view field, double value,
                     absl::string_view rule) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", value, "; it must be ", rule));
}

// Hyperparameters of other algorithms must keep their defaults, so that a
// typo'd request fails instead of silently training something else.
absl::Status ValidateApplicability(const ModelSpec& spec) {
  const ModelSpec defaults;
  struct Field {
    const char* names;
    bool set;
    Algorithm owner;
    const char* owner_name;
  };
  const SgdOptions& sgd = spec.sgd;
  const SgdOptions& d = defaults.sgd;
  const bool sgd_set = sgd.loss != d.loss || sgd.penalty != d.penalty ||
                       sgd.alpha != d.alpha || sgd.l1_ratio != d.l1_ratio ||
                       sgd.schedule != d.schedule ||
                       sgd.power_t != d.power_t ||
                       sgd.average_from != d.average_from;
  const bool pa_set = spec.pa_variant != defaults.pa_variant ||
                      spec.aggressiveness != defaults.aggressiveness;
  const bool pocket_set = spec.ratchet != defaults.ratchet ||
                          spec.predict_with_pocket !=
                              defaults.predict_with_pocket;
  const Field fields[] = {
      {"l2", spec.l2 != defaults.l2, Algorithm::kLogisticRegression,
       "logistic regression"},
      {"margin_threshold", spec.margin_threshold != defaults.margin_threshold,
       Algorithm::kPerceptron, "the perceptron"},
      {"loss, penalty, alpha, l1_ratio, schedule, power_t and average_from",
       sgd_set, Algorithm::kSgd, "SGD"},
      {"pa_variant and aggressiveness", pa_set, Algorithm::kPassiveAggressive,
       "passive-aggressive"},
      {"ratchet and predict_with_pocket", pocket_set,
       Algorithm::kPocketPerceptron, "the pocket perceptron"},
  };
  for (const Field& f : fields) {
    if (f.set && spec.algorithm != f.owner) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.names, ": for ", f.owner_name,
                       " only; leave unset for this algorithm"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSgdOptions(const SgdOptions& o) {
  if (o.loss < LossKind::kHinge || o.loss > LossKind::kPerceptron) {
    return absl::InvalidArgumentError("loss is not one of halfspace's");
  }
  if (o.penalty < Penalty::kNone || o.penalty > Penalty::kElasticNet) {
    return absl::InvalidArgumentError("penalty is not one of halfspace's");
  }
  if (o.schedule < Schedule::kConstant || o.schedule > Schedule::kAdaGrad) {
    return absl::InvalidArgumentError("schedule is not one of halfspace's");
  }
  if (absl::Status s = Require(std::isfinite(o.alpha) && o.alpha >= 0.0,
                               "alpha", o.alpha, ">= 0");
      !s.ok()) {
    return s;
  }
  if (o.schedule == Schedule::kOptimal && o.alpha <= 0.0) {
    return Require(false, "alpha", o.alpha,
                   "> 0 with the OPTIMAL schedule, which divides by it");
  }
  if (absl::Status s = Require(o.l1_ratio >= 0.0 && o.l1_ratio <= 1.0,
                               "l1_ratio", o.l1_ratio, "in [0, 1]");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Require(std::isfinite(o.power_t) && o.power_t >= 0.0,
                               "power_t", o.power_t, ">= 0");
      !s.ok()) {
    return s;
  }
  if (o.schedule == Schedule::kAdaGrad &&
      (o.penalty == Penalty::kL1 || o.penalty == Penalty::kElasticNet)) {
    return absl::InvalidArgumentError(
        "the ADAGRAD schedule takes penalty NONE or L2, not L1 or ELASTIC_NET");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateModelName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("model name is empty");
  if (name.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model name has ", name.size(), " characters; the limit is 64"));
  }
  if (!absl::ascii_isalnum(name[0]) ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model name '", name,
        "' is invalid: use letters, digits, '_', '.', '-', starting with a "
        "letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelSpec(const ModelSpec& spec) {
  const Algorithm a = spec.algorithm;
  if (a < Algorithm::kPerceptron || a > Algorithm::kPocketPerceptron) {
    return absl::InvalidArgumentError("algorithm is not one of halfspace's");
  }
  if (spec.dimension < 1 || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimension is ", spec.dimension, "; it must be from 1 to ",
                     kMaxDimension));
  }
  if (!(std::isfinite(spec.learning_rate) && spec.learning_rate > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning_rate is ", spec.learning_rate, "; it must be positive"));
  }
  if (absl::Status s = ValidateApplicability(spec); !s.ok()) return s;
  switch (a) {
    case Algorithm::kPerceptron:
      return Require(std::isfinite(spec.margin_threshold) &&
                         spec.margin_threshold >= 0.0,
                     "margin_threshold", spec.margin_threshold, ">= 0");
    case Algorithm::kLogisticRegression:
      if (!(std::isfinite(spec.l2) && spec.l2 >= 0.0)) {
        return Require(false, "l2", spec.l2, ">= 0");
      }
      return Require(spec.learning_rate * spec.l2 < 1.0,
                     "learning_rate * l2", spec.learning_rate * spec.l2,
                     "below 1, or each step would flip or zero the weights");
    case Algorithm::kPassiveAggressive:
      return Require(std::isfinite(spec.aggressiveness) &&
                         spec.aggressiveness > 0.0,
                     "aggressiveness (C)", spec.aggressiveness, "> 0");
    case Algorithm::kSgd:
      return ValidateSgdOptions(spec.sgd);
    case Algorithm::kAveragedPerceptron:
    case Algorithm::kPocketPerceptron:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

Model::Model(std::string name, const ModelSpec& spec,
             std::unique_ptr<OnlineClassifier> classifier)
    : name_(std::move(name)), spec_(spec), classifier_(std::move(classifier)) {}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(std::string name,
                                                     const ModelSpec& spec) {
  if (absl::Status s = ValidateModelName(name); !s.ok()) return s;
  if (absl::Status s = ValidateModelSpec(spec); !s.ok()) return s;
  return std::unique_ptr<Model>(
      new Model(std::move(name), spec, MakeClassifier(spec)));
}

absl::StatusOr<std::unique_ptr<Model>> Model::Restore(ModelSnapshot snapshot) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Create(std::move(snapshot.name), snapshot.spec);
  if (!model.ok()) return model.status();
  absl::Status s = (*model)->SetWeights(std::move(snapshot.weights.w),
                                        snapshot.weights.b);
  if (!s.ok()) return s;
  std::unique_lock lock((*model)->mu_);
  s = (*model)->classifier_->ImportState(snapshot.state);
  if (!s.ok()) return s;
  (*model)->counters_ = snapshot.counters;
  return model;
}

absl::Status Model::Learn(absl::Span<const Example> examples,
                          absl::Span<ExampleOutcome> outcomes) {
  std::unique_lock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) {
    return absl::NotFoundError(
        absl::StrCat("model '", name_, "' was deleted"));
  }
  for (size_t i = 0; i < examples.size(); ++i) {
    LearnOne(examples[i], outcomes[i]);
  }
  classifier_->EndBatch();
  if (!examples.empty()) generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

void Model::LearnOne(const Example& example, ExampleOutcome& outcome) {
  // ‖x‖² is finite exactly when every value is (barring overflow of huge
  // values, which ValidateFeatures then accepts), so one pass serves both R
  // and validation; the full check runs only when something is off.
  const Features x = example.features;
  const double squared_norm = SquaredNorm(x);
  absl::Status error;
  if (static_cast<int64_t>(x.size()) != spec_.dimension ||
      !std::isfinite(squared_norm)) {
    error = ValidateFeatures(x, spec_.dimension);
  }
  if (error.ok()) error = ValidateLabel(example.label);
  if (error.ok()) error = ValidateImportanceWeight(example.weight);
  outcome.error = std::move(error);
  if (!outcome.error.ok()) {
    outcome.update = Update();
    outcome.examples_seen = outcome.updates = 0;
    return;
  }
  outcome.update = classifier_->Learn(x, example.label, example.weight);
  ModelCounters& c = counters_;
  c.examples_seen += 1;
  c.updates += outcome.update.updated ? 1 : 0;
  c.mistakes += outcome.update.predicted_label != example.label ? 1 : 0;
  c.loss_sum += outcome.update.loss;
  c.max_squared_norm = std::max(c.max_squared_norm, squared_norm + 1.0);
  outcome.examples_seen = c.examples_seen;
  outcome.updates = c.updates;
}

absl::Status Model::Predict(absl::Span<const Features> instances,
                            absl::Span<Prediction> out) const {
  for (size_t i = 0; i < instances.size(); ++i) {
    absl::Status s = ValidateFeatures(instances[i], spec_.dimension);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("instance ", i, ": ", s.message()));
    }
  }
  std::shared_lock lock(mu_);
  const LinearWeights& weights = classifier_->weights();
  const double norm = weights.Norm();
  for (size_t i = 0; i < instances.size(); ++i) {
    Prediction& p = out[i];
    p.score = weights.Score(instances[i]);
    p.label = PredictedLabel(p.score);
    p.signed_distance = norm > 0.0 ? std::optional<double>(p.score / norm)
                                   : std::nullopt;
    p.probability = classifier_->Probability(p.score);
  }
  return absl::OkStatus();
}

void Model::Evaluate(absl::Span<const Example> examples,
                     std::optional<double> threshold,
                     BinaryEvaluation& evaluation) const {
  std::shared_lock lock(mu_);
  const LinearWeights& weights = classifier_->weights();
  for (const Example& e : examples) {
    absl::Status error = ValidateFeatures(e.features, spec_.dimension);
    if (error.ok()) error = ValidateLabel(e.label);
    if (!error.ok()) {
      evaluation.Reject(error);
      continue;
    }
    const double score = weights.Score(e.features);
    const std::optional<double> p = classifier_->Probability(score);
    const int predicted = threshold.has_value() && p.has_value()
                              ? (*p >= *threshold ? 1 : -1)
                              : PredictedLabel(score);
    evaluation.Add(e.label, predicted, p);
  }
}

bool Model::probabilistic() const {
  std::shared_lock lock(mu_);
  return classifier_->Probability(0.0).has_value();
}

absl::Status Model::SetWeights(std::vector<double> w, double b) {
  if (absl::Status s = ValidateFeatures(w, spec_.dimension, "weights");
      !s.ok()) {
    return s;
  }
  if (!std::isfinite(b)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias is ", b, "; it must be finite"));
  }
  LinearWeights weights;
  weights.w = std::move(w);
  weights.b = b;
  std::unique_lock lock(mu_);
  classifier_->set_weights(std::move(weights));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

ModelStats Model::Stats() const {
  ModelStats stats;
  std::shared_lock lock(mu_);
  stats.counters = counters_;
  stats.weight_norm = classifier_->weights().Norm();
  stats.bias = classifier_->weights().b;
  return stats;
}

ModelSnapshot Model::Snapshot() const {
  ModelSnapshot snapshot;
  snapshot.name = name_;
  snapshot.spec = spec_;
  std::shared_lock lock(mu_);
  snapshot.weights = classifier_->weights();
  snapshot.state = classifier_->ExportState();
  snapshot.counters = counters_;
  return snapshot;
}

}  // namespace halfspace
