#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/quoted.h"
#include "core/model/shared_spec.h"

namespace halfspace {

Limits LimitsFor(const ModelSpec& spec, const Limits& server) {
  Limits limits = server;
  const ReplicaLimits& kept = spec.replication.limits;
  auto keep = [](int64_t value, int64_t& limit) {
    if (value > 0) limit = value;  // else not kept: the server's
  };
  keep(kept.max_model_bytes, limits.max_model_bytes);
  keep(kept.max_classes, limits.max_classes);
  keep(kept.max_named_features, limits.max_named_features);
  keep(kept.max_interaction_products, limits.max_interaction_products);
  return limits;
}

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

}  // namespace

Model::Model(std::string name, uint64_t incarnation, const ModelSpec& spec,
             std::shared_ptr<ResourceBudget> budget, int64_t reserved)
    : name_(std::move(name)),
      incarnation_(incarnation),
      shared_(SharedSpec(spec)),
      spec_(shared_.get()),
      budget_(std::move(budget)),
      learner_(MakeLearner(spec)),
      standardizer_(spec.standardize
                        ? std::make_unique<Standardizer>(spec.dimension)
                        : nullptr),
      reserved_(reserved),
      window_(spec.progress_window, spec.window_losses),
      drift_(spec.drift.method != DriftOptions::Method::kNone
                 ? std::make_unique<DriftDetector>(spec.drift)
                 : nullptr),
      reaction_(spec.drift.challenge
                    ? std::make_unique<DriftReaction>(shared_->spec)
                    : nullptr) {}

// Nothing else holds the model once it is destroyed.
Model::~Model() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  budget_->Release(reserved_ + pending_reserved());
}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(
    std::string name, const ModelSpec& spec,
    const std::vector<std::string>& classes,
    std::shared_ptr<ResourceBudget> budget, uint64_t incarnation) {
  if (absl::Status s = ValidateModelName(name); !s.ok()) return s;
  if (absl::Status s = ValidateModelSpec(spec); !s.ok()) return s;
  const int64_t bytes = ModelBytes(spec, classes.size());
  if (budget->enforcing()) {
    const Limits limits = LimitsFor(spec, budget->limits());
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
  {
    WriterMutexLock lock(model->mu_);
    for (const std::string& label : classes) {
      if (absl::Status s = model->learner_->AddClass(label); !s.ok()) return s;
    }
  }
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
  WriterMutexLock lock(m.mu_);
  s = m.learner_->ImportState(snapshot.state);
  if (s.ok() && m.standardizer_ != nullptr) {
    s = m.standardizer_->Import(snapshot.standardizer);
  }
  if (!s.ok()) return s;
  m.counters_ = snapshot.counters;
  m.incarnation_ = snapshot.incarnation;
  m.events_.set_known_after(m.counters_.examples_seen);
  if (!snapshot.progress.empty()) {  // older files have none: a fresh one
    s = m.window_.Import(snapshot.progress);
    if (!s.ok()) return s;
  }
  if (m.drift_ != nullptr && !snapshot.drift.empty()) {
    s = m.drift_->Import(snapshot.drift);
    if (!s.ok()) return s;
  } else if (!snapshot.drift.empty()) {
    return absl::DataLossError(
        "the snapshot holds a drift detector's state, but the model has no "
        "detector");
  }
  if (m.reaction_ != nullptr && !snapshot.reaction.empty()) {
    s = m.reaction_->Import(snapshot.reaction);
    if (!s.ok()) return s;
  } else if (!snapshot.reaction.empty()) {
    return absl::DataLossError(
        "the snapshot holds a drift reaction's state, but the model has no "
        "reaction");
  }
  if (!snapshot.paired.empty()) {
    std::unique_ptr<PairedMistakes>& paired = m.MutableOccasional().paired;
    paired = std::make_unique<PairedMistakes>();
    s = paired->Import(std::move(snapshot.paired));
    if (!s.ok()) return s;
  }
  if (snapshot.pending.counters.remembered > 0 ||
      !snapshot.pending.waiting.empty() ||
      !snapshot.pending.tombstones.empty()) {
    m.MutablePending().Import(std::move(snapshot.pending));
  }
  s = m.budget_->Reserve(m.pending().bytes(), m.name_);
  if (!s.ok()) return s;
  if (m.pending().bytes() > 0) {
    m.MutableOccasional().pending_reserved = m.pending().bytes();
  }
  m.lsn_ = snapshot.lsn;
  if (!snapshot.sources.empty()) {
    m.MutableOccasional().sources.insert(snapshot.sources.begin(),
                                         snapshot.sources.end());
  }
  return model;
}

absl::Status Model::CheckFeatureLimits(const FeatureInput& input) const {
  if (!budget_->enforcing()) return absl::OkStatus();
  const Limits limits = LimitsFor(spec(), budget_->limits());
  const int64_t named = input.named_count();
  if (named > limits.max_named_features) {
    return LimitExceeded(
        absl::StrCat("the example has ", named, " named features"),
        limits.max_named_features, "max_named_features");
  }
  const int64_t products = shared_->space.InteractionProducts(input);
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
  if (input.has_named()) {
    if (absl::Status s = CheckFeatureLimits(input); !s.ok()) return s;
  }
  absl::Status s = shared_->space.Prepare(input, prepared.scratch, prepared.x);
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
  const ModelSpec& a = spec();
  const ModelSpec& b = other.spec();
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

std::vector<std::string> Model::classes() const {
  ReaderMutexLock lock(mu_);
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

absl::Status Model::SetClassWeights(absl::string_view label,
                                    std::vector<double> w, double b,
                                    const WriteAhead& write_ahead) {
  absl::StatusOr<LinearWeights> weights =
      CheckedWeights(std::move(w), b, FeatureWidth(spec()));
  if (!weights.ok()) return weights.status();
  WriterMutexLock lock(mu_);
  if (absl::Status s = learner_->CheckSetWeights(label); !s.ok()) return s;
  const int64_t added = learner_->HasClass(label) ? 0 : ClassBytes(spec());
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

absl::Status Model::CanRollBack() const {
  ReaderMutexLock lock(mu_);
  return RollBackError();
}

absl::Status Model::RollBackError() const {
  if (reaction_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", Quoted(name_),
        " has no drift reaction, so no weights a challenger replaced; "
        "create it with drift { challenge {} }"));
  }
  if (!reaction_->stats().can_roll_back) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", Quoted(name_),
        " has no weights to roll back to: no challenger replaced them since "
        "it was created or last rolled back"));
  }
  return absl::OkStatus();
}

