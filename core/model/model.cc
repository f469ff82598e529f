#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

// A model's incarnation (see Model::incarnation), never 0: the time it was
// made, told apart from others made within the same clock tick by a count
// (no allocation, unlike a random generator's entropy pool, so that a
// model's memory is what ModelBytes says).
uint64_t NewIncarnation() {
  static std::atomic<uint64_t> made{0};
  const uint64_t now = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  return (now ^ (made.fetch_add(1) * 0x9E3779B97F4A7C15u)) | 1;
}

// A LinearWeights from user input: one weight per coordinate of the
// feature space (`width`), all finite.
absl::StatusOr<LinearWeights> CheckedWeights(std::vector<double> w, double b,
                                             int64_t width) {
  if (static_cast<int64_t>(w.size()) != width) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights has ", w.size(), " values but the model has ",
                     width, " (its dimension plus its hash buckets)"));
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

// A prediction with the top k asked for holds every class's score for at
// most this many (instance, class) pairs at once.
constexpr size_t kScoresHeldWhilePredicting = size_t{1} << 16;

// INVALID_ARGUMENT naming the score when a prediction's score, or any of
// its class scores, is not finite.
absl::Status FiniteScores(const Prediction& p) {
  double score = p.score;
  for (double s : p.class_scores) {
    if (!std::isfinite(s)) score = s;
  }
  return std::isfinite(score) ? absl::OkStatus() : ScoreOverflowError(score);
}

// Copies `all` into `out` with only the k highest class scores, highest
// first; ties keep class order, so the first is the predicted class.
void KeepTopClasses(const Prediction& all, int64_t k, Prediction& out) {
  out = Prediction();
  out.label = all.label;
  out.score = all.score;
  out.signed_distance = all.signed_distance;
  out.probability = all.probability;
  out.predicted_class = all.predicted_class;
  const size_t classes = all.class_scores.size();
  const size_t kept = std::min<size_t>(k, classes);
  std::vector<int>& order = out.classes;
  order.resize(classes);
  for (size_t c = 0; c < classes; ++c) order[c] = static_cast<int>(c);
  std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                    [&](int a, int b) {
                      const double sa = all.class_scores[a];
                      const double sb = all.class_scores[b];
                      return sa > sb || (sa == sb && a < b);
                    });
  order.resize(kept);
  order.shrink_to_fit();
  for (int c : order) {
    out.class_scores.push_back(all.class_scores[c]);
    if (!all.class_probabilities.empty()) {
      out.class_probabilities.push_back(all.class_probabilities[c]);
    }
  }
}

absl::Status Stopped() {
  return absl::CancelledError(
      "the call was cancelled or its deadline passed; nothing was done");
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

// OK if learning an example whose (standardized) x has ‖x‖² =
// `squared_norm` kept every number finite: x's norm, the scores in
// `outcome`, its loss and every value the update changed, saved in `undo`.
// Else why not: the example is refused, as scikit-learn refuses to fit
// when its weights overflow.
absl::Status Overflow(double squared_norm, const ExampleOutcome& outcome,
                      const UndoLog& undo) {
  constexpr absl::string_view kUnchanged =
      "; the example was not learned and the model is unchanged";
  if (!std::isfinite(squared_norm)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the features are too large: ‖x‖² overflows a double; "
                     "scale them down",
                     kUnchanged));
  }
  double score = outcome.update.score;
  for (double s : outcome.class_scores) {
    if (!std::isfinite(s)) score = s;
  }
  if (!std::isfinite(score)) {
    absl::Status s = ScoreOverflowError(score);
    return absl::InvalidArgumentError(absl::StrCat(s.message(), kUnchanged));
  }
  if (!std::isfinite(outcome.update.loss) || !undo.Finite()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning the example would make the model's weights or the "
        "algorithm's state overflow (not finite); scale the features down "
        "or lower the learning rate",
        kUnchanged));
  }
  return absl::OkStatus();
}

}  // namespace

