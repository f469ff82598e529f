#include "core/monitors/ddm.h"

#include <cmath>
#include <limits>

#include "core/monitors/exported_state.h"

namespace halfspace {

void Ddm::Reset() {
  seen_ = 0;
  p_ = 0.0;
  p_min_ = s_min_ = ps_min_ = std::numeric_limits<double>::infinity();
}

DriftSignal Ddm::Add(bool mistake) {
  ++seen_;
  const double n = static_cast<double>(seen_);
  p_ += (1.0 / n) * ((mistake ? 1.0 : 0.0) - p_);
  const double s = std::sqrt(p_ * (1 - p_) / n);
  if (seen_ <= options_.warm_start) return DriftSignal::kStable;
  if (p_ + s <= ps_min_) {
    p_min_ = p_;
    s_min_ = s;
    ps_min_ = p_min_ + s_min_;
  }
  if (p_ + s > p_min_ + options_.drift_level * s_min_) {
    Reset();
    return DriftSignal::kDrift;
  }
  if (p_ + s > p_min_ + options_.warning_level * s_min_) {
    return DriftSignal::kWarning;
  }
  return DriftSignal::kStable;
}

std::vector<double> Ddm::Export() const {
  return {static_cast<double>(seen_), p_, p_min_, s_min_};
}

absl::Status Ddm::Import(absl::Span<const double> state) {
  const auto rate = [](double v) { return v >= 0 && v <= 1; };  // NaN: false
  const bool unset = state.size() == 4 && std::isinf(state[2]) &&
                     std::isinf(state[3]) && state[2] > 0 && state[3] > 0;
  if (state.size() != 4 || !IsExportedCount(state[0]) || !rate(state[1]) ||
      !(unset || (rate(state[2]) && state[3] >= 0 && state[3] <= 1))) {
    return absl::InvalidArgumentError(
        "the DDM detector's state does not fit: 4 numbers, a count, an "
        "error rate, and its least rate and deviation (or both +inf)");
  }
  seen_ = static_cast<int64_t>(state[0]);
  p_ = state[1];
  p_min_ = state[2];
  s_min_ = state[3];
  ps_min_ = p_min_ + s_min_;
  return absl::OkStatus();
}

}  // namespace halfspace