absl::Status Model::RollBack(const WriteAhead& write_ahead) {
  WriterMutexLock lock(mu_);
  if (absl::Status s = RollBackError(); !s.ok()) return s;
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) return s;
  absl::Status s = reaction_->RollBack(learner_);
  if (s.ok()) {
    generation_.fetch_add(1, std::memory_order_acq_rel);
    ModelEvent rolled_back;
    rolled_back.kind = ModelEventKind::kRolledBack;
    rolled_back.position = counters_.examples_seen;
    events_.Add(&rolled_back, 1);
  }
  return s;
}

absl::StatusOr<int64_t> Model::DriftGrowth(const ModelSpec& next) const {
  if (absl::Status s = ValidateModelSpec(next); !s.ok()) return s;
  const int64_t classes = static_cast<int64_t>(learner_->classes().size());
  const int64_t growth =
      ModelBytes(next, classes) - ModelBytes(spec(), classes);
  if (growth > 0 && budget_->enforcing()) {
    const Limits limits = LimitsFor(next, budget_->limits());
    if (reserved_ + growth > limits.max_model_bytes) {
      return LimitExceeded(
          absl::StrCat("model ", Quoted(name_), " would take ",
                       reserved_ + growth, " bytes with these drift settings"),
          limits.max_model_bytes, "max_model_bytes");
    }
  }
  return growth;
}

absl::Status Model::CanSetDrift(const DriftOptions& drift) const {
  ModelSpec next = spec();
  next.drift = drift;
  ReaderMutexLock lock(mu_);
  absl::StatusOr<int64_t> growth = DriftGrowth(next);
  if (!growth.ok()) return growth.status();
  if (*growth <= 0) return absl::OkStatus();
  // Whether the server's memory holds it now (a reservation given back).
  if (absl::Status s = budget_->Reserve(*growth, name_); !s.ok()) return s;
  budget_->Release(*growth);
  return absl::OkStatus();
}

