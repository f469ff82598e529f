// What the drift detectors' Import checks of their exported state have in
// common: counts kept as doubles.

#ifndef HALFSPACE_CORE_MONITORS_EXPORTED_STATE_H_
#define HALFSPACE_CORE_MONITORS_EXPORTED_STATE_H_

#include <cmath>

namespace halfspace {

// 2^53: past it, doubles skip integers.
inline constexpr double kMaxExportedCount = 9007199254740992.0;

// Whether `v` is a count a detector exported: whole and in [0, max]. NaN
// and the infinities are not.
inline bool IsExportedCount(double v, double max = kMaxExportedCount) {
  return v >= 0 && v <= max && v == std::floor(v);
}

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_EXPORTED_STATE_H_
