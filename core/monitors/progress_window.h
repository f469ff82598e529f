// Progressive validation over a recent window: how a model has done lately,
// besides since creation. Each example learned is predicted before its
// update (progressive validation, Blum, Kalai & Langford 1999); this keeps
// whether it was a mistake for the last `size` examples, exactly, and an
// exponentially decayed average of its mistake and loss with weight
// λ = 1 − 1/size per example,
//
//   decayed(x) = Σ_i λ^(t−i)·x_i / Σ_i λ^(t−i),
//
// normalized, so that it is the plain mean at the start rather than biased
// toward 0. The exact mean loss over the window needs each example's loss:
// kept only for a window made with `keep_losses`. A champion and its
// challengers on one stream compare on these.
//
// Memory: a bit per example of the window, and 8 bytes more with its
// losses, in one allocation beside 56 bytes of its own. Movable, not
// copyable; not thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_
#define HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace halfspace {

// The window a model keeps unless its spec says otherwise, and the largest.
inline constexpr int64_t kDefaultProgressWindow = 1000;
inline constexpr int64_t kMaxProgressWindow = 1000000;

class ProgressWindow {
 public:
  // REQUIRES: 1 <= size <= kMaxProgressWindow.
  ProgressWindow(int64_t size, bool keep_losses);

  // Counts one example's progressive mistake and loss.
  void Add(bool mistake, double loss);

  struct Summary {
    int64_t examples = 0;   // in the window: min(size, examples seen)
    double accuracy = 0.0;  // over the window; 0 while it is empty
    // The mean loss over the window, if the window keeps its losses.
    std::optional<double> loss;
    double decayed_accuracy = 0.0;
    double decayed_loss = 0.0;
  };
  // O(size) with losses: they are summed afresh, in order.
  Summary summary() const;

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit):
  // size, examples seen, the three decayed sums, then each slot's loss (0
  // for a window without them) and mistake (0 or 1). A window without
  // losses ignores those it is given.
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

  // The bytes a window of `size` takes.
  static int64_t Bytes(int64_t size, bool keep_losses) {
    return (size + 63) / 64 * 8 + (keep_losses ? size * 8 : 0);
  }

 private:
  // The words of the mistakes' bits, which the losses follow.
  int64_t words() const { return (size_ + 63) / 64; }
  bool MistakeAt(int64_t slot) const {
    return (ring_[static_cast<size_t>(slot / 64)] >> (slot % 64)) & 1;
  }
  // A loss is kept as its double's bits. REQUIRES: keep_losses_.
  double LossAt(int64_t slot) const {
    return absl::bit_cast<double>(ring_[static_cast<size_t>(words() + slot)]);
  }
  void SetLoss(int64_t slot, double loss) {
    ring_[static_cast<size_t>(words() + slot)] = absl::bit_cast<uint64_t>(loss);
  }

  // Two rings in one block: example t's mistake at bit t % size (1 for a
  // mistake), then, if kept, its loss at t % size.
  std::unique_ptr<uint64_t[]> ring_;
  int32_t size_;                 // at most kMaxProgressWindow
  int32_t next_ = 0;             // the slot of the next example
  int32_t window_mistakes_ = 0;  // mistakes in the window
  bool keep_losses_;
  int64_t seen_ = 0;              // examples ever added
  double decayed_correct_ = 0.0;  // Σ λ^(t−i)·[no mistake]
  double decayed_loss_ = 0.0;     // Σ λ^(t−i)·loss
  double decayed_weight_ = 0.0;   // Σ λ^(t−i)
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_PROGRESS_WINDOW_H_
