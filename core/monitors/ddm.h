// DDM, the drift detection method of Gama, Medas, Castillo & Rodrigues
// ("Learning with Drift Detection", SBIA 2004), on a stream of mistakes
// (1) and right predictions (0). After i values its error rate is p_i with
// standard deviation s_i = √(p_i·(1 − p_i)/i); it keeps p_min and s_min
// where p_i + s_i was least, and past a warm start says
//
//   warning  when p_i + s_i > p_min + w·s_min   (w = 2: about 95%),
//   drift    when p_i + s_i > p_min + d·s_min   (d = 3: about 99%),
//
// starting afresh after a drift. The arithmetic and the defaults (a warm
// start of 30, and p_min, s_min moved while n > 30 and p_i + s_i is at
// most their sum) are River's `drift.binary.DDM`.
//
// Memory: 48 bytes. Not thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_DDM_H_
#define HALFSPACE_CORE_MONITORS_DDM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/monitors/drift_signal.h"

namespace halfspace {

struct DdmOptions {
  int64_t warm_start = 30;
  double warning_level = 2.0;  // w
  double drift_level = 3.0;    // d
};

class Ddm {
 public:
  explicit Ddm(const DdmOptions& options) : options_(options) { Reset(); }

  DriftSignal Add(bool mistake);

  // The values and their error rate since the detector (re)started.
  int64_t seen() const { return seen_; }
  double error_rate() const { return p_; }

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit):
  // i, p_i, p_min and s_min (both +∞ until set).
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

 private:
  void Reset();

  DdmOptions options_;
  int64_t seen_;
  double p_;
  double p_min_;
  double s_min_;
  double ps_min_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_DDM_H_