Model::Model(std::string name, uint64_t incarnation, const ModelSpec& spec,
             std::shared_ptr<ResourceBudget> budget, int64_t reserved)
    : name_(std::move(name)),
      incarnation_(incarnation),
      spec_(spec),
      space_(MakeFeatureSpace(spec)),
      budget_(std::move(budget)),
      learner_(MakeLearner(spec, &undo_)),
      standardizer_(spec.standardize
                        ? std::make_unique<Standardizer>(spec.dimension)
                        : nullptr),
      reserved_(reserved),
      window_(spec.progress_window) {}

Model::~Model() { budget_->Release(reserved_ + pending_reserved_); }

absl::StatusOr<std::unique_ptr<Model>> Model::Create(
    std::string name, const ModelSpec& spec,
    const std::vector<std::string>& classes,
    std::shared_ptr<ResourceBudget> budget, uint64_t incarnation) {
  if (absl::Status s = ValidateModelName(name); !s.ok()) return s;
  if (absl::Status s = ValidateModelSpec(spec); !s.ok()) return s;
  const int64_t bytes = ModelBytes(spec, classes.size());
  if (budget->enforcing()) {
    const Limits& limits = budget->limits();
    if (static_cast<int64_t>(classes.size()) > limits.max_classes) {
      return LimitExceeded(absl::StrCat("model ", Quoted(name), " lists ",
                                        classes.size(), " classes"),
                           limits.max_classes, "max_classes");
    }
    if (bytes > limits.max_model_bytes) {
      return LimitExceeded(
          absl::StrCat("model ", Quoted(name), " would take ", bytes,
                       " bytes (its feature space, classes and the "
                       "algorithm's state); use fewer hash bits, a smaller "
                       "dimension or fewer classes"),
          limits.max_model_bytes, "max_model_bytes");
    }
  }
  if (absl::Status s = budget->Reserve(bytes, name); !s.ok()) return s;
  std::unique_ptr<Model> model(new Model(
      std::move(name), incarnation != 0 ? incarnation : NewIncarnation(), spec,
      std::move(budget), bytes));
  std::unique_lock lock(model->mu_);
  for (const std::string& label : classes) {
    if (absl::Status s = model->learner_->AddClass(label); !s.ok()) return s;
  }
  lock.unlock();
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::Restore(
    ModelSnapshot snapshot, std::shared_ptr<ResourceBudget> budget) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Create(std::move(snapshot.name), snapshot.spec, snapshot.classes,
             std::move(budget));
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
  m.incarnation_ = snapshot.incarnation;
  if (!snapshot.progress.empty()) {  // older files have none: a fresh one
    s = m.window_.Import(snapshot.progress);
    if (!s.ok()) return s;
  }
  s = m.paired_.Import(std::move(snapshot.paired));
  if (!s.ok()) return s;
  m.pending_.Import(std::move(snapshot.pending));
  s = m.budget_->Reserve(m.pending_.bytes(), m.name_);
  if (!s.ok()) return s;
  m.pending_reserved_ = m.pending_.bytes();
  m.lsn_ = snapshot.lsn;
  m.sources_.insert(snapshot.sources.begin(), snapshot.sources.end());
  return model;
}

absl::Status Model::CheckFeatureLimits(const FeatureInput& input) const {
  if (!budget_->enforcing()) return absl::OkStatus();
  const Limits& limits = budget_->limits();
  const int64_t named = input.named.size();
  if (named > limits.max_named_features) {
    return LimitExceeded(
        absl::StrCat("the example has ", named, " named features"),
        limits.max_named_features, "max_named_features");
  }
  const int64_t products = space_.InteractionProducts(input.named);
  if (products > limits.max_interaction_products) {
    return LimitExceeded(absl::StrCat("the example's named features make ",
                                      products, " interaction products"),
                         limits.max_interaction_products,
                         "max_interaction_products");
  }
  return absl::OkStatus();
}

absl::Status Model::PrepareFeatures(const FeatureInput& input,
                                    PreparedExample& prepared) const {
  if (!input.named.empty()) {
    if (absl::Status s = CheckFeatureLimits(input); !s.ok()) return s;
  }
  absl::Status s = space_.Prepare(input, prepared.scratch, prepared.x);
  if (!s.ok()) return s;
  // ‖x‖² is finite exactly when every value is (barring overflow of huge
  // values, which ValidateFinite then accepts), so one pass serves both R
  // and the check; the full check runs only when something is off.
  prepared.squared_norm = FastSquaredNorm(prepared.x);
  if (!std::isfinite(prepared.squared_norm)) return ValidateFinite(input);
  return absl::OkStatus();
}

