// A model's drift detector: one of ADWIN, Page-Hinkley or DDM reading the
// stream the model's progressive validation makes — for each example
// learned, whether the model predicted it wrong and its loss, both before
// its update — and what it found: the signal at the last example, how
// many warnings and drifts, and the positions (the model's example count)
// of the last of each.
//
// A drift is a rise in the error (or the loss): a model getting better is
// not one. ADWIN (adwin.h) tells a drift when its window shrinks and the
// window's mean went up, as MOA's ADWIN change detector does; a second,
// more credulous window (warning_delta > delta), as adaptive random forests
// keep, tells a warning the same way; both test at the same values, so a
// warning may come with the drift (the signal is then the drift, and the
// warning is counted). Page-Hinkley (page_hinkley.h) warns
// past its warning threshold, if set; DDM (ddm.h) has its warning zone.
//
// Deterministic: the same values in the same order give the same signals,
// so a model replayed from its log, or a replica, detects at the same
// positions. Its state goes into the model's snapshots (Export/Import).
//
// Not thread-safe (its Model serializes access). Copyable.

#ifndef HALFSPACE_CORE_MONITORS_DRIFT_DETECTOR_H_
#define HALFSPACE_CORE_MONITORS_DRIFT_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/monitors/adwin.h"
#include "core/monitors/ddm.h"
#include "core/monitors/drift_signal.h"
#include "core/monitors/page_hinkley.h"

namespace halfspace {

struct DriftOptions {
  enum class Method : uint8_t { kNone = 0, kAdwin, kPageHinkley, kDdm };
  // What ADWIN and Page-Hinkley read; DDM reads mistakes.
  enum class Input : uint8_t { kMistakes = 0, kLoss };

  Method method = Method::kNone;
  Input input = Input::kMistakes;
  // The reaction (see core/model/drift_reaction.h): on a warning, a
  // challenger of fresh weights learns beside the model; on a drift, it
  // replaces the model's weights when McNemar's test finds it better at
  // level challenge_alpha.
  bool challenge = false;
  double adwin_delta = 0.002;
  double adwin_warning_delta = 0.02;  // 0: no warnings
  int64_t adwin_clock = 32;
  PageHinkleyOptions page_hinkley;
  DdmOptions ddm;
  double challenge_alpha = 0.05;
};

// INVALID_ARGUMENT, naming the setting, unless every setting the method
// uses is in range.
absl::Status CheckDriftOptions(const DriftOptions& options);

// The detector's findings.
struct DriftStats {
  DriftSignal signal = DriftSignal::kStable;  // at the last value
  // Warnings count once per warning zone (DDM's and Page-Hinkley's last
  // while the statistic stays past its level), at its first value.
  uint64_t warnings = 0;
  uint64_t drifts = 0;
  uint64_t last_warning_at = 0;  // a position; 0: none yet
  uint64_t last_drift_at = 0;
  // When they were: the logged time of the batch that held the example,
  // in microseconds since the Unix epoch; 0 when unknown.
  int64_t last_warning_micros = 0;
  int64_t last_drift_micros = 0;
  // The detector's estimate of its input's mean now: ADWIN's window mean,
  // Page-Hinkley's running mean, DDM's error rate.
  double estimate = 0.0;
  // ADWIN's window width; the values since the others (re)started.
  int64_t width = 0;
};

// The state a model is in, for people and dashboards: kDrift within
// `horizon` examples after a drift (and no warning since), kWarning within
// `horizon` after a warning, else kStable; `seen` is the model's examples.
DriftSignal RecentState(const DriftStats& stats, uint64_t seen,
                        int64_t horizon);

class DriftDetector {
 public:
  // REQUIRES: CheckDriftOptions(options) is OK, and a method is set.
  explicit DriftDetector(const DriftOptions& options);

  // Reads one example's outcome, the model's `position`-th example, of a
  // batch taken at `micros` (0: unknown).
  DriftSignal Add(bool mistake, double loss, uint64_t position,
                  int64_t micros = 0);

  DriftStats stats() const;
  // Warnings and drifts since creation: it moves at a warning zone's
  // first example and at each drift.
  uint64_t events() const { return warnings_ + drifts_; }

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit
  // the detector's method).
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

  // The memory a detector of `options` may take: ADWIN's rows are counted
  // up to kCountedAdwinRows each (windows of 5·2^40 values).
  static int64_t Bytes(const DriftOptions& options);
  static constexpr int64_t kCountedAdwinRows = 40;

 private:
  DriftOptions::Method method_;
  DriftOptions::Input input_;
  std::optional<Adwin> adwin_;
  std::optional<Adwin> warning_adwin_;
  std::optional<PageHinkley> page_hinkley_;
  std::optional<Ddm> ddm_;
  DriftSignal signal_ = DriftSignal::kStable;
  uint64_t warnings_ = 0;
  uint64_t drifts_ = 0;
  uint64_t last_warning_at_ = 0;
  uint64_t last_drift_at_ = 0;
  int64_t last_warning_micros_ = 0;
  int64_t last_drift_micros_ = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_DRIFT_DETECTOR_H_
