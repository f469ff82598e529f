#include "core/model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/quoted.h"

namespace halfspace {
namespace {

// A LinearWeights from user input: one weight per coordinate of the
// feature space (`width`), all finite.
absl::StatusOr<LinearWeights> CheckedWeights(std::vector<double> w, double b,
                                             int64_t width) {
  if (static_cast<int64_t>(w.size()) != width) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weights has ", w.size(), " values but the model has ", width,
        " (its dimension plus its hash buckets)"));
  }
  if (absl::Status s = ValidateFeatures(w, width, "weights"); !s.ok()) {
    return s;
  }
  if (!std::isfinite(b)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias is ", b, "; it must be finite"));
  }
  LinearWeights weights;
  weights.w = std::move(w);
  weights.b = b;
  return weights;
}

}  // namespace

Model::Model(std::string name, const ModelSpec& spec)
    : name_(std::move(name)), spec_(spec), space_(MakeFeatureSpace(spec)) {
  if (spec.standardize) {
    standardizer_ = std::make_unique<Standardizer>(spec.dimension);
  }
  if (IsMulticlass(spec)) {
    multiclass_ = MakeMulticlassClassifier(spec);
  } else {
    classifier_ = MakeBinaryClassifier(spec);
  }
}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(
    std::string name, const ModelSpec& spec,
    const std::vector<std::string>& classes) {
  if (absl::Status s = ValidateModelName(name); !s.ok()) return s;
  if (absl::Status s = ValidateModelSpec(spec); !s.ok()) return s;
  if (!classes.empty() && !IsMulticlass(spec)) {
    return absl::InvalidArgumentError(
        "classes apply to multiclass models; binary labels are -1 and +1");
  }
  std::unique_ptr<Model> model(new Model(std::move(name), spec));
  std::unique_lock lock(model->mu_);
  for (const std::string& label : classes) {
    if (model->class_index_.contains(label)) {
      return absl::InvalidArgumentError(
          absl::StrCat("class ", Quoted(label), " is listed twice"));
    }
    if (absl::Status s = model->ClassIndex(label).status(); !s.ok()) return s;
  }
  lock.unlock();
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::Restore(ModelSnapshot snapshot) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Create(std::move(snapshot.name), snapshot.spec, snapshot.classes);
  if (!model.ok()) return model.status();
  Model& m = **model;
  absl::Status s;
  if (m.multiclass()) {
    if (snapshot.class_weights.size() != snapshot.classes.size()) {
      return absl::DataLossError("one weight row per class expected");
    }
    for (size_t k = 0; k < snapshot.classes.size() && s.ok(); ++k) {
      s = m.SetClassWeights(snapshot.classes[k],
                            std::move(snapshot.class_weights[k].w),
                            snapshot.class_weights[k].b);
    }
  } else {
    s = m.SetWeights(std::move(snapshot.weights.w), snapshot.weights.b);
  }
  if (!s.ok()) return s;
  std::unique_lock lock(m.mu_);
  s = m.multiclass() ? m.multiclass_->ImportState(snapshot.state)
                     : m.classifier_->ImportState(snapshot.state);
  if (s.ok() && m.standardizer_ != nullptr) {
    s = m.standardizer_->Import(snapshot.standardizer);
  }
  if (!s.ok()) return s;
  m.counters_ = snapshot.counters;
  return model;
}

absl::Status Model::Learn(absl::Span<const Example> examples,
                          absl::Span<ExampleOutcome> outcomes,
                          std::vector<std::string>* class_names) {
  std::unique_lock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) {
    return absl::NotFoundError(
        absl::StrCat("model '", name_, "' was deleted"));
  }
  for (size_t i = 0; i < examples.size(); ++i) {
    LearnOne(examples[i], outcomes[i]);
  }
  if (multiclass()) {
    multiclass_->EndBatch();
  } else {
    classifier_->EndBatch();
  }
  AppendClassNames(class_names);
  if (!examples.empty()) generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

