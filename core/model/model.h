// A named online classifier: its specification, its learner (binary or
// multiclass, behind one interface), its counters, and the lock that makes it
// safe to share between training streams and predictions.
//
// Learning is two steps: Prepare checks each example and puts it into the
// model's feature space (dense, sparse, hashed and crossed features) without
// any lock; Learn then takes the writer lock for the batch and does only the
// updates, so checks and hashing never hold up other streams or predictions.
//
// Thread safety: every method may be called concurrently. Learning takes the
// model's writer lock for a whole batch, so updates apply one at a time in
// arrival order and a prediction (reader lock) never sees a half-applied
// update. The lock is never held across I/O or RPC callbacks.
//
// Models are not copyable; share them through std::shared_ptr.

#ifndef HALFSPACE_CORE_MODEL_MODEL_H_
#define HALFSPACE_CORE_MODEL_MODEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/features/features.h"
#include "core/model/drift_reaction.h"
#include "core/model/learner.h"
#include "core/model/limits.h"
#include "core/model/model_spec.h"
#include "core/model/model_state.h"
#include "core/model/shared_spec.h"
#include "core/model/standardizer.h"
#include "core/monitors/evaluation.h"
#include "core/monitors/event_feed.h"
#include "core/monitors/recent_examples.h"

namespace halfspace {

// Asked between examples by calls that may run long: true when the caller
// no longer waits (cancelled, or past its deadline).
using StopCheck = std::function<bool()>;

// Writes a change down before it applies (see core/training/journal.h):
// called under the model's writer lock once the change is known to apply,
// it returns the record's log sequence number (LSN), or the error that
// keeps the change from applying. Empty: the change is not written down.
using WriteAhead = std::function<absl::StatusOr<uint64_t>()>;

// What an example's outcome was, as a peer of a fan-out stream counts it.
inline uint8_t PeerOutcomeOf(const ExampleOutcome& outcome) {
  if (!outcome.error.ok() || outcome.duplicate) return kPeerSkipped;
  return outcome.mistake ? kPeerWrong : kPeerRight;
}

// How the examples of a batch after the first `from` learn, decided by
// the write path (core/training/trainer.h) before they do.
struct LearnPlan {
  // Examples [0, from) were learned before (exactly-once): each is
  // answered as a duplicate.
  size_t from = 0;
  // The examples a limit refused (ascending, their error already in their
  // outcome).
  absl::Span<const uint32_t> refused;
  // Delayed feedback: example i learns only while the example remembered
  // under ids[i] waits, as of now_micros, and then joins it (under
  // pending_limits); empty for a plain batch.
  absl::Span<const absl::string_view> ids;
  int64_t now_micros = 0;
  PendingLimits pending_limits;
};

// The per-model limits a model of `spec` decides by: the server's, but a
// replicated model's kept ones (ReplicaLimits) where it has them, so that
// every replica decides alike.
Limits LimitsFor(const ModelSpec& spec, const Limits& server);

class Model {
 public:
  // A fresh model: w = 0, b = 0, zero counters. A multiclass model starts
  // with `classes` (each 1 to 128 bytes, no repeats); more arrive with the
  // examples. The model lives within `budget`'s limits and holds its
  // memory there (see limits.h): RESOURCE_EXHAUSTED, before any memory is
  // taken, when it would exceed them.
  // Its incarnation is `incarnation`, or a new one if 0.
  static absl::StatusOr<std::unique_ptr<Model>> Create(
      std::string name, const ModelSpec& spec,
      const std::vector<std::string>& classes = {},
      std::shared_ptr<ResourceBudget> budget = UnlimitedBudget(),
      uint64_t incarnation = 0);
  // A model restored from a snapshot (validated like user input).
  static absl::StatusOr<std::unique_ptr<Model>> Restore(
      ModelSnapshot snapshot,
      std::shared_ptr<ResourceBudget> budget = UnlimitedBudget());

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  // Releases the model's memory from its budget.
  ~Model();

  const std::string& name() const { return name_; }
  // Tells this model from an earlier one of the same name: made from the
  // time of its creation, kept in its snapshots (0 in files from before
  // it).
  uint64_t incarnation() const { return incarnation_; }
  // The spec: the one it was made with, but for the drift settings of the
  // last SetDrift. A reference stays good while the model lives.
  const ModelSpec& spec() const {
    return spec_.load(std::memory_order_acquire)->spec;
  }
  bool multiclass() const { return IsMulticlass(spec()); }

  // A multiclass model's classes, in index order.
  std::vector<std::string> classes() const;

