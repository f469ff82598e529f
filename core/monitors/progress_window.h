// Progressive validation over a recent window: how a model has done lately,
// besides since creation. Each example learned is predicted before its
// update (progressive validation, Blum, Kalai & Langford 1999); this keeps
// its mistake and loss for the last `size` examples, exactly, and an
// exponentially decayed average with weight λ = 1 − 1/size per example,
//
//   decayed(x) = Σ_i λ^(t−i)·x_i / Σ_i λ^(t−i),
//
// normalized, so that it is the plain mean at the start rather than biased
// toward 0. A champion and its challengers on one stream compare on these.
//
// Memory: 9 bytes per example of the window. A plain value type; not
// thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_
#define HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace halfspace {

// The window a model keeps unless its spec says otherwise, and the largest.
inline constexpr int64_t kDefaultProgressWindow = 1000;
inline constexpr int64_t kMaxProgressWindow = 1000000;

class ProgressWindow {
 public:
  // REQUIRES: 1 <= size <= kMaxProgressWindow.
  explicit ProgressWindow(int64_t size);

  // Counts one example's progressive mistake and loss.
  void Add(bool mistake, double loss);

  struct Summary {
    int64_t examples = 0;   // in the window: min(size, examples seen)
    double accuracy = 0.0;  // over the window; 0 while it is empty
    double loss = 0.0;      // mean loss over the window
    double decayed_accuracy = 0.0;
    double decayed_loss = 0.0;
  };
  // O(size): the window's losses are summed afresh, in order.
  Summary summary() const;

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit).
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

  // The bytes a window of `size` takes.
  static int64_t Bytes(int64_t size) { return size * 9; }

 private:
  const int64_t size_;
  const double decay_;             // λ
  std::vector<double> losses_;     // a ring: example t at t % size
  std::vector<uint8_t> mistakes_;  // likewise, 1 for a mistake
  int64_t next_ = 0;               // the slot of the next example
  int64_t seen_ = 0;               // examples ever added
  int64_t window_mistakes_ = 0;    // mistakes in the window
  double decayed_correct_ = 0.0;   // Σ λ^(t−i)·[no mistake]
  double decayed_loss_ = 0.0;      // Σ λ^(t−i)·loss
  double decayed_weight_ = 0.0;    // Σ λ^(t−i)
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_