void Model::Prepare(const Example& example, PreparedExample& prepared) const {
  prepared.label = example.label;
  prepared.class_label = example.class_label;
  prepared.weight = example.weight;
  absl::Status s = PrepareFeatures(example.features, prepared);
  // The checks that pass are done inline; the Validate functions only
  // write the message of those that fail.
  const bool weight_ok = std::isfinite(example.weight) && example.weight >= 0.0;
  const bool label_ok =
      multiclass() ? !example.class_label.empty() &&
                         example.class_label.size() <= kMaxClassLabelBytes
                   : example.label == 1 || example.label == -1;
  if (s.ok() && !weight_ok) s = ValidateImportanceWeight(example.weight);
  if (s.ok() && !label_ok) {
    s = multiclass() ? ValidateClassLabel(example.class_label)
                     : ValidateLabel(example.label);
  }
  prepared.error = std::move(s);
}

bool Model::PreparesLike(const Model& other) const {
  const ModelSpec& a = spec_;
  const ModelSpec& b = other.spec_;
  if (multiclass() != other.multiclass() || a.dimension != b.dimension ||
      a.hash_bits != b.hash_bits ||
      a.interactions.size() != b.interactions.size()) {
    return false;
  }
  for (size_t i = 0; i < a.interactions.size(); ++i) {
    if (a.interactions[i].first != b.interactions[i].first ||
        a.interactions[i].second != b.interactions[i].second) {
      return false;
    }
  }
  return true;
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
                          std::vector<std::string>* class_names) {
  Writer writer(*this);
  if (absl::Status s = writer.CheckNotDeleted(); !s.ok()) return s;
  std::vector<uint32_t> refused;
  writer.Admit(examples, 0, outcomes, refused);
  LearnPlan plan;
  plan.refused = refused;
  writer.Learn(examples, outcomes, plan, class_names);
  return absl::OkStatus();
}

absl::Status Model::Writer::CheckNotDeleted() const {
  if (model_.deleted_.load(std::memory_order_acquire)) {
    return Deleted(model_.name_);
  }
  return absl::OkStatus();
}

uint64_t Model::Writer::LastSequence(absl::string_view source) const {
  auto it = model_.sources_.find(source);
  return it == model_.sources_.end() ? 0 : it->second;
}

void Model::Writer::SetLastSequence(absl::string_view source,
                                    uint64_t sequence) {
  model_.sources_[std::string(source)] = sequence;
  changed_ = true;
}

void Model::Writer::Learn(absl::Span<const PreparedExample> examples,
                          absl::Span<ExampleOutcome> outcomes,
                          const LearnPlan& plan,
                          std::vector<std::string>* class_names) {
  Model& m = model_;
  for (size_t i = 0; i < plan.from; ++i) {
    Reject(absl::OkStatus(), outcomes[i]);
    outcomes[i].duplicate = true;
  }
  const absl::Span<const uint32_t> refused = plan.refused;
  size_t next = 0;
  bool removed_class = false;
  const uint64_t joined = m.pending_.counters().joined;
  for (size_t i = plan.from; i < examples.size(); ++i) {
    while (next < refused.size() && refused[next] < i) ++next;
    if (next < refused.size() && refused[next] == i) continue;
    if (!m.JoinsPending(plan, i, outcomes[i])) continue;
    removed_class |= !m.LearnOne(examples[i], outcomes[i]);
    if (!outcomes[i].error.ok()) continue;
    changed_ = true;
    if (!plan.ids.empty()) m.pending_.Join(plan.ids[i], plan.pending_limits);
  }
  changed_ |= m.pending_.counters().joined != joined;
  m.undo_.Release();
  m.learner_->EndBatch();
  if (removed_class) {  // give back what Admit reserved for it
    const int64_t unused =
        m.reserved_ - ModelBytes(m.spec_, m.learner_->classes().size());
    if (unused > 0) m.Unreserve(unused);
  }
  m.AppendClassNames(class_names);
}

