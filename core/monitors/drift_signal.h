// What a drift detector says of the newest value of a model's stream.

#ifndef HALFSPACE_CORE_MONITORS_DRIFT_SIGNAL_H_
#define HALFSPACE_CORE_MONITORS_DRIFT_SIGNAL_H_

#include <cstdint>

namespace halfspace {

enum class DriftSignal : uint8_t {
  kStable = 0,
  kWarning = 1,  // the stream may be changing
  kDrift = 2,    // it changed: the detector starts afresh, or shrinks
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_DRIFT_SIGNAL_H_
