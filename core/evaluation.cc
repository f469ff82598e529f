#include "core/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace halfspace {
namespace {

double Ratio(uint64_t numerator, uint64_t denominator) {
  return denominator == 0 ? 0.0
                          : static_cast<double>(numerator) / denominator;
}

}  // namespace

int Evaluation::ClassIndex(absl::string_view label) {
  auto [it, inserted] =
      index_.try_emplace(label, static_cast<int>(classes_.size()));
  if (inserted) {
    classes_.emplace_back(label);
    for (std::vector<uint64_t>& row : confusion_) row.push_back(0);
    confusion_.emplace_back(classes_.size(), 0);
  }
  return it->second;
}

void Evaluation::Add(int true_class, int predicted_class,
                     std::optional<double> probability) {
  confusion_[true_class][predicted_class] += 1;
  examples_ += 1;
  if (probability.has_value()) {
    constexpr double kEps = std::numeric_limits<double>::epsilon();
    log_loss_sum_ -= std::log(std::clamp(*probability, kEps, 1.0 - kEps));
    with_probability_ += 1;
  }
}

void Evaluation::Reject(const absl::Status& error) {
  if (rejected_ == 0) first_error_ = error;
  rejected_ += 1;
}

double Evaluation::accuracy() const {
  uint64_t correct = 0;
  for (size_t k = 0; k < classes_.size(); ++k) correct += confusion_[k][k];
  return Ratio(correct, examples_);
}

Evaluation::ClassMetrics Evaluation::metrics(int cls) const {
  ClassMetrics m;
  uint64_t predicted = 0;  // examples predicted as cls
  for (size_t t = 0; t < classes_.size(); ++t) {
    m.support += confusion_[cls][t];
    predicted += confusion_[t][cls];
  }
  const uint64_t tp = confusion_[cls][cls];
  m.precision = Ratio(tp, predicted);
  m.recall = Ratio(tp, m.support);
  // F1 = 2·TP / (2·TP + FP + FN) = 2·TP / (predicted + support).
  m.f1 = Ratio(2 * tp, predicted + m.support);
  return m;
}

std::optional<double> Evaluation::log_loss() const {
  if (examples_ == 0 || with_probability_ != examples_) return std::nullopt;
  return log_loss_sum_ / examples_;
}

}  // namespace halfspace
