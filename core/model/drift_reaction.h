// What a model does when its drift detector fires, as adaptive random
// forests do with their trees (Gomes et al., 2017): a warning starts a
// background learner of the same spec with fresh weights — the challenger
// — learning the same stream beside the model (a drift with no challenger
// running starts one too); once a drift has come, the challenger replaces
// the model's weights at the first example where it has made
// significantly fewer mistakes than the model on the examples both
// learned (McNemar's exact test, as CompareModels has it). The weights it
// replaced are kept for a roll-back.
//
// The test is run when the examples one of the two got wrong (McNemar's
// discordant pairs) reach 8, 16, 32, …: the k-th run is at level
// alpha/(k(k+1)), so that, by the union bound, a challenger no better than
// the model replaces it with probability at most the spec's
// challenge_alpha however long it runs (an alpha-spending rule: the plain
// test at alpha at every example would find a difference that is not
// there far more often).
//
// A challenger does not run for ever: one that sees no drift within
// progress_window examples of its start (a false alarm), or does not win
// within progress_window examples of the first drift after it started, is
// dropped, and the next warning or drift starts another. Drifts while it
// runs (a detector may cut its window several times as the error climbs)
// leave it running.
//
// Every decision is a function of the examples in the order the model
// learned them, so a model replayed from its log, or a replica, starts,
// drops and switches at the same positions; the state goes into the
// model's snapshots (Export/Import).
//
// The counts are on each example as progressive validation takes it: the
// model's and the challenger's predictions before either learns it. The
// challenger learns the example as the model sees it (standardized by the
// model's standardizer, if it has one) with the same importance weight.
//
// Binary models only. Not thread-safe: its Model serializes access.

#ifndef HALFSPACE_CORE_MODEL_DRIFT_REACTION_H_
#define HALFSPACE_CORE_MODEL_DRIFT_REACTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"
#include "core/model/learner.h"
#include "core/model/model_spec.h"
#include "core/model/model_state.h"
#include "core/monitors/drift_signal.h"

namespace halfspace {

class DriftReaction {
 public:
  // REQUIRES: spec.drift.challenge; a binary spec; `spec` outlives this.
  explicit DriftReaction(const ModelSpec& spec);
  DriftReaction(const DriftReaction&) = delete;
  DriftReaction& operator=(const DriftReaction&) = delete;

  // The challenger, if one runs, learns x (the model's view of it) with
  // target y and importance weight s; `model_mistake` is whether the model
  // predicted it wrong, before its own update. An update that would
  // overflow is taken back and the example not counted.
  void Learn(Features x, int y, double s, bool model_mistake);

  // Ends a batch of Learn calls (see Learner::EndBatch).
  void EndBatch();

  // Reacts to the detector's signal after the model's `position`-th
  // example, of a batch logged at `micros`; `event` as
  // ExampleOutcome::drift_event. On a switch, `learner` (the model's) and
  // the challenger trade places, both with their batch ended and no undo
  // log set.
  ReactionEvent React(DriftSignal signal, bool event, uint64_t position,
                      int64_t micros, std::unique_ptr<Learner>& learner);

  // Puts the weights kept at the last switch back into `learner`, and the
  // model's weights of now where they were; FAILED_PRECONDITION with none
  // kept. Any challenger is dropped: it was measured against the other.
  absl::Status RollBack(std::unique_ptr<Learner>& learner);

  ReactionStats stats() const;

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit
  // the spec).
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

 private:
  // Starts a challenger with fresh weights at `position`; armed at once
  // when a drift starts it.
  void Start(uint64_t position, int64_t micros, bool armed);
  // Whether the challenger has won: McNemar's test, when one is due.
  bool Won();

  const ModelSpec& spec_;
  std::unique_ptr<Learner> challenger_;
  std::unique_ptr<Learner> previous_;  // kept for a roll-back
  UndoLog undo_;
  ExampleOutcome scratch_;
  bool test_due_ = false;  // at the last example learned
  ReactionStats stats_;
};

// Whether McNemar's test is due when the discordant examples (those only
// one of the model and the challenger got wrong) reach `discordant`: at 8,
// 16, 32, …
bool ChallengeTestDue(uint64_t discordant);
// The level of the test due at `discordant`: alpha/(k(k+1)) for the k-th
// (k = 1 at 8). The levels of all the tests there may be sum to alpha.
double ChallengeTestLevel(double alpha, uint64_t discordant);

// Appends a learner's state to `out`: its width, its weights and bias, the
// length of the algorithm's state and that state.
void ExportLearner(const Learner& learner, int64_t width,
                   std::vector<double>& out);
// Reads a learner exported by ExportLearner from `in`, advancing it.
absl::Status ImportLearner(absl::Span<const double>& in, int64_t width,
                           Learner& learner);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_DRIFT_REACTION_H_
