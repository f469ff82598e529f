// Model's write side: what a Writer does under the writer lock (exactly-once
// positions, admission under the limits, learning, delayed-label joins,
// paired mistakes, expiry) and remembering examples for delayed labels.

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/model/model.h"

namespace halfspace {
namespace {

// What learning a batch uses for a while and no model keeps between
// batches: one per thread, its memory kept for the thread's next batch up
// to kKeptScratchBytes (a model that kept its own would carry it always).
struct LearningScratch {
  UndoLog undo;                       // what the example being learned changed
  std::vector<double> standardized;   // a standardized example
  std::vector<uint8_t> own_outcomes;  // a batch's outcomes, to count pairs
};
constexpr size_t kKeptScratchBytes = size_t{64} << 10;

LearningScratch& ThreadScratch() {
  thread_local LearningScratch scratch;
  return scratch;
}

// Gives back what a large batch took beyond kKeptScratchBytes.
template <typename T>
void Trim(std::vector<T>& v) {
  if (v.capacity() * sizeof(T) > kKeptScratchBytes) std::vector<T>().swap(v);
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
  outcome.drift.reset();
  outcome.drift_event = false;
  outcome.reaction = ReactionEvent::kNone;
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
  model_.mu_.AssertHeld();
  if (model_.occasional_ == nullptr) return 0;
  const auto& sources = model_.occasional_->sources;
  auto it = sources.find(source);
  return it == sources.end() ? 0 : it->second;
}

void Model::Writer::SetLastSequence(absl::string_view source,
                                    uint64_t sequence) {
  model_.mu_.AssertHeld();
  model_.MutableOccasional().sources[std::string(source)] = sequence;
  changed_ = true;
}

void Model::Writer::Learn(absl::Span<const PreparedExample> examples,
                          absl::Span<ExampleOutcome> outcomes,
                          const LearnPlan& plan,
                          std::vector<std::string>* class_names) {
  Model& m = model_;
  m.mu_.AssertHeld();
  for (size_t i = 0; i < plan.from; ++i) {
    Reject(absl::OkStatus(), outcomes[i]);
    outcomes[i].duplicate = true;
  }
  const absl::Span<const uint32_t> refused = plan.refused;
  size_t next = 0;
  bool removed_class = false;
  const uint64_t joined = m.pending().counters().joined;
  LearningScratch& scratch = ThreadScratch();
  m.learner_->set_undo_log(&scratch.undo);
  for (size_t i = plan.from; i < examples.size(); ++i) {
    while (next < refused.size() && refused[next] < i) ++next;
    if (next < refused.size() && refused[next] == i) continue;
    if (!m.JoinsPending(plan, i, outcomes[i])) continue;
    removed_class |= !m.LearnOne(examples[i], outcomes[i], scratch.undo,
                                 scratch.standardized, plan.now_micros);
    if (!outcomes[i].error.ok()) continue;
    changed_ = true;
    if (!plan.ids.empty())
      m.MutablePending().Join(plan.ids[i], plan.pending_limits);
  }
  changed_ |= m.pending().counters().joined != joined;
  m.learner_->set_undo_log(UndoLog::Off());
  scratch.undo.Trim(kKeptScratchBytes);
  Trim(scratch.standardized);
  m.learner_->EndBatch();
  if (m.reaction_ != nullptr) m.reaction_->EndBatch();
  if (removed_class) {  // give back what Admit reserved for it
    const int64_t unused =
        m.reserved_ - ModelBytes(m.spec(), m.learner_->classes().size());
    if (unused > 0) m.Unreserve(unused);
  }
  m.AppendClassNames(class_names);
}

void Model::Writer::ExpirePending(int64_t now_micros,
                                  const PendingLimits& limits) {
  model_.mu_.AssertHeld();
  if (model_.occasional_ == nullptr || model_.occasional_->pending == nullptr) {
    return;  // none ever remembered
  }
  PendingExamples& pending = *model_.occasional_->pending;
  const uint64_t expired = pending.counters().expired;
  pending.Expire(now_micros, limits);
  model_.ReleasePendingBytes();
  changed_ |= pending.counters().expired != expired;
}

void Model::Writer::CountPeers(absl::Span<const PeerOutcomes> peers,
                               absl::Span<const ExampleOutcome> outcomes) {
  model_.mu_.AssertHeld();
  std::vector<uint8_t>& own = ThreadScratch().own_outcomes;
  own.resize(outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    own[i] = PeerOutcomeOf(outcomes[i]);
  }
  for (const PeerOutcomes& peer : peers) {
    if (peer.outcomes.size() != outcomes.size()) continue;
    std::unique_ptr<PairedMistakes>& paired = model_.MutableOccasional().paired;
    if (paired == nullptr) paired = std::make_unique<PairedMistakes>();
    paired->Count(peer, own);
  }
  Trim(own);
}

int64_t Model::Writer::Admit(absl::Span<const PreparedExample> examples,
                             size_t from, absl::Span<ExampleOutcome> outcomes,
                             std::vector<uint32_t>& refused) {
  Model& m = model_;
  m.mu_.AssertHeld();
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
        reserved += ClassBytes(m.spec());
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
  const int64_t bytes = ClassBytes(spec());
  if (budget_->enforcing()) {
    const Limits limits = LimitsFor(spec(), budget_->limits());
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
  switch (pending().Check(id, plan.now_micros)) {
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
  const int64_t unused = pending_reserved() - pending().bytes();
  if (unused > 0) {
    budget_->Release(unused);
    occasional_->pending_reserved -= unused;
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
  WriterMutexLock lock(mu_);
  if (deleted_.load(std::memory_order_acquire)) return Deleted(name_);
  for (const PendingExamples::Entry& e : entries) {
    if (pending().Taken(e.id) || !ids.insert(e.id).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("example id ", Quoted(e.id), " of model ", Quoted(name_),
                       " was used before; give each prediction a new id"));
    }
  }
  if (absl::Status s = budget_->Reserve(growth, name_); !s.ok()) return s;
  MutableOccasional().pending_reserved += growth;
  if (absl::Status s = WriteDown(write_ahead); !s.ok()) {
    ReleasePendingBytes();
    return s;
  }
  PendingExamples& remembered = MutablePending();
  remembered.Expire(now_micros, limits);
  for (PendingExamples::Entry& e : entries) {
    remembered.Remember(std::move(e), limits);
  }
  ReleasePendingBytes();
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

PendingExamples::State Model::Pending(absl::string_view id, int64_t now_micros,
                                      std::string* features,
                                      double* weight) const {
  ReaderMutexLock lock(mu_);
  const PendingExamples::State state = pending().Check(id, now_micros);
  if (state == PendingExamples::State::kWaiting) {
    if (features != nullptr) *features = *pending().Features(id);
    if (weight != nullptr) *weight = pending().Weight(id);
  }
  return state;
}

bool Model::LearnOne(const PreparedExample& example, ExampleOutcome& outcome,
                     UndoLog& undo, std::vector<double>& standardized,
                     int64_t now_micros) {
  const size_t classes = learner_->classes().size();
  absl::StatusOr<int> target =
      example.error.ok() ? learner_->Target(example) : example.error;
  if (!target.ok()) {
    Reject(target.status(), outcome);
    return true;
  }
  outcome.error = absl::OkStatus();
  outcome.duplicate = false;
  undo.Clear();
  Features x = example.x;
  double squared_norm = example.squared_norm;
  if (standardizer_ != nullptr) {
    if (example.weight > 0.0) standardizer_->Observe(x, undo);
    x = Standardized(x, standardized);
    squared_norm = FastSquaredNorm(x);
  }
  if (std::isfinite(squared_norm)) {
    learner_->Learn(x, *target, example.weight, outcome);
  }
  if (absl::Status s = Overflow(squared_norm, outcome, undo); !s.ok()) {
    undo.Undo();
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
  outcome.reaction = ReactionEvent::kNone;
  if (reaction_ != nullptr) {
    reaction_->Learn(x, *target, example.weight, outcome.mistake);
  }
  if (drift_ != nullptr) {
    const uint64_t events = drift_->events();
    outcome.drift = drift_->Add(outcome.mistake, outcome.update.loss,
                                c.examples_seen, now_micros);
    // A warning and a drift may come at one example.
    const uint64_t found = drift_->events() - events;
    outcome.drift_event = found != 0;
    if (reaction_ != nullptr) {
      outcome.reaction =
          reaction_->React(*outcome.drift, outcome.drift_event, c.examples_seen,
                           now_micros, learner_);
      if (outcome.reaction == ReactionEvent::kSwitched) {
        learner_->set_undo_log(&undo);
      }
    }
    if (found != 0 || outcome.reaction != ReactionEvent::kNone) {
      AddEvents(outcome, found, now_micros);
    }
  } else {
    outcome.drift.reset();
    outcome.drift_event = false;
  }
  KeepRecent(example, *target, outcome.mistake);
  return true;
}

void Model::AddEvents(const ExampleOutcome& outcome, uint64_t found,
                      int64_t now_micros) {
  ModelEvent events[3];
  size_t n = 0;
  const bool drift = outcome.drift == DriftSignal::kDrift;
  if (found > (drift ? 1 : 0)) {
    events[n++].kind = ModelEventKind::kWarning;  // began here
  }
  if (drift) events[n++].kind = ModelEventKind::kDrift;
  switch (outcome.reaction) {
    case ReactionEvent::kNone:
      break;
    case ReactionEvent::kStarted:
      events[n++].kind = ModelEventKind::kChallengerStarted;
      break;
    case ReactionEvent::kSwitched:
      events[n].kind = ModelEventKind::kSwitched;
      events[n++].p_value = reaction_->stats().last_switch_p_value;
      break;
    case ReactionEvent::kDropped:
      events[n++].kind = ModelEventKind::kChallengerDropped;
      break;
  }
  for (size_t i = 0; i < n; ++i) {
    events[i].position = outcome.examples_seen;
    events[i].micros = now_micros;
  }
  events_.Add(events, n);
}

void Model::KeepRecent(const PreparedExample& example, int target,
                       bool mistake) {
  if (!keeps_recent()) return;
  std::unique_ptr<RecentExamples>& recent = MutableOccasional().recent;
  if (recent == nullptr) recent = std::make_unique<RecentExamples>();
  RecentExamples::Example kept;
  example.x.ForEachCoordinate(spec().dimension,
                              [&](size_t j, double v) { kept.x[j] = v; });
  kept.target = target;
  kept.mistake = mistake;
  recent->Add(kept);
}

}  // namespace halfspace