absl::Status Model::SetDrift(const DriftOptions& drift,
                             const WriteAhead& write_ahead) {
  ModelSpec next = spec();
  next.drift = drift;
  WriterMutexLock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) {
    return absl::NotFoundError(
        absl::StrCat("model ", Quoted(name_), " was deleted"));
  }
  absl::StatusOr<int64_t> growth = DriftGrowth(next);
  if (!growth.ok()) return growth.status();
  if (*growth > 0) {
    if (absl::Status s = budget_->Reserve(*growth, name_); !s.ok()) return s;
    reserved_ += *growth;
  }
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) {
    if (*growth > 0) Unreserve(*growth);
    return s;
  }
  if (*growth < 0) Unreserve(-*growth);
  if (reaction_ != nullptr && reaction_->stats().challenging) {
    ModelEvent dropped;
    dropped.kind = ModelEventKind::kChallengerDropped;
    dropped.position = counters_.examples_seen;
    events_.Add(&dropped, 1);
  }
  std::shared_ptr<const SpecAndSpace> shared = SharedSpec(next);
  drift_ = drift.method != DriftOptions::Method::kNone
               ? std::make_unique<DriftDetector>(drift)
               : nullptr;
  reaction_ =
      drift.challenge ? std::make_unique<DriftReaction>(shared->spec) : nullptr;
  spec_.store(shared.get(), std::memory_order_release);
  // Equal specs are one shared copy: each is kept once, however often the
  // settings change.
  std::vector<std::shared_ptr<const SpecAndSpace>>& kept =
      MutableOccasional().respecified;
  if (shared != shared_ &&
      std::find(kept.begin(), kept.end(), shared) == kept.end()) {
    kept.push_back(std::move(shared));
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

absl::Status Model::MarkDeleted(const WriteAhead& write_ahead) {
  WriterMutexLock lock(mu_);
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) return s;
  deleted_.store(true, std::memory_order_release);
  events_.Close(absl::NotFoundError(
      absl::StrCat("model ", Quoted(name_),
                   " was deleted, or this server no longer holds it")));
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
  WriterMutexLock lock(mu_);
  return WriteDown(write_ahead);
}

int64_t Model::ClassRoom() const {
  if (!multiclass()) return 0;
  const Limits limits = LimitsFor(spec(), budget_->limits());
  ReaderMutexLock lock(mu_);
  const int64_t classes = learner_->classes().size();
  const int64_t by_count = std::max<int64_t>(0, limits.max_classes - classes);
  const int64_t by_bytes = std::max<int64_t>(
      0, (limits.max_model_bytes - reserved_) / ClassBytes(spec()));
  return std::min({by_count, by_bytes, int64_t{kMaxClasses} - classes});
}

uint64_t Model::LastSequence(absl::string_view source) const {
  ReaderMutexLock lock(mu_);
  if (occasional_ == nullptr) return 0;
  auto it = occasional_->sources.find(source);
  return it == occasional_->sources.end() ? 0 : it->second;
}

uint64_t Model::lsn() const {
  ReaderMutexLock lock(mu_);
  return lsn_;
}

ModelCounters Model::counters() const {
  ReaderMutexLock lock(mu_);
  return counters_;
}

bool Model::keeps_recent() const {
  return spec().dimension >= 1 &&
         spec().dimension <=
             static_cast<int64_t>(RecentExamples::kMaxDimension) &&
         spec().hash_bits == 0 && spec().interactions.empty();
}

std::vector<RecentExamples::Example> Model::Recent() const {
  ReaderMutexLock lock(mu_);
  if (occasional_ == nullptr || occasional_->recent == nullptr) return {};
  return occasional_->recent->InOrder();
}

int64_t Model::memory_bytes() const {
  ReaderMutexLock lock(mu_);
  return reserved_ + pending_reserved();
}

PendingStats Model::pending_stats() const {
  ReaderMutexLock lock(mu_);
  return PendingStatsLocked();
}

