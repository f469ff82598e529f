// The plain values a model hands out and takes back: its counters, a
// consistent snapshot of its whole state, an example prepared for learning,
// and what one example or one prediction came to.
//
// Value types: copyable where they own their data, not thread-safe.

#ifndef HALFSPACE_CORE_MODEL_MODEL_STATE_H_
#define HALFSPACE_CORE_MODEL_MODEL_STATE_H_

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/linear_weights.h"
#include "core/algorithms/online_classifier.h"
#include "core/features/feature_space.h"
#include "core/features/features.h"
#include "core/model/model_spec.h"
#include "core/monitors/drift_detector.h"
#include "core/monitors/paired_mistakes.h"
#include "core/monitors/pending_examples.h"
#include "core/monitors/progress_window.h"

namespace halfspace {

// Counters since creation.
struct ModelCounters {
  uint64_t examples_seen = 0;
  uint64_t updates = 0;
  uint64_t mistakes = 0;  // predicted label != y, before the update
  double loss_sum = 0.0;  // Σ per-example loss, before the update (at most
                          // the largest double: it saturates)
  double max_squared_norm = 0.0;  // max ‖(x, 1)‖², i.e. R²
};

// Delayed feedback's numbers: examples waiting for their label (those past
// their deadline count as expired), the bytes they and the tombstones take,
// and the counters.
struct PendingStats {
  uint64_t waiting = 0;
  int64_t bytes = 0;
  PendingExamples::Counters counters;
};

// What a model's drift reaction (drift_reaction.h) did at one example.
enum class ReactionEvent : uint8_t {
  kNone = 0,
  kStarted,   // a challenger started (after this example)
  kSwitched,  // the challenger replaced the model's weights
  kDropped,   // the challenger ran out of time and was dropped
};

// A model's drift reaction's state, for people and dashboards.
struct ReactionStats {
  bool challenging = false;  // a challenger learns beside the model
  // Where it started (the model's examples_seen when it did) and when (the
  // batch's logged time, 0 when unknown).
  uint64_t started_at = 0;
  int64_t started_micros = 0;
  // Where a drift came since it started (0: none yet): from there it may
  // replace the model.
  uint64_t armed_at = 0;
  // Its paired counts with the model since it started: examples both
  // learned, those only the model got wrong, only the challenger.
  uint64_t examples = 0;
  uint64_t only_model_wrong = 0;
  uint64_t only_challenger_wrong = 0;
  // McNemar's tests run on it since it was armed (see drift_reaction.h).
  uint64_t tests = 0;
  // Switches and dropped challengers since creation, and the last switch.
  uint64_t switches = 0;
  uint64_t dropped = 0;
  uint64_t last_switch_at = 0;
  int64_t last_switch_micros = 0;
  double last_switch_p_value = 1.0;
  // Whether weights replaced at the last switch are kept for a roll-back.
  bool can_roll_back = false;
};

// What a model's drift detector found, and the state the model is in: its
// RecentState over the model's progress window; and what its reaction did,
// if it has one.
struct ModelDrift {
  DriftStats stats;
  DriftSignal state = DriftSignal::kStable;
  std::optional<ReactionStats> reaction;
};

// A consistent read of the counters and the weights' summary.
struct ModelStats {
  ModelCounters counters;
  PendingStats pending;
  ProgressWindow::Summary window;   // progressive validation lately
  std::optional<ModelDrift> drift;  // if the model has a drift detector
  double weight_norm = 0.0;     // ‖w‖; for multiclass, √Σ_k ‖w_k‖²
  double bias = 0.0;            // b; 0 for multiclass
  int64_t nonzero_weights = 0;  // w_j ≠ 0, over every class
};

// A consistent read of a model's whole state, for persistence.
struct ModelSnapshot {
  std::string name;
  ModelSpec spec;
  LinearWeights weights;  // binary: the weights the model predicts with
  std::vector<std::string> classes;          // multiclass: in index order
  std::vector<LinearWeights> class_weights;  // multiclass: one per class
  std::vector<double> state;         // the algorithm's state beyond the weights
  std::vector<double> standardizer;  // Standardizer::Export(), if any
  ModelCounters counters;
  uint64_t lsn = 0;  // the last log record reflected; 0 if none
  // Per training source, the last sequence number applied.
  std::map<std::string, uint64_t> sources;
  PendingExamples::Snapshot pending;  // remembered for delayed feedback
  std::vector<double> progress;       // ProgressWindow::Export(); may be empty
  std::vector<double> drift;     // DriftDetector::Export(); empty without one
  std::vector<double> reaction;  // DriftReaction::Export(); empty without
  uint64_t incarnation = 0;      // see Model::incarnation
  // Paired mistakes against the models it shared fan-out streams with.
  std::map<std::string, PairedCounts, std::less<>> paired;
};

// An example checked and put into the model's feature space by
// Model::Prepare, before the model's lock is taken: `x` views the example's
// data and `scratch`, so a PreparedExample moves but is never copied, and
// the Example it came from must outlive it. When `error` is not OK, the
// example is rejected and the other fields are unset.
struct PreparedExample {
  PreparedExample() = default;
  PreparedExample(PreparedExample&&) = default;
  PreparedExample& operator=(PreparedExample&&) = default;

