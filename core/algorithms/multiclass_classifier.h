// The interface every online multiclass classifier implements. Classes are
// indices 0 … K-1; a class may be added at any time, mid-stream, and starts
// with zero weights (a weight row, or a fresh binary model in one-vs-rest).
//
// Implementations are not thread-safe; Model serializes access. Inputs are
// validated by the caller: dimensions match, values are finite, the class
// index is below num_classes(), the importance weight s is >= 0.

#ifndef HALFSPACE_CORE_ALGORITHMS_MULTICLASS_CLASSIFIER_H_
#define HALFSPACE_CORE_ALGORITHMS_MULTICLASS_CLASSIFIER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/algorithms/linear_weights.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"

namespace halfspace {

// What one example did. Scores and probabilities go to the caller's buffers.
struct MulticlassUpdate {
  int predicted_class = 0;  // argmax of the scores before the update
  double margin = 0.0;  // s_y - max_{k≠y} s_k before the update (+inf if K=1)
  double loss = 0.0;
  bool updated = false;
};

class MulticlassClassifier {
 public:
  virtual ~MulticlassClassifier() = default;

  virtual int num_classes() const = 0;

  // Adds class num_classes(), with zero weights.
  virtual void AddClass() = 0;

  // Removes class num_classes() - 1, added by an example that was then
  // refused.  REQUIRES: num_classes() >= 1.
  virtual void RemoveLastClass() = 0;

  // Learns from (x, class y) with importance weight s. Writes the per-class
  // scores before the update into `scores` and, for probabilistic
  // classifiers, the probabilities into `probabilities` (else clears it).
  virtual MulticlassUpdate Learn(Features x, int y, double s,
                                 std::vector<double>& scores,
                                 std::vector<double>& probabilities) = 0;

  // The per-class scores (and probabilities, if any) of x.
  virtual void Predict(Features x, std::vector<double>& scores,
                       std::vector<double>& probabilities) const = 0;

  // See OnlineClassifier::EndBatch.
  virtual void EndBatch() {}

  // See OnlineClassifier::set_intercept_factor.
  void set_intercept_factor(double f) { intercept_factor_ = f; }

  // See OnlineClassifier::set_undo_log.
  virtual void set_undo_log(UndoLog* log) { undo_ = log; }

  // The weights class k predicts with.
  virtual const LinearWeights& weights(int k) const = 0;

  // Makes `weights` class k's weights (see OnlineClassifier::set_weights).
  virtual void set_weights(int k, LinearWeights weights) = 0;

  // The state beyond the weights, as in OnlineClassifier.
  virtual std::vector<double> ExportState() const { return {}; }
  virtual absl::Status ImportState(absl::Span<const double> state) {
    return state.empty() ? absl::OkStatus()
                         : absl::InvalidArgumentError(
                               "this algorithm keeps no state beyond weights");
  }

 protected:
  double intercept_factor_ = 1.0;
  UndoLog* undo_ = UndoLog::Off();
};

// The base of multiclass classifiers whose whole state is one weight row
// per class.
class MulticlassLinearClassifier : public MulticlassClassifier {
 public:
  int num_classes() const final { return static_cast<int>(rows_.size()); }
  void AddClass() final { rows_.emplace_back(dimension_); }
  void RemoveLastClass() final { rows_.pop_back(); }
  const LinearWeights& weights(int k) const final { return rows_[k]; }
  void set_weights(int k, LinearWeights weights) final {
    rows_[k] = std::move(weights);
  }

 protected:
  explicit MulticlassLinearClassifier(int64_t dimension)
      : dimension_(dimension) {}

  // The scores of x, one per class.
  void Scores(Features x, std::vector<double>& scores) const {
    scores.resize(rows_.size());
    for (size_t k = 0; k < rows_.size(); ++k) scores[k] = rows_[k].Score(x);
  }

  const int64_t dimension_;
  std::vector<LinearWeights> rows_;
};

// The index of the largest score, the first one among ties.
int ArgMax(absl::Span<const double> scores);

// s_y - max_{k≠y} s_k, or +infinity when y is the only class.
double MulticlassMargin(absl::Span<const double> scores, int y);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_MULTICLASS_CLASSIFIER_H_