void Model::LearnOne(const Example& example, ExampleOutcome& outcome) {
  double squared_norm = 0.0;
  Features x;
  outcome.error =
      Canonical(example.features, features_scratch_, x, squared_norm);
  if (outcome.error.ok()) {
    outcome.error = ValidateImportanceWeight(example.weight);
  }
  int true_class = 0;
  if (outcome.error.ok()) {
    if (multiclass()) {
      absl::StatusOr<int> index = ClassIndex(example.class_label);
      if (index.ok()) true_class = *index;
      outcome.error = index.status();
    } else {
      outcome.error = ValidateLabel(example.label);
    }
  }
  if (!outcome.error.ok()) {
    outcome.update = Update();
    outcome.mistake = false;
    outcome.examples_seen = outcome.updates = 0;
    outcome.predicted_class = -1;
    outcome.class_scores.clear();
    outcome.class_probabilities.clear();
    return;
  }
  if (standardizer_ != nullptr) {
    if (example.weight > 0.0) standardizer_->Observe(x);
    x = Prepared(x, scratch_);
    squared_norm = SquaredNorm(x);
  }
  if (multiclass()) {
    const MulticlassUpdate m =
        multiclass_->Learn(x, true_class, example.weight, outcome.class_scores,
                           outcome.class_probabilities);
    Update& u = outcome.update;
    u.score = outcome.class_scores[true_class];
    u.margin = m.margin;
    u.predicted_label = 0;
    u.updated = m.updated;
    u.loss = m.loss;
    u.probability = outcome.class_probabilities.empty()
                        ? std::nullopt
                        : std::optional<double>(
                              outcome.class_probabilities[true_class]);
    outcome.predicted_class = m.predicted_class;
    outcome.mistake = m.predicted_class != true_class;
  } else {
    outcome.update = classifier_->Learn(x, example.label, example.weight);
    outcome.mistake = outcome.update.predicted_label != example.label;
  }
  ModelCounters& c = counters_;
  c.examples_seen += 1;
  c.updates += outcome.update.updated ? 1 : 0;
  c.mistakes += outcome.mistake ? 1 : 0;
  c.loss_sum += outcome.update.loss;
  c.max_squared_norm = std::max(c.max_squared_norm, squared_norm + 1.0);
  outcome.examples_seen = c.examples_seen;
  outcome.updates = c.updates;
}

absl::StatusOr<int> Model::ClassIndex(absl::string_view label) {
  auto it = class_index_.find(label);
  if (it != class_index_.end()) return it->second;
  if (absl::Status s = ValidateClassLabel(label); !s.ok()) return s;
  const int64_t classes = static_cast<int64_t>(classes_.size()) + 1;
  if (classes > kMaxClasses ||
      classes * (FeatureWidth(spec_) + 1) > kMaxMulticlassWeights) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model '", name_, "' cannot add class '", label, "': it has ",
        classes_.size(), " classes, the most its dimension allows"));
  }
  multiclass_->AddClass();
  classes_.emplace_back(label);
  class_index_.emplace(classes_.back(), multiclass_->num_classes() - 1);
  return multiclass_->num_classes() - 1;
}

std::vector<std::string> Model::classes() const {
  std::shared_lock lock(mu_);
  return classes_;
}

absl::Status Model::Canonical(const FeatureInput& input,
                              FeatureSpace::Scratch& scratch, Features& x,
                              double& squared_norm) const {
  if (absl::Status s = space_.Prepare(input, scratch, x); !s.ok()) return s;
  // ‖x‖² is finite exactly when every value is (barring overflow of huge
  // values, which ValidateFinite then accepts), so one pass serves both R
  // and the check; the full check runs only when something is off.
  squared_norm = SquaredNorm(x);
  if (!std::isfinite(squared_norm)) return ValidateFinite(input);
  return absl::OkStatus();
}

Features Model::Prepared(Features x, std::vector<double>& scratch) const {
  if (standardizer_ == nullptr) return x;
  standardizer_->Transform(x, scratch);
  return scratch;
}

void Model::AppendClassNames(std::vector<std::string>* class_names) const {
  if (class_names == nullptr) return;
  for (size_t k = class_names->size(); k < classes_.size(); ++k) {
    class_names->push_back(classes_[k]);
  }
}

absl::Status Model::Predict(absl::Span<const FeatureInput> instances,
                            absl::Span<Prediction> out,
                            std::vector<std::string>* class_names) const {
  // Canonical forms of all instances first, each in its own scratch.
  std::vector<FeatureSpace::Scratch> scratches(instances.size());
  std::vector<Features> xs(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    double squared_norm = 0.0;
    absl::Status s = Canonical(instances[i], scratches[i], xs[i], squared_norm);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("instance ", i, ": ", s.message()));
    }
  }
  std::shared_lock lock(mu_);
  AppendClassNames(class_names);
  std::vector<double> scratch;
  if (multiclass()) {
    if (classes_.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", name_, "' knows no class yet; train it or list classes "
          "at creation"));
    }
    for (size_t i = 0; i < instances.size(); ++i) {
      Prediction& p = out[i];
      multiclass_->Predict(Prepared(xs[i], scratch), p.class_scores,
                           p.class_probabilities);
      p.predicted_class = ArgMax(p.class_scores);
    }
    return absl::OkStatus();
  }
  const LinearWeights& weights = classifier_->weights();
  const double norm = weights.Norm();
  for (size_t i = 0; i < instances.size(); ++i) {
    Prediction& p = out[i];
    p.score = weights.Score(Prepared(xs[i], scratch));
    p.label = PredictedLabel(p.score);
    p.signed_distance = norm > 0.0 ? std::optional<double>(p.score / norm)
                                   : std::nullopt;
    p.probability = classifier_->Probability(p.score);
  }
  return absl::OkStatus();
}

