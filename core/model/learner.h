// A model's algorithm behind one interface, so that Model never asks whether
// it holds a binary or a multiclass classifier (as fastText's Model never
// asks which Loss it holds). Two implementations:
//
//   BinaryLearner      labels -1 and +1, one OnlineClassifier
//   MulticlassLearner  classes named by strings and added as they come, one
//                      MulticlassClassifier (a weight row or a binary model
//                      per class)
//
// A learner sees examples already prepared (checked, in the model's feature
// space) and, if the model standardizes, standardized.
//
// Not thread-safe: Model calls const methods under its reader lock and the
// others under its writer lock.

#ifndef HALFSPACE_CORE_MODEL_LEARNER_H_
#define HALFSPACE_CORE_MODEL_LEARNER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/algorithms/linear_weights.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"
#include "core/model/model_spec.h"
#include "core/model/model_state.h"
#include "core/monitors/evaluation.h"

namespace halfspace {

class Learner {
 public:
  virtual ~Learner() = default;

  // The target of a prepared example: y for a binary learner; the class's
  // index for a multiclass one, which adds a class it has not seen
  // (RESOURCE_EXHAUSTED past the model's limits).
  virtual absl::StatusOr<int> Target(const PreparedExample& example) = 0;

  // Learns from (x, target) with importance weight s and fills the
  // outcome's update, mistake and class fields.
  virtual void Learn(Features x, int target, double s,
                     ExampleOutcome& outcome) = 0;

  // Brings lazily kept prediction weights up to date after a batch.
  virtual void EndBatch() = 0;

  // Makes Learn save into `log` every value it is about to change (see
  // UndoLog), until set again; UndoLog::Off() (the default) saves nothing.
  // The log must outlive its use.
  virtual void set_undo_log(UndoLog* log) = 0;

  // One prediction per x. FAILED_PRECONDITION while there is nothing to
  // predict with (a multiclass learner that knows no class).
  virtual absl::Status Predict(absl::Span<const Features> xs,
                               absl::Span<Prediction> out) const = 0;

  // Names the classes an evaluation always reports (a binary learner's -1
  // and +1), before any example is counted.
  virtual void StartEvaluation(Evaluation&) const {}

  // Counts the prediction for x against the example's label into
  // `evaluation`; see Model::Evaluate for the threshold.
  virtual void Evaluate(Features x, const PreparedExample& example,
                        std::optional<double> threshold,
                        Evaluation& evaluation) const = 0;

  // Whether learning an example of class `label` adds no class (always, for
  // a binary learner).
  virtual bool HasClass(absl::string_view label) const = 0;

  // The classes, in index order (none for a binary learner).
  virtual const std::vector<std::string>& classes() const = 0;

  // Adds a class with zero weights; INVALID_ARGUMENT for a binary learner,
  // a repeated or invalid label, RESOURCE_EXHAUSTED past the limits.
  virtual absl::Status AddClass(absl::string_view label) = 0;

  // Removes the last class, which Target added for an example that was then
  // refused.  REQUIRES: a multiclass learner with a class.
  virtual void RemoveLastClass() = 0;

  // OK if SetWeights(label, ...) would succeed: INVALID_ARGUMENT for a
  // label a binary learner has (any) or a multiclass one lacks (none, or
  // invalid), RESOURCE_EXHAUSTED for a new class past the limits.
  virtual absl::Status CheckSetWeights(absl::string_view label) const = 0;

  // Replaces the weights of class `label` (added if new), or of a binary
  // learner when `label` is empty; fails as CheckSetWeights.  REQUIRES:
  // weights of the model's width, finite.
  virtual absl::Status SetWeights(absl::string_view label,
                                  LinearWeights weights) = 0;

  // ‖w‖ (multiclass: √Σ_k ‖w_k‖²) and b (multiclass: 0).
  virtual double WeightNorm() const = 0;
  // How many w_j are not 0 (multiclass: over every class), b excluded.
  virtual int64_t NonzeroWeights() const = 0;
  virtual double Bias() const = 0;

  // Copies the weights predictions use into the snapshot's weights (binary)
  // or classes and class_weights (multiclass): coordinates
  // [offset, offset + count) of each vector, and the biases.
  // REQUIRES: the range lies within the width.
  virtual void CopyWeights(ModelSnapshot& out, int64_t offset,
                           int64_t count) const = 0;

  // The algorithm's state beyond the weights, and back (see
  // OnlineClassifier::ExportState).
  virtual std::vector<double> ExportState() const = 0;
  virtual absl::Status ImportState(absl::Span<const double> state) = 0;
};

// A fresh learner for the spec: binary or multiclass as IsMulticlass says.
// REQUIRES: ValidateModelSpec(spec) is OK.
std::unique_ptr<Learner> MakeLearner(const ModelSpec& spec);

// The error of an example or instance whose score w·x + b is not finite:
// its features are too large for the weights.
absl::Status ScoreOverflowError(double score);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_LEARNER_H_