void Model::Writer::ExpirePending(int64_t now_micros,
                                  const PendingLimits& limits) {
  const uint64_t expired = model_.pending_.counters().expired;
  model_.pending_.Expire(now_micros, limits);
  model_.ReleasePendingBytes();
  changed_ |= model_.pending_.counters().expired != expired;
}

void Model::Writer::CountPeers(absl::Span<const PeerOutcomes> peers,
                               absl::Span<const ExampleOutcome> outcomes) {
  std::vector<uint8_t>& own = model_.own_outcomes_;
  own.resize(outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    own[i] = PeerOutcomeOf(outcomes[i]);
  }
  for (const PeerOutcomes& peer : peers) {
    if (peer.outcomes.size() == outcomes.size()) {
      model_.paired_.Count(peer, own);
    }
  }
}

int64_t Model::Writer::Admit(absl::Span<const PreparedExample> examples,
                             size_t from, absl::Span<ExampleOutcome> outcomes,
                             std::vector<uint32_t>& refused) {
  Model& m = model_;
  if (!m.budget_->enforcing()) {  // recovery: refuse what was refused
    std::sort(refused.begin(), refused.end());
    refused.erase(std::unique(refused.begin(), refused.end()), refused.end());
    for (const uint32_t i : refused) {
      if (i >= from && i < examples.size()) {
        Reject(absl::ResourceExhaustedError(
                   "refused for a server limit when first learned"),
               outcomes[i]);
      }
    }
    return 0;
  }
  refused.clear();
  const bool adds_classes = m.multiclass();
  int64_t reserved = 0;
  int64_t classes = m.learner_->classes().size();
  absl::flat_hash_set<absl::string_view> admitted;
  for (size_t i = from; i < examples.size(); ++i) {
    const PreparedExample& e = examples[i];
    absl::Status s = e.error;
    if (s.ok()) {
      if (!adds_classes || m.learner_->HasClass(e.class_label) ||
          admitted.contains(e.class_label)) {
        continue;
      }
      s = m.AdmitClass(e.class_label, classes + 1);
      if (s.ok()) {
        admitted.insert(e.class_label);
        reserved += ClassBytes(m.spec_);
        ++classes;
        continue;
      }
    }
    if (absl::IsResourceExhausted(s)) {
      Reject(std::move(s), outcomes[i]);
      refused.push_back(i);
    }
  }
  return reserved;
}

absl::Status Model::AdmitClass(absl::string_view label, int64_t classes) {
  const int64_t bytes = ClassBytes(spec_);
  if (budget_->enforcing()) {
    const Limits& limits = budget_->limits();
    if (classes > limits.max_classes) {
      return LimitExceeded(
          absl::StrCat("cannot add class ", Quoted(label), ": model ",
                       Quoted(name_), " would have ", classes, " classes"),
          limits.max_classes, "max_classes");
    }
    if (reserved_ + bytes > limits.max_model_bytes) {
      return LimitExceeded(
          absl::StrCat("cannot add class ", Quoted(label), ": model ",
                       Quoted(name_), " would take ", reserved_ + bytes,
                       " bytes with ", classes, " classes"),
          limits.max_model_bytes, "max_model_bytes");
    }
  }
  if (absl::Status s = budget_->Reserve(bytes, name_); !s.ok()) return s;
  reserved_ += bytes;
  return absl::OkStatus();
}

void Model::Unreserve(int64_t bytes) {
  budget_->Release(bytes);
  reserved_ -= bytes;
}

bool Model::JoinsPending(const LearnPlan& plan, size_t i,
                         ExampleOutcome& outcome) {
  if (plan.ids.empty()) return true;
  const absl::string_view id = plan.ids[i];
  switch (pending_.Check(id, plan.now_micros)) {
    case PendingExamples::State::kWaiting:
      return true;
    case PendingExamples::State::kJoined:
      Reject(absl::OkStatus(), outcome);
      outcome.duplicate = true;
      return false;
    case PendingExamples::State::kExpired:
      Reject(absl::NotFoundError(absl::StrCat(
                 "example ", Quoted(id),
                 " expired before its feedback came (its time to live "
                 "passed, or newer predictions needed its room)")),
             outcome);
      return false;
    case PendingExamples::State::kUnknown:
      break;
  }
  Reject(absl::NotFoundError(absl::StrCat(
             "no example is remembered under id ", Quoted(id), " for model ",
             Quoted(name_), ": predict with remember set first")),
         outcome);
  return false;
}