  absl::Status error;
  Features x;
  double squared_norm = 0.0;      // ‖x‖²
  int label = 0;                  // binary models: -1 or +1
  absl::string_view class_label;  // multiclass models
  double weight = 1.0;            // importance weight s >= 0
  FeatureSpace::Scratch scratch;
};

// What happened to one example of a batch. On a rejected example, `error` is
// not OK and the other fields are unset. For multiclass models, `update`
// holds the true class's score and probability, the multiclass margin
// s_y - max_{k≠y} s_k, the loss and whether it updated. Buffers are reused
// when the outcome is.
struct ExampleOutcome {
  absl::Status error;
  // A tagged example its source had already sent: not applied again, and
  // every other field unset.
  bool duplicate = false;
  Update update;
  bool mistake = false;  // predicted wrong, before the update
  // What the model's drift detector said after this example; unset for a
  // model without one.
  std::optional<DriftSignal> drift;
  // Whether this example was a drift or began a warning (see
  // DriftStats::warnings): what is worth a line in a log.
  bool drift_event = false;
  // What the model's drift reaction did after this example.
  ReactionEvent reaction = ReactionEvent::kNone;
  uint64_t examples_seen = 0;        // the model's counter after this example
  uint64_t updates = 0;              // the model's counter after this example
  int predicted_class = -1;          // multiclass
  std::vector<double> class_scores;  // multiclass, by class index
  std::vector<double> class_probabilities;  // multiclass, if probabilistic
};

// A prediction for one feature vector. Binary models fill label, score,
// signed_distance and probability; multiclass models the class fields.
struct Prediction {
  int label = 0;
  double score = 0.0;
  std::optional<double> signed_distance;  // f(x)/‖w‖; unset while w = 0
  std::optional<double> probability;      // probabilistic models only
  int predicted_class = -1;
  // Multiclass: every class's score (and probability) in class order, or,
  // when a prediction asked for the top k, those of the classes listed in
  // `classes`, highest score first.
  std::vector<double> class_scores;
  std::vector<double> class_probabilities;
  std::vector<int> classes;  // empty unless the top k were asked for
};

// What a prediction returns, and the most its answer may take.
struct PredictOptions {
  // Multiclass: how many class scores to return per instance, the highest
  // first (ties in class order); -1 for every class's, in class order.
  int64_t top_k = -1;
  // A cost model of the answer's encoding, checked under the model's lock
  // against the classes it predicts with: the answer takes response_bytes,
  // each instance instance_bytes plus the longest class label, and each
  // class score it returns class_score_bytes plus that label. Past
  // max_bytes the call is
  // refused before any instance is scored (RESOURCE_EXHAUSTED naming
  // --max_message_bytes).
  size_t max_bytes = std::numeric_limits<size_t>::max();
  size_t response_bytes = 0;
  size_t instance_bytes = 0;
  size_t class_score_bytes = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_MODEL_STATE_H_
