#include "core/monitors/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace halfspace {
namespace {

double Ratio(uint64_t numerator, uint64_t denominator) {
  return denominator == 0 ? 0.0 : static_cast<double>(numerator) / denominator;
}

}  // namespace

int Evaluation::ClassIndex(absl::string_view label) {
  auto [it, inserted] =
      index_.try_emplace(label, static_cast<int>(classes_.size()));
  if (inserted) {
    classes_.emplace_back(label);
    support_.push_back(0);
    predicted_.push_back(0);
  }
  return it->second;
}

void Evaluation::Add(int true_class, int predicted_class,
                     std::optional<double> probability) {
  confusion_[Cell(true_class, predicted_class)] += 1;
  support_[true_class] += 1;
  predicted_[predicted_class] += 1;
  if (true_class == predicted_class) correct_ += 1;
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

double Evaluation::accuracy() const { return Ratio(correct_, examples_); }

Evaluation::ClassMetrics Evaluation::metrics(int cls) const {
  ClassMetrics m;
  m.support = support_[cls];
  const uint64_t predicted = predicted_[cls];  // examples predicted as cls
  const uint64_t tp = confusion(cls, cls);
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