void Model::ReleasePendingBytes() {
  const int64_t unused = pending_reserved_ - pending_.bytes();
  if (unused > 0) {
    budget_->Release(unused);
    pending_reserved_ -= unused;
  }
}

absl::Status Model::Remember(std::vector<PendingExamples::Entry>&& entries,
                             int64_t now_micros, const PendingLimits& limits,
                             const WriteAhead& write_ahead) {
  int64_t growth = 0;  // at most: evictions and joins only free bytes
  for (const PendingExamples::Entry& e : entries) {
    const int64_t bytes = PendingExamples::Bytes(e);
    if (bytes > limits.max_bytes && budget_->enforcing()) {
      return LimitExceeded(absl::StrCat("example ", Quoted(e.id), " takes ",
                                        bytes, " bytes to remember"),
                           limits.max_bytes, "max_pending_bytes");
    }
    growth += bytes;
  }
  absl::flat_hash_set<absl::string_view> ids;
  std::unique_lock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) return Deleted(name_);
  for (const PendingExamples::Entry& e : entries) {
    if (pending_.Taken(e.id) || !ids.insert(e.id).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("example id ", Quoted(e.id), " of model ", Quoted(name_),
                       " was used before; give each prediction a new id"));
    }
  }
  if (absl::Status s = budget_->Reserve(growth, name_); !s.ok()) return s;
  pending_reserved_ += growth;
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) {
    ReleasePendingBytes();
    return s;
  }
  pending_.Expire(now_micros, limits);
  for (PendingExamples::Entry& e : entries) {
    pending_.Remember(std::move(e), limits);
  }
  ReleasePendingBytes();
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

PendingExamples::State Model::Pending(absl::string_view id, int64_t now_micros,
                                      std::string* features) const {
  std::shared_lock lock(mu_);
  const PendingExamples::State state = pending_.Check(id, now_micros);
  if (state == PendingExamples::State::kWaiting && features != nullptr) {
    *features = *pending_.Features(id);
  }
  return state;
}

