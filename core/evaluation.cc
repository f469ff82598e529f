#include "core/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace halfspace {
namespace {

int ClassIndex(int label) { return label > 0 ? 1 : 0; }

double Ratio(uint64_t numerator, uint64_t denominator) {
  return denominator == 0 ? 0.0
                          : static_cast<double>(numerator) / denominator;
}

}  // namespace

void BinaryEvaluation::Add(int label, int predicted,
                           std::optional<double> probability) {
  confusion_[ClassIndex(label)][ClassIndex(predicted)] += 1;
  examples_ += 1;
  if (probability.has_value()) {
    const double p_true = label > 0 ? *probability : 1.0 - *probability;
    constexpr double kEps = std::numeric_limits<double>::epsilon();
    log_loss_sum_ -= std::log(std::clamp(p_true, kEps, 1.0 - kEps));
    with_probability_ += 1;
  }
}

void BinaryEvaluation::Reject(const absl::Status& error) {
  if (rejected_ == 0) first_error_ = error;
  rejected_ += 1;
}

double BinaryEvaluation::accuracy() const {
  return Ratio(confusion_[0][0] + confusion_[1][1], examples_);
}

BinaryEvaluation::ClassMetrics BinaryEvaluation::metrics(int cls) const {
  const int other = 1 - cls;
  const uint64_t true_positives = confusion_[cls][cls];
  ClassMetrics m;
  m.support = confusion_[cls][cls] + confusion_[cls][other];
  m.precision =
      Ratio(true_positives, true_positives + confusion_[other][cls]);
  m.recall = Ratio(true_positives, m.support);
  // F1 = 2·TP / (2·TP + FP + FN), zero when undefined.
  m.f1 = Ratio(2 * true_positives, 2 * true_positives +
                                       confusion_[other][cls] +
                                       confusion_[cls][other]);
  return m;
}

std::optional<double> BinaryEvaluation::log_loss() const {
  if (examples_ == 0 || with_probability_ != examples_) return std::nullopt;
  return log_loss_sum_ / examples_;
}

}  // namespace halfspace
