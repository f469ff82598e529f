// A named online classifier: its specification, its learner, its counters, and
// the lock that makes it safe to share between training streams and
// predictions.
//
// Thread safety: every method may be called concurrently. Learning takes the
// model's writer lock for a whole batch, so updates apply one at a time in
// arrival order and a prediction (reader lock) never sees a half-applied
// update. The lock is never held across I/O or RPC callbacks.
//
// Models are not copyable; share them through std::shared_ptr.

#ifndef HALFSPACE_CORE_MODEL_H_
#define HALFSPACE_CORE_MODEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/evaluation.h"
#include "core/features.h"
#include "core/linear_weights.h"
#include "core/online_classifier.h"
#include "core/passive_aggressive.h"
#include "core/sgd_classifier.h"

namespace halfspace {

enum class Algorithm {
  kPerceptron = 1,
  kLogisticRegression = 2,
  kAveragedPerceptron = 3,
  kPassiveAggressive = 4,
  kSgd = 5,
  kPocketPerceptron = 6,
};

// The largest feature dimension a model may have (128 MiB of weights).
inline constexpr int64_t kMaxDimension = int64_t{1} << 24;

// What a model is: fixed at creation. Each hyperparameter applies to the
// algorithms named beside it and must keep its default for the others.
struct ModelSpec {
  Algorithm algorithm = Algorithm::kPerceptron;
  int64_t dimension = 0;
  double learning_rate = 1.0;     // η: all but passive-aggressive
  double l2 = 0.0;                // λ: logistic regression
  double margin_threshold = 0.0;  // τ: perceptron
  SgdOptions sgd;                 // SGD
  PaVariant pa_variant = PaVariant::kPaI;  // passive-aggressive
  double aggressiveness = 1.0;             // C: passive-aggressive
  bool ratchet = true;                     // pocket perceptron
  bool predict_with_pocket = true;         // pocket perceptron
};

// OK when `name` is 1 to 64 characters from [A-Za-z0-9_.-] and starts with a
// letter or digit, so it is safe as a file name.
absl::Status ValidateModelName(absl::string_view name);

// OK when the spec describes a model that can be built.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Counters since creation.
struct ModelCounters {
  uint64_t examples_seen = 0;
  uint64_t updates = 0;
  uint64_t mistakes = 0;       // predicted label != y, before the update
  double loss_sum = 0.0;       // Σ per-example loss, before the update
  double max_squared_norm = 0.0;  // max ‖(x, 1)‖², i.e. R²
};

// A consistent read of the counters and the weights' summary.
struct ModelStats {
  ModelCounters counters;
  double weight_norm = 0.0;  // ‖w‖
  double bias = 0.0;         // b
};

// A consistent read of a model's whole state, for persistence.
struct ModelSnapshot {
  std::string name;
  ModelSpec spec;
  LinearWeights weights;      // the weights the model predicts with
  std::vector<double> state;  // the algorithm's state beyond them
  ModelCounters counters;
};

// What happened to one example of a batch. On a rejected example, `error` is
// not OK and the other fields are unset.
struct ExampleOutcome {
  absl::Status error;
  Update update;
  uint64_t examples_seen = 0;  // the model's counter after this example
  uint64_t updates = 0;        // the model's counter after this example
};

// A prediction for one feature vector.
struct Prediction {
  int label = 0;
  double score = 0.0;
  std::optional<double> signed_distance;  // f(x)/‖w‖; unset while w = 0
  std::optional<double> probability;      // probabilistic models only
};

class Model {
 public:
  // A fresh model: w = 0, b = 0, zero counters.
  static absl::StatusOr<std::unique_ptr<Model>> Create(std::string name,
                                                       const ModelSpec& spec);
  // A model restored from a snapshot (validated like user input).
  static absl::StatusOr<std::unique_ptr<Model>> Restore(ModelSnapshot snapshot);

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }
  const ModelSpec& spec() const { return spec_; }

  // Learns from `examples` in order and writes one outcome per example.
  // Invalid examples get an INVALID_ARGUMENT outcome and leave the model
  // unchanged. Returns NOT_FOUND, learning nothing, once the model is deleted.
  // REQUIRES: outcomes.size() == examples.size().
  absl::Status Learn(absl::Span<const Example> examples,
                     absl::Span<ExampleOutcome> outcomes);

  // Predicts for every instance, or fails with INVALID_ARGUMENT naming the
  // first bad one. REQUIRES: out.size() == instances.size().
  absl::Status Predict(absl::Span<const Features> instances,
                       absl::Span<Prediction> out) const;

  // Predicts each example without learning and counts the outcome into
  // `evaluation`; invalid examples count as rejected. With a threshold
  // (probabilistic models only, see probabilistic()), predicts +1 when
  // P(y = +1 | x) >= threshold instead of when f(x) >= 0.
  void Evaluate(absl::Span<const Example> examples,
                std::optional<double> threshold,
                BinaryEvaluation& evaluation) const;

  // Whether the model gives probabilities.
  bool probabilistic() const;

  // Replaces w and b; counters are kept.
  absl::Status SetWeights(std::vector<double> w, double b);

  // Counters, ‖w‖ and b, read together; O(d) time, no copy of w.
  ModelStats Stats() const;

  // A consistent copy of the whole state.
  ModelSnapshot Snapshot() const;

  // Marks the model deleted: Learn fails from now on.
  void MarkDeleted() { deleted_.store(true, std::memory_order_release); }

  // Bumped by every change to the state; compare two reads to tell whether the
  // model changed in between.
  uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  Model(std::string name, const ModelSpec& spec,
        std::unique_ptr<OnlineClassifier> classifier);

  // REQUIRES: mu_ held exclusively.
  void LearnOne(const Example& example, ExampleOutcome& outcome);

  const std::string name_;
  const ModelSpec spec_;

  // std::shared_mutex rather than absl::Mutex: it goes through pthreads,
  // which ThreadSanitizer models even with an uninstrumented Abseil.
  mutable std::shared_mutex mu_;
  std::unique_ptr<OnlineClassifier> classifier_;  // guarded by mu_
  ModelCounters counters_;                        // guarded by mu_

  std::atomic<bool> deleted_{false};
  std::atomic<uint64_t> generation_{0};
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_H_
