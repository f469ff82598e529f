// A value derived from a model's learning state — the prediction weights of
// an averaging algorithm or of w = wscale·v, the norm ‖w‖ — computed only
// when read. Learning marks it stale, at no cost; the first reader after
// that recomputes it once. So training batches that nobody reads between
// cost nothing extra, however wide the model, where recomputing at every
// batch's end (or at every prediction) cost O(d).
//
// Thread safety: readers run concurrently (under the model's shared lock);
// the first to see them stale recomputes under a mutex while the others
// wait. Marking stale and writing happen under the model's exclusive lock,
// with no reader.

#ifndef HALFSPACE_CORE_ALGORITHMS_LAZY_H_
#define HALFSPACE_CORE_ALGORITHMS_LAZY_H_

#include <atomic>
#include <utility>

#include "core/base/mutex.h"

namespace halfspace {

template <typename T>
class Lazy {
 public:
  explicit Lazy(T initial, bool stale = false)
      : stale_(stale), value_(std::move(initial)) {}

  // The value, brought up to date by `compute(T&)` if stale.
  template <typename Compute>
  const T& Get(Compute compute) const {
    if (stale_.load(std::memory_order_acquire)) {
      MutexLock lock(mu_);
      if (stale_.load(std::memory_order_relaxed)) {
        compute(value_);
        stale_.store(false, std::memory_order_release);
      }
    }
    return value_;
  }

  // After learning: the next Get recomputes.
  void MarkStale() { stale_.store(true, std::memory_order_release); }

  // Makes `value` the current value.
  void Set(T value) {
    value_ = std::move(value);
    stale_.store(false, std::memory_order_release);
  }

 private:
  // Taken by the reader that recomputes; value_ is read without it once
  // stale_ is false (the acquire load orders the read after the write).
  mutable Mutex mu_;
  mutable std::atomic<bool> stale_;
  mutable T value_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_LAZY_H_