bool Model::LearnOne(const PreparedExample& example, ExampleOutcome& outcome) {
  const size_t classes = learner_->classes().size();
  absl::StatusOr<int> target =
      example.error.ok() ? learner_->Target(example) : example.error;
  if (!target.ok()) {
    Reject(target.status(), outcome);
    return true;
  }
  outcome.error = absl::OkStatus();
  outcome.duplicate = false;
  undo_.Clear();
  Features x = example.x;
  double squared_norm = example.squared_norm;
  if (standardizer_ != nullptr) {
    if (example.weight > 0.0) standardizer_->Observe(x, undo_);
    x = Standardized(x, scratch_);
    squared_norm = FastSquaredNorm(x);
  }
  if (std::isfinite(squared_norm)) {
    learner_->Learn(x, *target, example.weight, outcome);
  }
  if (absl::Status s = Overflow(squared_norm, outcome, undo_); !s.ok()) {
    undo_.Undo();
    Reject(std::move(s), outcome);
    if (learner_->classes().size() == classes) return true;
    learner_->RemoveLastClass();
    return false;
  }
  ModelCounters& c = counters_;
  c.examples_seen += 1;
  c.updates += outcome.update.updated ? 1 : 0;
  c.mistakes += outcome.mistake ? 1 : 0;
  // Saturates rather than overflow: losses near the largest double say
  // enough.
  c.loss_sum = std::min(c.loss_sum + outcome.update.loss,
                        std::numeric_limits<double>::max());
  c.max_squared_norm = std::max(c.max_squared_norm, squared_norm + 1.0);
  outcome.examples_seen = c.examples_seen;
  outcome.updates = c.updates;
  window_.Add(outcome.mistake, outcome.update.loss);
  return true;
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
                            std::vector<std::string>* class_names,
                            const StopCheck& stop,
                            const PredictOptions& options) const {
  // Prepare every instance before taking the lock.
  std::vector<PreparedExample> prepared(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    if (stop && stop()) return Stopped();
    if (absl::Status s = PrepareFeatures(instances[i], prepared[i]); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("instance ", i, ": ", s.message()));
    }
  }
  std::vector<Features> xs(instances.size());
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = prepared[i].x;
  std::shared_lock lock(mu_);
  absl::Status status = CheckPredictionSize(xs.size(), options);
  if (status.ok()) {
    AppendClassNames(class_names);
    status = PredictLocked(xs, options.top_k, out);
  }
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("model ", Quoted(name_),
                                                    ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status Model::CheckPredictionSize(size_t instances,
                                        const PredictOptions& options) const {
  const std::vector<std::string>& classes = learner_->classes();
  size_t longest = 0;
  for (const std::string& label : classes) {
    longest = std::max(longest, label.size());
  }
  const size_t scores = options.top_k < 0
                            ? classes.size()
                            : std::min<size_t>(options.top_k, classes.size());
  // Neither term can overflow: instances and classes are bounded by the
  // request's size and kMaxClasses, labels by kMaxClassLabelBytes.
  const size_t bound =
      options.response_bytes +
      instances * (options.instance_bytes + longest +
                   scores * (options.class_score_bytes + longest));
  if (bound <= options.max_bytes) return absl::OkStatus();
  return LimitExceeded(
      absl::StrCat("the answer to ", instances, " instances with ", scores,
                   " class scores each could take ", bound,
                   " bytes (send fewer instances, or ask for fewer class "
                   "scores with top_k)"),
      options.max_bytes, "max_message_bytes");
}

absl::Status Model::PredictLocked(absl::Span<const Features> xs, int64_t top_k,
                                  absl::Span<Prediction> out) const {
  // With the top k asked for, the scores of every class are held for a
  // chunk of instances at a time, and only the k best are kept.
  const size_t classes = learner_->classes().size();
  const size_t chunk =
      top_k < 0 || classes == 0
          ? std::max<size_t>(xs.size(), 1)
          : std::max<size_t>(1, kScoresHeldWhilePredicting / classes);
  std::vector<Prediction> all(top_k < 0 ? 0 : std::min(chunk, xs.size()));
  for (size_t start = 0; start < xs.size(); start += chunk) {
    const size_t n = std::min(chunk, xs.size() - start);
    absl::Span<Prediction> to =
        top_k < 0 ? out.subspan(start, n) : absl::MakeSpan(all.data(), n);
    if (absl::Status s = PredictChunk(xs.subspan(start, n), to); !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < n; ++i) {
      if (absl::Status s = FiniteScores(to[i]); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("instance ", start + i, ": ", s.message()));
      }
      if (top_k >= 0) KeepTopClasses(to[i], top_k, out[start + i]);
    }
  }
  return absl::OkStatus();
}