  // Checks `example` and puts it into the model's feature space: `prepared`
  // views the example's data (which must outlive it) and its own scratch.
  // A bad example gets prepared.error (INVALID_ARGUMENT) instead, and one
  // past the named-feature or interaction limits RESOURCE_EXHAUSTED. Takes
  // no lock; reusing `prepared` spares allocations.
  void Prepare(const Example& example, PreparedExample& prepared) const;

  // Whether `other` prepares every example as this model does (the same
  // feature space and kind of label), so that one's prepared examples may
  // be learned by the other.
  bool PreparesLike(const Model& other) const;

  // Learns from prepared examples in order and writes one outcome per
  // example. Rejected examples keep their error as outcome and leave the
  // model unchanged; so does a new class past the model's limits or the
  // server's memory (RESOURCE_EXHAUSTED). A multiclass model adds the
  // classes it has not seen. If `class_names` is given, appends the names of
  // the classes it does not hold yet, so that it lists every class an
  // outcome's indices refer to. Nothing is written down: batches that are
  // go through the trainer (core/training/trainer.h).
  // NOT_FOUND, learning nothing, once the model is deleted.
  // REQUIRES: outcomes.size() == examples.size(); each prepared by this
  // model.
  absl::Status Learn(absl::Span<const PreparedExample> examples,
                     absl::Span<ExampleOutcome> outcomes,
                     std::vector<std::string>* class_names = nullptr);

  // Prepare and Learn in one call, with scratch of its own.
  absl::Status Learn(absl::Span<const Example> examples,
                     absl::Span<ExampleOutcome> outcomes,
                     std::vector<std::string>* class_names = nullptr);

  // Predicts for every instance, or fails naming the first bad one
  // (INVALID_ARGUMENT, or RESOURCE_EXHAUSTED past a feature limit or
  // `options`' max_bytes); `class_names` as in Learn. A multiclass model
  // returns the class scores `options` asks for, and holds no more than a
  // few thousand other scores at a time. CANCELLED, predicting nothing,
  // once `stop` says so. REQUIRES: out.size() == instances.size().
  absl::Status Predict(absl::Span<const FeatureInput> instances,
                       absl::Span<Prediction> out,
                       std::vector<std::string>* class_names = nullptr,
                       const StopCheck& stop = nullptr,
                       const PredictOptions& options = {}) const;

  // Predicts each example without learning and counts the outcome into
  // `evaluation`; invalid examples count as rejected. With a threshold
  // (one CheckThreshold accepts), predicts +1 when P(y = +1 | x) >=
  // threshold instead of when f(x) >= 0. CANCELLED,
  // counting nothing, once `stop` says so.
  absl::Status Evaluate(absl::Span<const Example> examples,
                        std::optional<double> threshold, Evaluation& evaluation,
                        const StopCheck& stop = nullptr) const;

  // Whether the model gives probabilities.
  bool probabilistic() const { return IsProbabilistic(spec()); }

  // INVALID_ARGUMENT unless `threshold` is a probability in [0, 1] and the
  // model is binary and gives probabilities: the thresholds Evaluate takes.
  absl::Status CheckThreshold(double threshold) const;

  // Delayed feedback (see pending_examples.h). Remembers `entries` — ids
  // valid and distinct, features as the server encodes them — until
  // feedback joins them (a Learn whose batch names their ids), their
  // deadlines pass, or `limits` make room for newer ones, as of `now`.
  // With a `log`, its record is appended first; with no entries, only what
  // is due expires. ALREADY_EXISTS, remembering
  // nothing, for an id remembered before (waiting, or joined or expired
  // recently); RESOURCE_EXHAUSTED for an entry larger than
  // limits.max_bytes or past the server's memory; NOT_FOUND once the model
  // is deleted; the write-ahead's error.
  absl::Status Remember(std::vector<PendingExamples::Entry>&& entries,
                        int64_t now_micros, const PendingLimits& limits,
                        const WriteAhead& write_ahead = nullptr);

  // Delayed feedback's numbers as of now; O(1) but for examples due.
  PendingStats pending_stats() const;

  // The state of remembered example `id` as of `now`, and, while it
  // waits, its features into `features` and its importance weight into
  // `weight` (each if given).
  PendingExamples::State Pending(absl::string_view id, int64_t now_micros,
                                 std::string* features,
                                 double* weight = nullptr) const;

  // Replaces w and b of a binary model; counters are kept.
  absl::Status SetWeights(std::vector<double> w, double b) {
    return SetClassWeights("", std::move(w), b);
  }

