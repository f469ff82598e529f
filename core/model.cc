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

absl::Status Deleted(absl::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("model ", Quoted(name), " was deleted"));
}

// Makes `outcome` that of a rejected example: the error, every other field
// unset, its buffers kept for reuse.
void Reject(absl::Status error, ExampleOutcome& outcome) {
  outcome.error = std::move(error);
  outcome.duplicate = false;
  outcome.update = Update();
  outcome.mistake = false;
  outcome.examples_seen = outcome.updates = 0;
  outcome.predicted_class = -1;
  outcome.class_scores.clear();
  outcome.class_probabilities.clear();
}

}  // namespace

Model::Model(std::string name, const ModelSpec& spec)
    : name_(std::move(name)),
      spec_(spec),
      space_(MakeFeatureSpace(spec)),
      learner_(MakeLearner(spec)),
      standardizer_(spec.standardize
                        ? std::make_unique<Standardizer>(spec.dimension)
                        : nullptr) {}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(
    std::string name, const ModelSpec& spec,
    const std::vector<std::string>& classes) {
  if (absl::Status s = ValidateModelName(name); !s.ok()) return s;
  if (absl::Status s = ValidateModelSpec(spec); !s.ok()) return s;
  std::unique_ptr<Model> model(new Model(std::move(name), spec));
  std::unique_lock lock(model->mu_);
  for (const std::string& label : classes) {
    if (absl::Status s = model->learner_->AddClass(label); !s.ok()) return s;
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
  s = m.learner_->ImportState(snapshot.state);
  if (s.ok() && m.standardizer_ != nullptr) {
    s = m.standardizer_->Import(snapshot.standardizer);
  }
  if (!s.ok()) return s;
  m.counters_ = snapshot.counters;
  m.lsn_ = snapshot.lsn;
  m.sources_.insert(snapshot.sources.begin(), snapshot.sources.end());
  return model;
}

absl::Status Model::PrepareFeatures(const FeatureInput& input,
                                    PreparedExample& prepared) const {
  absl::Status s = space_.Prepare(input, prepared.scratch, prepared.x);
  if (!s.ok()) return s;
  // ‖x‖² is finite exactly when every value is (barring overflow of huge
  // values, which ValidateFinite then accepts), so one pass serves both R
  // and the check; the full check runs only when something is off.
  prepared.squared_norm = SquaredNorm(prepared.x);
  if (!std::isfinite(prepared.squared_norm)) return ValidateFinite(input);
  return absl::OkStatus();
}

void Model::Prepare(const Example& example, PreparedExample& prepared) const {
  prepared.error = PrepareFeatures(example.features, prepared);
  if (prepared.error.ok()) {
    prepared.error = ValidateImportanceWeight(example.weight);
  }
  if (prepared.error.ok()) {
    prepared.error = multiclass() ? ValidateClassLabel(example.class_label)
                                  : ValidateLabel(example.label);
  }
  prepared.label = example.label;
  prepared.class_label = example.class_label;
  prepared.weight = example.weight;
}

absl::Status Model::Learn(absl::Span<const Example> examples,
                          absl::Span<ExampleOutcome> outcomes,
                          std::vector<std::string>* class_names) {
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    Prepare(examples[i], prepared[i]);
  }
  return Learn(absl::MakeConstSpan(prepared), outcomes, class_names);
}

absl::Status Model::Learn(absl::Span<const PreparedExample> examples,
                          absl::Span<ExampleOutcome> outcomes,
                          std::vector<std::string>* class_names,
                          Batch* batch) {
  const size_t n = examples.size();
  const bool tagged = batch != nullptr && !batch->source.empty();
  if (tagged && batch->first_sequence == 0) {
    return absl::InvalidArgumentError(
        "sequence numbers start at 1; a tagged batch cannot start at 0");
  }
  std::unique_lock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) return Deleted(name_);
  // Examples [0, fresh) were applied before: sequence <= the source's last.
  size_t fresh = 0;
  auto source = tagged ? sources_.find(batch->source) : sources_.end();
  if (source != sources_.end() && batch->first_sequence <= source->second) {
    fresh = static_cast<size_t>(
        std::min<uint64_t>(n, source->second - batch->first_sequence + 1));
  }
  if (tagged && source == sources_.end() && sources_.size() >= kMaxSources) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model ", Quoted(name_), " already tracks ", kMaxSources,
        " sources; reuse a source id"));
  }
  if (fresh < n && batch != nullptr) {
    if (absl::Status s = Log(batch->log); !s.ok()) return s;
  }
  for (size_t i = 0; i < fresh; ++i) {
    Reject(absl::OkStatus(), outcomes[i]);
    outcomes[i].duplicate = true;
  }
  for (size_t i = fresh; i < n; ++i) LearnOne(examples[i], outcomes[i]);
  learner_->EndBatch();
  AppendClassNames(class_names);
  if (fresh < n) {
    if (tagged) sources_[std::string(batch->source)] = batch->first_sequence + n - 1;
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  return absl::OkStatus();
}