absl::Status Model::PredictChunk(absl::Span<const Features> xs,
                                 absl::Span<Prediction> out) const {
  if (standardizer_ == nullptr) return learner_->Predict(xs, out);
  // One at a time: a standardized x is dense, of the dimension.
  std::vector<double> z;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Features x = Standardized(xs[i], z);
    if (absl::Status s =
            learner_->Predict(absl::MakeConstSpan(&x, 1), out.subspan(i, 1));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Model::Evaluate(absl::Span<const Example> examples,
                             std::optional<double> threshold,
                             Evaluation& evaluation,
                             const StopCheck& stop) const {
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    if (stop && stop()) return Stopped();
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
  return absl::OkStatus();
}

absl::Status Model::SetClassWeights(absl::string_view label,
                                    std::vector<double> w, double b,
                                    const WriteAhead& write_ahead) {
  absl::StatusOr<LinearWeights> weights =
      CheckedWeights(std::move(w), b, FeatureWidth(spec_));
  if (!weights.ok()) return weights.status();
  std::unique_lock lock(mu_);
  if (absl::Status s = learner_->CheckSetWeights(label); !s.ok()) return s;
  const int64_t added = learner_->HasClass(label) ? 0 : ClassBytes(spec_);
  if (added > 0) {
    absl::Status s = AdmitClass(label, learner_->classes().size() + 1);
    if (!s.ok()) return s;
  }
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) {
    Unreserve(added);
    return s;
  }
  absl::Status s = learner_->SetWeights(label, *std::move(weights));
  if (s.ok()) generation_.fetch_add(1, std::memory_order_acq_rel);
  return s;
}

absl::Status Model::MarkDeleted(const WriteAhead& write_ahead) {
  std::unique_lock lock(mu_);
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) return s;
  deleted_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Model::WriteDown(const WriteAhead& write_ahead) {
  if (!write_ahead) return absl::OkStatus();
  absl::StatusOr<uint64_t> lsn = write_ahead();
  if (!lsn.ok()) return lsn.status();
  lsn_ = *lsn;
  return absl::OkStatus();
}

absl::Status Model::RecordCreation(const WriteAhead& write_ahead) {
  std::unique_lock lock(mu_);
  return WriteDown(write_ahead);
}

int64_t Model::ClassRoom() const {
  if (!multiclass()) return 0;
  const Limits& limits = budget_->limits();
  std::shared_lock lock(mu_);
  const int64_t classes = learner_->classes().size();
  const int64_t by_count = std::max<int64_t>(0, limits.max_classes - classes);
  const int64_t by_bytes = std::max<int64_t>(
      0, (limits.max_model_bytes - reserved_) / ClassBytes(spec_));
  return std::min({by_count, by_bytes, int64_t{kMaxClasses} - classes});
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

ModelCounters Model::counters() const {
  std::shared_lock lock(mu_);
  return counters_;
}

int64_t Model::memory_bytes() const {
  std::shared_lock lock(mu_);
  return reserved_ + pending_reserved_;
}

PendingStats Model::pending_stats() const {
  std::shared_lock lock(mu_);
  return PendingStatsLocked();
}

PendingStats Model::PendingStatsLocked() const {
  // Examples past their deadline count as expired already; their memory is
  // given back at the next change to the pending examples.
  const size_t due = pending_.Due(absl::ToUnixMicros(absl::Now()));
  PendingStats stats;
  stats.waiting = pending_.waiting() - due;
  stats.bytes = pending_.bytes();
  stats.counters = pending_.counters();
  stats.counters.expired += due;
  return stats;
}

PairedCounts Model::Paired(absl::string_view peer, uint64_t incarnation) const {
  std::shared_lock lock(mu_);
  return paired_.Find(peer, incarnation);
}

ModelStats Model::Stats() const {
  ModelStats stats;
  std::shared_lock lock(mu_);
  stats.counters = counters_;
  stats.pending = PendingStatsLocked();
  stats.window = window_.summary();
  stats.weight_norm = learner_->WeightNorm();
  stats.bias = learner_->Bias();
  return stats;
}

ModelSnapshot Model::Weights(int64_t offset, std::optional<int64_t> count,
                             uint64_t* generation) const {
  ModelSnapshot weights;
  weights.name = name_;
  weights.spec = spec_;
  std::shared_lock lock(mu_);
  if (generation != nullptr) *generation = this->generation();
  learner_->CopyWeights(weights, offset,
                        count.value_or(FeatureWidth(spec_) - offset));
  return weights;
}

ModelSnapshot Model::Snapshot(uint64_t* generation) const {
  ModelSnapshot snapshot;
  snapshot.name = name_;
  snapshot.spec = spec_;
  std::shared_lock lock(mu_);
  if (generation != nullptr) *generation = this->generation();
  learner_->CopyWeights(snapshot, 0, FeatureWidth(spec_));
  snapshot.state = learner_->ExportState();
  if (standardizer_ != nullptr) {
    snapshot.standardizer = standardizer_->Export();
  }
  snapshot.counters = counters_;
  snapshot.lsn = lsn_;
  snapshot.sources.insert(sources_.begin(), sources_.end());
  snapshot.pending = pending_.Export();
  snapshot.progress = window_.Export();
  snapshot.paired = paired_.peers();
  snapshot.incarnation = incarnation_;
  return snapshot;
}

}  // namespace halfspace
