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

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/evaluation.h"
#include "core/features/features.h"
#include "core/linear_weights.h"
#include "core/model_spec.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/online_classifier.h"
#include "core/features/standardizer.h"

namespace halfspace {

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
  double weight_norm = 0.0;  // ‖w‖; for multiclass, √Σ_k ‖w_k‖²
  double bias = 0.0;         // b; 0 for multiclass
};

// A consistent read of a model's whole state, for persistence.
struct ModelSnapshot {
  std::string name;
  ModelSpec spec;
  LinearWeights weights;      // binary: the weights the model predicts with
  std::vector<std::string> classes;         // multiclass: in index order
  std::vector<LinearWeights> class_weights;  // multiclass: one per class
  std::vector<double> state;  // the algorithm's state beyond the weights
  std::vector<double> standardizer;  // Standardizer::Export(), if any
  ModelCounters counters;
};

// What happened to one example of a batch. On a rejected example, `error` is
// not OK and the other fields are unset. For multiclass models, `update`
// holds the true class's score and probability, the multiclass margin
// s_y - max_{k≠y} s_k, the loss and whether it updated. Buffers are reused
// when the outcome is.
struct ExampleOutcome {
  absl::Status error;
  Update update;
  bool mistake = false;        // predicted wrong, before the update
  uint64_t examples_seen = 0;  // the model's counter after this example
  uint64_t updates = 0;        // the model's counter after this example
  int predicted_class = -1;    // multiclass
  std::vector<double> class_scores;         // multiclass, by class index
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
  std::vector<double> class_scores;
  std::vector<double> class_probabilities;
};

class Model {
 public:
  // A fresh model: w = 0, b = 0, zero counters. A multiclass model starts
  // with `classes` (each 1 to 128 bytes, no repeats); more arrive with the
  // examples.
  static absl::StatusOr<std::unique_ptr<Model>> Create(
      std::string name, const ModelSpec& spec,
      const std::vector<std::string>& classes = {});
  // A model restored from a snapshot (validated like user input).
  static absl::StatusOr<std::unique_ptr<Model>> Restore(ModelSnapshot snapshot);

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }
  const ModelSpec& spec() const { return spec_; }
  bool multiclass() const { return multiclass_ != nullptr; }

  // A multiclass model's classes, in index order.
  std::vector<std::string> classes() const;

  // Learns from `examples` in order and writes one outcome per example.
  // Invalid examples get an INVALID_ARGUMENT outcome (RESOURCE_EXHAUSTED for
  // a class past the limits) and leave the model unchanged. A multiclass
  // model adds the classes it has not seen. Returns NOT_FOUND, learning
  // nothing, once the model is deleted. If `class_names` is given, appends
  // the names of the classes it does not hold yet, so that it lists every
  // class an outcome's indices refer to.
  // REQUIRES: outcomes.size() == examples.size().
  absl::Status Learn(absl::Span<const Example> examples,
                     absl::Span<ExampleOutcome> outcomes,
                     std::vector<std::string>* class_names = nullptr);

  // Predicts for every instance, or fails with INVALID_ARGUMENT naming the
  // first bad one; `class_names` as in Learn.
  // REQUIRES: out.size() == instances.size().
  absl::Status Predict(absl::Span<const FeatureInput> instances,
                       absl::Span<Prediction> out,
                       std::vector<std::string>* class_names = nullptr) const;

  // Predicts each example without learning and counts the outcome into
  // `evaluation`; invalid examples count as rejected. With a threshold
  // (binary probabilistic models only, see probabilistic()), predicts +1
  // when P(y = +1 | x) >= threshold instead of when f(x) >= 0.
  void Evaluate(absl::Span<const Example> examples,
                std::optional<double> threshold,
                Evaluation& evaluation) const;

  // Whether the model gives probabilities.
  bool probabilistic() const { return IsProbabilistic(spec_); }

  // Replaces w and b of a binary model; counters are kept.
  absl::Status SetWeights(std::vector<double> w, double b);

  // Replaces the weights of one class of a multiclass model, adding the
  // class if it is new.
  absl::Status SetClassWeights(absl::string_view label, std::vector<double> w,
                               double b);

  // Counters, ‖w‖ and b, read together; O(d) time, no copy of w.
  ModelStats Stats() const;

  // A consistent copy of the whole state.
  ModelSnapshot Snapshot() const;

  // Only the weights the model predicts with (binary: `weights`;
  // multiclass: `classes` and `class_weights`), without the algorithm's
  // state, the standardizer or the counters.
  ModelSnapshot Weights() const;

  // Marks the model deleted: Learn fails from now on.
  void MarkDeleted() { deleted_.store(true, std::memory_order_release); }

  // Bumped by every change to the state; compare two reads to tell whether the
  // model changed in between.
  uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  Model(std::string name, const ModelSpec& spec);

  // REQUIRES: mu_ held exclusively.
  void LearnOne(const Example& example, ExampleOutcome& outcome);
  // The index of class `label`, added if new. REQUIRES: mu_ held
  // exclusively; a multiclass model.
  absl::StatusOr<int> ClassIndex(absl::string_view label);
  // REQUIRES: mu_ held.
  void AppendClassNames(std::vector<std::string>* class_names) const;
  // Copies name, spec and prediction weights into `out`. REQUIRES: mu_ held.
  void CopyWeights(ModelSnapshot& out) const;
  // Sets x to the input in the model's feature space, checked finite, and
  // squared_norm to ‖x‖².
  absl::Status Canonical(const FeatureInput& input,
                         FeatureSpace::Scratch& scratch, Features& x,
                         double& squared_norm) const;
  // x as the classifier sees it: standardized into `scratch` if the model
  // standardizes, else x itself. REQUIRES: mu_ held.
  Features Prepared(Features x, std::vector<double>& scratch) const;

  const std::string name_;
  const ModelSpec spec_;
  const FeatureSpace space_;

  // std::shared_mutex rather than absl::Mutex: it goes through pthreads,
  // which ThreadSanitizer models even with an uninstrumented Abseil.
  // Exactly one of classifier_ (binary) and multiclass_ is set, for life;
  // the objects they point to, classes_ and counters_ are guarded by mu_.
  mutable std::shared_mutex mu_;
  std::unique_ptr<OnlineClassifier> classifier_;
  std::unique_ptr<MulticlassClassifier> multiclass_;
  std::vector<std::string> classes_;  // append-only: indices never change
  absl::flat_hash_map<std::string, int> class_index_;
  std::unique_ptr<Standardizer> standardizer_;  // if spec_.standardize
  FeatureSpace::Scratch features_scratch_;  // while learning
  std::vector<double> scratch_;  // a standardized example, while learning
  ModelCounters counters_;

  std::atomic<bool> deleted_{false};
  std::atomic<uint64_t> generation_{0};
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_H_