void Model::LearnOne(const PreparedExample& example, ExampleOutcome& outcome) {
  absl::StatusOr<int> target =
      example.error.ok() ? learner_->Target(example) : example.error;
  if (!target.ok()) {
    Reject(target.status(), outcome);
    return;
  }
  outcome.error = absl::OkStatus();
  outcome.duplicate = false;
  Features x = example.x;
  double squared_norm = example.squared_norm;
  if (standardizer_ != nullptr) {
    if (example.weight > 0.0) standardizer_->Observe(x);
    x = Standardized(x, scratch_);
    squared_norm = SquaredNorm(x);
  }
  learner_->Learn(x, *target, example.weight, outcome);
  ModelCounters& c = counters_;
  c.examples_seen += 1;
  c.updates += outcome.update.updated ? 1 : 0;
  c.mistakes += outcome.mistake ? 1 : 0;
  c.loss_sum += outcome.update.loss;
  c.max_squared_norm = std::max(c.max_squared_norm, squared_norm + 1.0);
  outcome.examples_seen = c.examples_seen;
  outcome.updates = c.updates;
}

std::vector<std::string> Model::classes() const {
  std::shared_lock lock(mu_);
  return learner_->classes();
}

Features Model::Standardized(Features x, std::vector<double>& scratch) const {
  if (standardizer_ == nullptr) return x;
  standardizer_->Transform(x, scratch);
  return scratch;
}

void Model::AppendClassNames(std::vector<std::string>* class_names) const {
  if (class_names == nullptr) return;
  const std::vector<std::string>& classes = learner_->classes();
  for (size_t k = class_names->size(); k < classes.size(); ++k) {
    class_names->push_back(classes[k]);
  }
}

absl::Status Model::Predict(absl::Span<const FeatureInput> instances,
                            absl::Span<Prediction> out,
                            std::vector<std::string>* class_names) const {
  // Prepare every instance before taking the lock.
  std::vector<PreparedExample> prepared(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    if (absl::Status s = PrepareFeatures(instances[i], prepared[i]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("instance ", i, ": ", s.message()));
    }
  }
  std::vector<Features> xs(instances.size());
  std::vector<std::vector<double>> standardized(
      standardizer_ != nullptr ? instances.size() : 0);
  std::shared_lock lock(mu_);
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = standardizer_ != nullptr
                ? Standardized(prepared[i].x, standardized[i])
                : prepared[i].x;
  }
  AppendClassNames(class_names);
  absl::Status status = learner_->Predict(xs, out);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("model ", Quoted(name_),
                                                    ": ", status.message()));
  }
  return absl::OkStatus();
}

void Model::Evaluate(absl::Span<const Example> examples,
                     std::optional<double> threshold,
                     Evaluation& evaluation) const {
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    Prepare(examples[i], prepared[i]);
  }
  std::vector<double> scratch;
  std::shared_lock lock(mu_);
  learner_->StartEvaluation(evaluation);
  for (const PreparedExample& e : prepared) {
    if (!e.error.ok()) {
      evaluation.Reject(e.error);
      continue;
    }
    learner_->Evaluate(Standardized(e.x, scratch), e, threshold, evaluation);
  }
}

absl::Status Model::SetClassWeights(absl::string_view label,
                                    std::vector<double> w, double b,
                                    LogEntry* log) {
  absl::StatusOr<LinearWeights> weights =
      CheckedWeights(std::move(w), b, FeatureWidth(spec_));
  if (!weights.ok()) return weights.status();
  std::unique_lock lock(mu_);
  if (absl::Status s = learner_->CheckSetWeights(label); !s.ok()) return s;
  if (log != nullptr) {
    if (absl::Status s = Log(*log); !s.ok()) return s;
  }
  absl::Status s = learner_->SetWeights(label, *std::move(weights));
  if (s.ok()) generation_.fetch_add(1, std::memory_order_acq_rel);
  return s;
}

absl::Status Model::MarkDeleted(LogEntry* log) {
  std::unique_lock lock(mu_);
  if (log != nullptr) {
    if (absl::Status s = Log(*log); !s.ok()) return s;
  }
  deleted_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Model::Log(LogEntry& log) {
  if (log.journal == nullptr) return absl::OkStatus();
  absl::StatusOr<uint64_t> lsn = log.journal->Append(name_, log.record);
  if (!lsn.ok()) return lsn.status();
  log.lsn = lsn_ = *lsn;
  return absl::OkStatus();
}

absl::Status Model::RecordCreation(LogEntry& log) {
  std::unique_lock lock(mu_);
  return Log(log);
}

uint64_t Model::LastSequence(absl::string_view source) const {
  std::shared_lock lock(mu_);
  auto it = sources_.find(source);
  return it == sources_.end() ? 0 : it->second;
}

uint64_t Model::lsn() const {
  std::shared_lock lock(mu_);
  return lsn_;
}

ModelStats Model::Stats() const {
  ModelStats stats;
  std::shared_lock lock(mu_);
  stats.counters = counters_;
  stats.weight_norm = learner_->WeightNorm();
  stats.bias = learner_->Bias();
  return stats;
}

ModelSnapshot Model::Weights() const {
  ModelSnapshot weights;
  weights.name = name_;
  weights.spec = spec_;
  std::shared_lock lock(mu_);
  learner_->CopyWeights(weights);
  return weights;
}

ModelSnapshot Model::Snapshot() const {
  ModelSnapshot snapshot;
  snapshot.name = name_;
  snapshot.spec = spec_;
  std::shared_lock lock(mu_);
  learner_->CopyWeights(snapshot);
  snapshot.state = learner_->ExportState();
  if (standardizer_ != nullptr) {
    snapshot.standardizer = standardizer_->Export();
  }
  snapshot.counters = counters_;
  snapshot.lsn = lsn_;
  snapshot.sources.insert(sources_.begin(), sources_.end());
  return snapshot;
}

}  // namespace halfspace
