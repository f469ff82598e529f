#include "core/monitors/page_hinkley.h"

#include <algorithm>
#include <cmath>

#include "core/monitors/exported_state.h"

namespace halfspace {

DriftSignal PageHinkley::Add(double x) {
  ++seen_;
  mean_ += (x - mean_) / static_cast<double>(seen_);
  sum_ = std::max(0.0, options_.alpha * sum_ + (x - mean_ - options_.delta));
  // River counts from 1 and tests after counting this value: seen_ + 1.
  if (seen_ + 1 < options_.min_instances) return DriftSignal::kStable;
  if (sum_ >= options_.threshold) {
    seen_ = 0;
    mean_ = sum_ = 0.0;
    return DriftSignal::kDrift;
  }
  if (options_.warning_threshold > 0 && sum_ >= options_.warning_threshold) {
    return DriftSignal::kWarning;
  }
  return DriftSignal::kStable;
}

std::vector<double> PageHinkley::Export() const {
  return {static_cast<double>(seen_), mean_, sum_};
}

absl::Status PageHinkley::Import(absl::Span<const double> state) {
  if (state.size() != 3 || !IsExportedCount(state[0]) ||
      !std::isfinite(state[1]) || !std::isfinite(state[2]) || state[2] < 0) {
    return absl::InvalidArgumentError(
        "the Page-Hinkley test's state does not fit: 3 numbers, a count, a "
        "mean and a statistic >= 0");
  }
  seen_ = static_cast<int64_t>(state[0]);
  mean_ = state[1];
  sum_ = state[2];
  return absl::OkStatus();
}

}  // namespace halfspace
