// The Page-Hinkley test (Page, "Continuous Inspection Schemes", Biometrika
// 1954) for a rise in the mean of a stream, with a fading factor α:
//
//   x̄_t = x̄_{t−1} + (x_t − x̄_{t−1}) / t,
//   m_t = max(0, α·m_{t−1} + (x_t − x̄_t − δ)),
//
// a drift when m_t ≥ λ once at least `min_instances` values were seen, and,
// if a warning threshold λ_w < λ is set, a warning when m_t ≥ λ_w. With
// α = 1, m_t is the classic statistic Σ(x − x̄ − δ) less its running
// minimum. After a drift the test starts afresh. The arithmetic and the
// defaults (30, δ = 0.005, λ = 50, α = 1 − 10⁻⁴) are River's
// `drift.PageHinkley`, which tests the same rise.
//
// Memory: 40 bytes. Not thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_PAGE_HINKLEY_H_
#define HALFSPACE_CORE_MONITORS_PAGE_HINKLEY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/monitors/drift_signal.h"

namespace halfspace {

struct PageHinkleyOptions {
  int64_t min_instances = 30;
  double delta = 0.005;            // the change tolerated
  double threshold = 50.0;         // λ
  double alpha = 1 - 0.0001;       // the fading factor
  double warning_threshold = 0.0;  // λ_w; 0: no warnings
};

class PageHinkley {
 public:
  explicit PageHinkley(const PageHinkleyOptions& options) : options_(options) {}

  DriftSignal Add(double x);

  // The values, their mean since the test (re)started, and m_t.
  int64_t seen() const { return seen_; }
  double mean() const { return mean_; }
  double statistic() const { return sum_; }

  // The state as numbers, and back (INVALID_ARGUMENT if it does not
  // fit): the values seen since the test started, x̄ and m.
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

 private:
  PageHinkleyOptions options_;
  int64_t seen_ = 0;
  double mean_ = 0.0;
  double sum_ = 0.0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_PAGE_HINKLEY_H_