  // Replaces the weights of one class of a multiclass model, adding the
  // class if it is new; with an empty label, those of a binary model. The
  // change is written ahead once the weights are known to fit and before
  // they are replaced; on any error nothing changed.
  absl::Status SetClassWeights(absl::string_view label, std::vector<double> w,
                               double b,
                               const WriteAhead& write_ahead = nullptr);

  // Puts back the weights the drift reaction's last switch replaced (see
  // drift_reaction.h), written ahead first; counters are kept.
  // FAILED_PRECONDITION, changing nothing, for a model without a reaction
  // or with no weights kept.
  absl::Status RollBack(const WriteAhead& write_ahead = nullptr);
  // What RollBack would answer now, changing nothing.
  absl::Status CanRollBack() const;

  // Sets the drift detector and its reaction to `drift` (method kNone:
  // none), written ahead first. Both start afresh: a challenger that runs
  // is dropped (an event tells it) and weights kept for a roll-back are
  // given up; the weights and counters are kept. The memory the settings
  // take (a reaction's two weight vectors) is reserved before. On any
  // error nothing changed: INVALID_ARGUMENT for settings the spec cannot
  // take (see ValidateModelSpec), RESOURCE_EXHAUSTED past a limit.
  absl::Status SetDrift(const DriftOptions& drift,
                        const WriteAhead& write_ahead = nullptr);
  // What SetDrift would answer now, changing nothing.
  absl::Status CanSetDrift(const DriftOptions& drift) const;

  // Writes down a change made to the model as a whole (its creation) and
  // notes its LSN.
  absl::Status RecordCreation(const WriteAhead& write_ahead);

  // How many more classes the model's own limits (max_classes,
  // max_model_bytes) let it add; 0 for a binary model.
  int64_t ClassRoom() const;

  // The last sequence number applied from `source`; 0 if none.
  uint64_t LastSequence(absl::string_view source) const;

  // The LSN of the last logged change applied; 0 if none.
  uint64_t lsn() const;

  // The counters alone; O(1).
  ModelCounters counters() const;

  // The memory the model holds (see ModelBytes), its remembered examples'
  // included.
  int64_t memory_bytes() const;

  // Counters, ‖w‖ and b, read together; O(d) time, no copy of w.
  ModelStats Stats() const;

  // What the drift detector found; none without one. O(1).
  std::optional<ModelDrift> drift() const;

  // Its events as they come: warnings and drifts, the reaction's steps
  // and roll-backs (see event_feed.h). Closed with NOT_FOUND once the model
  // is deleted, and with ABORTED when the registry replaces it.
  EventFeed& events() const { return events_; }

  // Whether the model keeps its last examples (recent_examples.h): it has
  // dimension 1 or 2, and no hashed features or interactions.
  bool keeps_recent() const;
  // The last examples it learned, oldest first; none if it keeps none.
  std::vector<RecentExamples::Example> Recent() const;

  // The paired mistakes counted against model `peer` (of `incarnation`) in
  // fan-out streams where it learned before this one (see
  // paired_mistakes.h).
  PairedCounts Paired(absl::string_view peer, uint64_t incarnation) const;
  // This model's table against `champion`, counted by whichever of the two
  // learned second in each fan-out stream (both, if they took turns), seen
  // from this model's side.
  PairedCounts PairedWith(const Model& champion) const;

  // A consistent copy of the whole state; sets `generation` to the
  // generation it holds.
  ModelSnapshot Snapshot(uint64_t* generation = nullptr) const;

  // Only the weights the model predicts with (binary: `weights`;
  // multiclass: `classes` and `class_weights`), without the algorithm's
  // state, the standardizer or the counters; with `count`, only the
  // coordinates [offset, offset + count) of each vector (biases whole).
  // Sets `generation` to the generation read. REQUIRES: 0 <= offset,
  // offset + count <= the width.
  ModelSnapshot Weights(int64_t offset = 0,
                        std::optional<int64_t> count = std::nullopt,
                        uint64_t* generation = nullptr) const;

  // Marks the model deleted: Learn fails from now on, and its events end.
  // The deletion is written ahead under the writer lock, so no batch is
  // written after it; if that fails, the model is not deleted.
  absl::Status MarkDeleted(const WriteAhead& write_ahead = nullptr);

  // The writer lock and the steps of a write, for the write path
  // (core/training/trainer.h): held until the Writer is destroyed.
  class Writer;
  Writer Write();

  // Bumped by every change to the state; compare two reads to tell whether the
  // model changed in between.
  uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  Model(std::string name, uint64_t incarnation, const ModelSpec& spec,
        std::shared_ptr<ResourceBudget> budget, int64_t reserved);