void Model::Evaluate(absl::Span<const Example> examples,
                     std::optional<double> threshold,
                     Evaluation& evaluation) const {
  std::shared_lock lock(mu_);
  if (!multiclass()) {
    evaluation.ClassIndex("-1");  // the binary classes, in their order
    evaluation.ClassIndex("+1");
  }
  std::vector<double> scores, probabilities, scratch;
  FeatureSpace::Scratch features_scratch;
  for (const Example& e : examples) {
    double squared_norm = 0.0;
    Features x;
    absl::Status error =
        Canonical(e.features, features_scratch, x, squared_norm);
    if (error.ok()) {
      error = multiclass() ? ValidateClassLabel(e.class_label)
                           : ValidateLabel(e.label);
    }
    if (!error.ok()) {
      evaluation.Reject(error);
      continue;
    }
    if (multiclass()) {
      if (classes_.empty()) {
        evaluation.Reject(absl::FailedPreconditionError(
            "the model knows no class yet"));
        continue;
      }
      multiclass_->Predict(Prepared(x, scratch), scores, probabilities);
      const int predicted = ArgMax(scores);
      const int truth = evaluation.ClassIndex(e.class_label);
      auto known = class_index_.find(e.class_label);
      std::optional<double> p;
      if (!probabilities.empty()) {
        p = known == class_index_.end() ? 0.0 : probabilities[known->second];
      }
      evaluation.Add(truth, evaluation.ClassIndex(classes_[predicted]), p);
      continue;
    }
    const double score = classifier_->weights().Score(Prepared(x, scratch));
    const std::optional<double> p = classifier_->Probability(score);
    const int predicted = threshold.has_value() && p.has_value()
                              ? (*p >= *threshold ? 1 : -1)
                              : PredictedLabel(score);
    std::optional<double> p_true;
    if (p.has_value()) p_true = e.label > 0 ? *p : 1.0 - *p;
    evaluation.Add(e.label > 0 ? 1 : 0, predicted > 0 ? 1 : 0, p_true);
  }
}

absl::Status Model::SetWeights(std::vector<double> w, double b) {
  if (multiclass()) {
    return absl::InvalidArgumentError(
        "a multiclass model's weights are set per class: name the class");
  }
  absl::StatusOr<LinearWeights> weights =
      CheckedWeights(std::move(w), b, FeatureWidth(spec_));
  if (!weights.ok()) return weights.status();
  std::unique_lock lock(mu_);
  classifier_->set_weights(*std::move(weights));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

absl::Status Model::SetClassWeights(absl::string_view label,
                                    std::vector<double> w, double b) {
  if (!multiclass()) {
    return absl::InvalidArgumentError(
        "a binary model has one weight vector: leave the class unset");
  }
  absl::StatusOr<LinearWeights> weights =
      CheckedWeights(std::move(w), b, FeatureWidth(spec_));
  if (!weights.ok()) return weights.status();
  std::unique_lock lock(mu_);
  absl::StatusOr<int> k = ClassIndex(label);
  if (!k.ok()) return k.status();
  multiclass_->set_weights(*k, *std::move(weights));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

ModelStats Model::Stats() const {
  ModelStats stats;
  std::shared_lock lock(mu_);
  stats.counters = counters_;
  if (multiclass()) {
    double sum = 0.0;
    for (int k = 0; k < multiclass_->num_classes(); ++k) {
      sum += SquaredNorm(multiclass_->weights(k).w);
    }
    stats.weight_norm = std::sqrt(sum);
  } else {
    stats.weight_norm = classifier_->weights().Norm();
    stats.bias = classifier_->weights().b;
  }
  return stats;
}

void Model::CopyWeights(ModelSnapshot& out) const {
  out.name = name_;
  out.spec = spec_;
  if (multiclass()) {
    out.classes = classes_;
    for (int k = 0; k < multiclass_->num_classes(); ++k) {
      out.class_weights.push_back(multiclass_->weights(k));
    }
  } else {
    out.weights = classifier_->weights();
  }
}

ModelSnapshot Model::Weights() const {
  ModelSnapshot weights;
  std::shared_lock lock(mu_);
  CopyWeights(weights);
  return weights;
}

ModelSnapshot Model::Snapshot() const {
  ModelSnapshot snapshot;
  std::shared_lock lock(mu_);
  CopyWeights(snapshot);
  snapshot.state = multiclass() ? multiclass_->ExportState()
                                : classifier_->ExportState();
  if (standardizer_ != nullptr) {
    snapshot.standardizer = standardizer_->Export();
  }
  snapshot.counters = counters_;
  return snapshot;
}

}  // namespace halfspace
