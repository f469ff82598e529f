// The interface every online binary classifier implements: learn from one
// example and say what changed, give the weights it predicts with, and export
// or import its whole state.
//
// Implementations are not thread-safe; Model serializes access. Inputs are
// validated by the caller (Model): dimensions match and values are finite.
// Learn saves what it changes into the undo log, if given one, before it
// changes it: that is how an update that overflows is refused.

#ifndef HALFSPACE_CORE_ALGORITHMS_ONLINE_CLASSIFIER_H_
#define HALFSPACE_CORE_ALGORITHMS_ONLINE_CLASSIFIER_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/algorithms/linear_weights.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"

namespace halfspace {

// What one example did to a classifier. Every field but `updated` describes
// the model *before* the update.
struct Update {
  double score = 0.0;                 // f(x) = w·x + b
  double margin = 0.0;                // y·f(x)
  int predicted_label = 0;            // PredictedLabel(score)
  bool updated = false;               // whether w or b changed
  double loss = 0.0;                  // the algorithm's loss on (x, y)
  std::optional<double> probability;  // P(y = +1 | x), if probabilistic
};

// An Update with the score, margin and predicted label of (x, y) under
// `weights` filled in; the rest is the algorithm's to fill.
inline Update ScoreUpdate(const LinearWeights& weights, Features x, int y) {
  Update u;
  u.score = weights.Score(x);
  u.margin = y * u.score;
  u.predicted_label = PredictedLabel(u.score);
  return u;
}

class OnlineClassifier {
 public:
  virtual ~OnlineClassifier() = default;

  // Learns from (x, y) with importance weight s (an example with s = 2
  // counts as two).  REQUIRES: x has the weights' dimension, finite values;
  // y ∈ {-1, +1}; s finite and >= 0.
  virtual Update Learn(Features x, int y, double s) = 0;

  // Called after a batch of Learn calls and before the weights are read
  // again: a classifier that keeps its prediction weights lazily brings them
  // up to date here.
  virtual void EndBatch() {}

  // The score the classifier predicts with, whose sign is the label: by
  // default f(x) = w·x + b with weights(); the voted perceptron's vote.
  virtual double Score(const Features& x) const { return weights().Score(x); }

  // Whether Score is w·x + b with weights(), so that f(x)/‖w‖ is the
  // signed distance to a hyperplane.
  virtual bool linear() const { return true; }

  // P(y = +1 | x) for a given score, or nullopt when the algorithm is not
  // probabilistic.
  virtual std::optional<double> Probability(double score) const = 0;

  // The weights the classifier predicts with (for averaging algorithms, the
  // average; for a classifier that is not linear(), its linear summary);
  // valid until the next Learn, EndBatch or set_weights.
  virtual const LinearWeights& weights() const = 0;

  // Makes `weights` the weights it learns from and predicts with, keeping
  // other state (step counts, accumulators).  REQUIRES: same dimension,
  // finite values.
  virtual void set_weights(LinearWeights weights) = 0;

  // The state beyond weights(), as numbers, so that a classifier restored by
  // set_weights(weights()) and ImportState(ExportState()) learns on exactly
  // as the original would. Empty for classifiers whose state is weights().
  virtual std::vector<double> ExportState() const { return {}; }

  // Restores what ExportState returned; INVALID_ARGUMENT if it does not fit.
  virtual absl::Status ImportState(absl::Span<const double> state) {
    return state.empty() ? absl::OkStatus()
                         : absl::InvalidArgumentError(
                               "this algorithm keeps no state beyond weights");
  }

  // What the bias's steps are multiplied by: 1 (the default) learns it as
  // the algorithm says; 0 keeps it at 0, a model without intercept; 0.01 is
  // scikit-learn's intercept decay on sparse input. Set before learning.
  void set_intercept_factor(double f) { intercept_factor_ = f; }

  // Makes Learn save into `log` every value of the state it is about to
  // change (see UndoLog), so that its caller can take the example back.
  // The log must outlive the classifier; by default nothing is saved.
  void set_undo_log(UndoLog* log) { undo_ = log; }

 protected:
  double intercept_factor_ = 1.0;
  UndoLog* undo_ = UndoLog::Off();
};

// The base of classifiers whose whole state is one LinearWeights.
class LinearClassifier : public OnlineClassifier {
 public:
  const LinearWeights& weights() const final { return weights_; }
  void set_weights(LinearWeights weights) final {
    weights_ = std::move(weights);
  }

 protected:
  explicit LinearClassifier(int64_t dimension) : weights_(dimension) {}

  LinearWeights weights_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_ONLINE_CLASSIFIER_H_
