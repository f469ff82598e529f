// Accumulates how well a model predicts held-out examples: the confusion
// matrix, accuracy, precision, recall and F1 per class, and the log loss when
// the model gives probabilities.
//
// Classes are named ("-1" and "+1" for binary models) and indexed in the
// order they were first seen; a class can appear at any time. Precision,
// recall or F1 with a zero denominator are 0, as scikit-learn's
// zero_division=0. The log loss clips probabilities to [ε, 1 - ε] with ε the
// machine epsilon of double, as scikit-learn 1.2's log_loss does.
//
// The confusion matrix is kept sparse: memory grows with the classes and
// the distinct (true, predicted) pairs seen, never with their square.
//
// A plain value type; not thread-safe.

#ifndef HALFSPACE_CORE_MONITORS_EVALUATION_H_
#define HALFSPACE_CORE_MONITORS_EVALUATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace halfspace {

class Evaluation {
 public:
  struct ClassMetrics {
    uint64_t support = 0;  // examples of this true class
    double precision = 0.0;
    double recall = 0.0;
    double f1 = 0.0;
  };

  // The index of class `label`, added if new.
  int ClassIndex(absl::string_view label);

  // Counts one prediction; `probability` is the probability the model gave
  // the true class, if any.
  void Add(int true_class, int predicted_class,
           std::optional<double> probability);

  // Counts one rejected example; keeps the first error.
  void Reject(const absl::Status& error);

  const std::vector<std::string>& classes() const { return classes_; }
  uint64_t examples() const { return examples_; }
  uint64_t rejected() const { return rejected_; }
  const absl::Status& first_error() const { return first_error_; }

  // confusion(t, p): examples of true class t predicted as class p.
  uint64_t confusion(int true_class, int predicted_class) const {
    auto it = confusion_.find(Cell(true_class, predicted_class));
    return it == confusion_.end() ? 0 : it->second;
  }
  // How many cells of the confusion matrix are not 0.
  size_t nonzero_cells() const { return confusion_.size(); }
  double accuracy() const;
  ClassMetrics metrics(int cls) const;

  // The mean log loss, if every example had a probability.
  std::optional<double> log_loss() const;

 private:
  std::vector<std::string> classes_;
  absl::flat_hash_map<std::string, int> index_;
  static uint64_t Cell(int true_class, int predicted_class) {
    return (static_cast<uint64_t>(true_class) << 32) |
           static_cast<uint32_t>(predicted_class);
  }

  absl::flat_hash_map<uint64_t, uint64_t> confusion_;  // the cells not 0
  std::vector<uint64_t> support_;    // per true class: its row's sum
  std::vector<uint64_t> predicted_;  // per predicted class: its column's
  uint64_t correct_ = 0;             // the diagonal's sum
  uint64_t examples_ = 0;
  uint64_t with_probability_ = 0;
  double log_loss_sum_ = 0.0;
  uint64_t rejected_ = 0;
  absl::Status first_error_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_EVALUATION_H_