const PendingExamples& Model::pending() const {
  static const PendingExamples* const kNone = new PendingExamples();
  return occasional_ != nullptr && occasional_->pending != nullptr
             ? *occasional_->pending
             : *kNone;
}

const PairedMistakes& Model::paired() const {
  static const PairedMistakes* const kNone = new PairedMistakes();
  return occasional_ != nullptr && occasional_->paired != nullptr
             ? *occasional_->paired
             : *kNone;
}

PendingExamples& Model::MutablePending() {
  std::unique_ptr<PendingExamples>& pending = MutableOccasional().pending;
  if (pending == nullptr) pending = std::make_unique<PendingExamples>();
  return *pending;
}

Model::Occasional& Model::MutableOccasional() {
  if (occasional_ == nullptr) occasional_ = std::make_unique<Occasional>();
  return *occasional_;
}

PendingStats Model::PendingStatsLocked() const {
  // Examples past their deadline count as expired already; their memory is
  // given back at the next change to the pending examples.
  const size_t due = pending().Due(absl::ToUnixMicros(absl::Now()));
  PendingStats stats;
  stats.waiting = pending().waiting() - due;
  stats.bytes = pending().bytes();
  stats.counters = pending().counters();
  stats.counters.expired += due;
  return stats;
}

PairedCounts Model::Paired(absl::string_view peer, uint64_t incarnation) const {
  ReaderMutexLock lock(mu_);
  return paired().Find(peer, incarnation);
}

PairedCounts Model::PairedWith(const Model& champion) const {
  PairedCounts counts = Paired(champion.name(), champion.incarnation());
  counts += champion.Paired(name(), incarnation()).Swapped();
  return counts;
}

std::optional<ModelDrift> Model::drift() const {
  ReaderMutexLock lock(mu_);
  return DriftLocked();
}

std::optional<ModelDrift> Model::DriftLocked() const {
  if (drift_ == nullptr) return std::nullopt;
  ModelDrift d;
  d.stats = drift_->stats();
  d.state =
      RecentState(d.stats, counters_.examples_seen, spec().progress_window);
  if (reaction_ != nullptr) d.reaction = reaction_->stats();
  return d;
}

ModelStats Model::Stats() const {
  ModelStats stats;
  ReaderMutexLock lock(mu_);
  stats.counters = counters_;
  stats.pending = PendingStatsLocked();
  stats.window = window_.summary();
  stats.drift = DriftLocked();
  stats.weight_norm = learner_->WeightNorm();
  stats.bias = learner_->Bias();
  stats.nonzero_weights = learner_->NonzeroWeights();
  return stats;
}

ModelSnapshot Model::Weights(int64_t offset, std::optional<int64_t> count,
                             uint64_t* generation) const {
  ModelSnapshot weights;
  weights.name = name_;
  weights.spec = spec();
  ReaderMutexLock lock(mu_);
  if (generation != nullptr) *generation = this->generation();
  learner_->CopyWeights(weights, offset,
                        count.value_or(FeatureWidth(spec()) - offset));
  return weights;
}

ModelSnapshot Model::Snapshot(uint64_t* generation) const {
  ModelSnapshot snapshot;
  snapshot.name = name_;
  ReaderMutexLock lock(mu_);
  snapshot.spec = spec();  // under the lock: SetDrift changes it
  if (generation != nullptr) *generation = this->generation();
  learner_->CopyWeights(snapshot, 0, FeatureWidth(spec()));
  snapshot.state = learner_->ExportState();
  if (standardizer_ != nullptr) {
    snapshot.standardizer = standardizer_->Export();
  }
  snapshot.counters = counters_;
  snapshot.lsn = lsn_;
  if (occasional_ != nullptr) {
    snapshot.sources.insert(occasional_->sources.begin(),
                            occasional_->sources.end());
  }
  snapshot.pending = pending().Export();
  snapshot.progress = window_.Export();
  if (drift_ != nullptr) snapshot.drift = drift_->Export();
  if (reaction_ != nullptr) snapshot.reaction = reaction_->Export();
  snapshot.paired = paired().peers();
  snapshot.incarnation = incarnation_;
  return snapshot;
}

}  // namespace halfspace