  // Puts `input` into the model's feature space: prepared.x, scratch and
  // squared_norm. INVALID_ARGUMENT for features that do not fit the model
  // or are not finite.
  absl::Status PrepareFeatures(const FeatureInput& input,
                               PreparedExample& prepared) const;
  // RESOURCE_EXHAUSTED when the input has more named features or makes
  // more interaction products than the limits allow.
  absl::Status CheckFeatureLimits(const FeatureInput& input) const;
  // Checks that the model may grow to `classes` classes, adding `label`,
  // and reserves the new class's memory.
  absl::Status AdmitClass(absl::string_view label, int64_t classes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back `bytes` of the model's reservation.
  void Unreserve(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether example i of a feedback batch may learn: OK while the example
  // remembered under plan.ids[i] waits; else why not, as its outcome.
  bool JoinsPending(const LearnPlan& plan, size_t i, ExampleOutcome& outcome)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // See CanRollBack.
  absl::Status RollBackError() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The bytes a model of spec `next` (this one's, other drift settings)
  // takes beyond what this one reserves, if its limits let it; see
  // SetDrift.
  absl::StatusOr<int64_t> DriftGrowth(const ModelSpec& next) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // See pending_stats and drift.
  PendingStats PendingStatsLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::optional<ModelDrift> DriftLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The remembered examples, perhaps none; to change them, made if need be.
  const PendingExamples& pending() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  PendingExamples& MutablePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The paired mistakes, perhaps none counted.
  const PairedMistakes& paired() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Gives back to the budget what the pending examples no longer take.
  void ReleasePendingBytes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds the events learning an example brought to events_: `found`, the
  // warnings and drifts its detector counted there, and its reaction's.
  void AddEvents(const ExampleOutcome& outcome, uint64_t found,
                 int64_t now_micros) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps a learned example among the recent ones, if the model keeps
  // them.
  void KeepRecent(const PreparedExample& example, int target, bool mistake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Learns one prepared example, or refuses it, leaving the model as it
  // was, when learning it overflows. Returns false if it refused the
  // example and removed the class it had added. `undo` is the log the
  // learner saves into; `standardized` holds a standardized example;
  // `now_micros` is the batch's logged time.
  bool LearnOne(const PreparedExample& example, ExampleOutcome& outcome,
                UndoLog& undo, std::vector<double>& standardized,
                int64_t now_micros) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the change ahead, if it is written down, and notes its LSN.
  absl::Status WriteDown(const WriteAhead& write_ahead)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED when predicting for `instances` with `options`
  // could take more than options.max_bytes.
  absl::Status CheckPredictionSize(size_t instances,
                                   const PredictOptions& options) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Predicts xs into out, keeping the top_k class scores when top_k >= 0;
  // INVALID_ARGUMENT for a score that is not finite.
  absl::Status PredictLocked(absl::Span<const Features> xs, int64_t top_k,
                             absl::Span<Prediction> out) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The learner's predictions for xs, standardized first if the model
  // standardizes.
  absl::Status PredictChunk(absl::Span<const Features> xs,
                            absl::Span<Prediction> out) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void AppendClassNames(std::vector<std::string>* class_names) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // x as the learner sees it: standardized into `scratch` if the model
  // standardizes, else x itself.
  Features Standardized(Features x, std::vector<double>& scratch) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The parts of a model that few models use: a pointer where they take
  // 48 bytes, and each made when first needed.
  struct Occasional {
    // Each training source's last sequence number.
    absl::btree_map<std::string, uint64_t> sources;
    // The examples remembered for delayed labels (read through pending()),
    // and the bytes they hold in budget_.
    std::unique_ptr<PendingExamples> pending;
    int64_t pending_reserved = 0;
    // Paired mistakes against peers (read through paired()).
    std::unique_ptr<PairedMistakes> paired;
    // The last examples learned, if the model keeps them.
    std::unique_ptr<RecentExamples> recent;
    // The specs SetDrift made (each once): kept while the model lives, for
    // the references spec() gave before a change.
    std::vector<std::shared_ptr<const SpecAndSpace>> respecified;
  };
  Occasional& MutableOccasional() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The bytes the remembered examples hold in budget_.
  int64_t pending_reserved() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return occasional_ != nullptr ? occasional_->pending_reserved : 0;
  }

  const std::string name_;
  uint64_t incarnation_;  // set before the model is shared
  // The spec and its feature space, shared with the models of an equal
  // spec (see shared_spec.h): the one it was made with. Its space is the
  // model's for good (SetDrift changes no feature option).
  const std::shared_ptr<const SpecAndSpace> shared_;
  // The spec in force: shared_, or one of Occasional::respecified.
  std::atomic<const SpecAndSpace*> spec_;
  const std::shared_ptr<ResourceBudget> budget_;

  mutable SharedMutex mu_;
  // Replaced only when the drift reaction switches (drift_reaction.h).
  std::unique_ptr<Learner> learner_ ABSL_GUARDED_BY(mu_)
      ABSL_PT_GUARDED_BY(mu_);
  // If spec().standardize.
  const std::unique_ptr<Standardizer> standardizer_ ABSL_PT_GUARDED_BY(mu_);
  ModelCounters counters_ ABSL_GUARDED_BY(mu_);
  uint64_t lsn_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reserved_ ABSL_GUARDED_BY(mu_);  // the bytes it holds in budget_
  ProgressWindow window_ ABSL_GUARDED_BY(mu_);
  // If the spec sets a drift detector.
  std::unique_ptr<DriftDetector> drift_ ABSL_GUARDED_BY(mu_)
      ABSL_PT_GUARDED_BY(mu_);
  // If the spec sets a reaction to its detector.
  std::unique_ptr<DriftReaction> reaction_ ABSL_GUARDED_BY(mu_)
      ABSL_PT_GUARDED_BY(mu_);
  // What few models use, made when the first part is (see Occasional).
  std::unique_ptr<Occasional> occasional_ ABSL_GUARDED_BY(mu_);

  mutable EventFeed events_;

  std::atomic<bool> deleted_{false};
  std::atomic<uint64_t> generation_{0};
};

// A write to a model under its writer lock, step by step: the trainer
// decides what a batch does (exactly-once, limits, its record) and the
// model does it. The model's generation moves once, when the Writer ends,
// if anything changed.
class Model::Writer {
 public:
  // The lock lives as long as the Writer, which the analysis cannot
  // follow; the Writer's steps assert it.
  explicit Writer(Model& model) ABSL_NO_THREAD_SAFETY_ANALYSIS : model_(model) {
    model_.mu_.Lock();
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (changed_) model_.generation_.fetch_add(1, std::memory_order_acq_rel);
    model_.mu_.Unlock();
  }

  // NOT_FOUND once the model is deleted.
  absl::Status CheckNotDeleted() const;

  // The last sequence number applied from `source` (0 if none), how many
  // sources the model tracks, and a source's new position.
  uint64_t LastSequence(absl::string_view source) const;
  size_t sources() const {
    model_.mu_.AssertHeld();
    return model_.occasional_ != nullptr ? model_.occasional_->sources.size()
                                         : 0;
  }
  void SetLastSequence(absl::string_view source, uint64_t sequence);

  // Decides which of examples [from, end) a limit refuses (their index into
  // `refused`, ascending, their error into their outcome) and reserves the
  // memory of the new classes the others bring; returns the bytes
  // reserved. While the budget is not enforcing (recovery), refuses the
  // examples `refused` lists instead, as they were refused when first
  // learned.
  int64_t Admit(absl::Span<const PreparedExample> examples, size_t from,
                absl::Span<ExampleOutcome> outcomes,
                std::vector<uint32_t>& refused);
  // Gives back `bytes` that Admit reserved, for a write that did not
  // happen.
  void Unreserve(int64_t bytes) {
    model_.mu_.AssertHeld();
    model_.Unreserve(bytes);
  }

  // The LSN of the change being written.
  void set_lsn(uint64_t lsn) {
    model_.mu_.AssertHeld();
    model_.lsn_ = lsn;
  }

  // Learns the examples as `plan` says, and ends the batch; `class_names`
  // as in Model::Learn.
  void Learn(absl::Span<const PreparedExample> examples,
             absl::Span<ExampleOutcome> outcomes, const LearnPlan& plan,
             std::vector<std::string>* class_names);

  // Drops the remembered examples due as of `now_micros` (see
  // pending_examples.h).
  void ExpirePending(int64_t now_micros, const PendingLimits& limits);

  // Counts paired mistakes against `peers`, models that learned the same
  // examples before this one (see paired_mistakes.h).
  void CountPeers(absl::Span<const PeerOutcomes> peers,
                  absl::Span<const ExampleOutcome> outcomes);

 private:
  Model& model_;
  bool changed_ = false;
};

inline Model::Writer Model::Write() { return Writer(*this); }

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_MODEL_H_
