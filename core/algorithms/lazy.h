// A value derived from a model's learning state — the prediction weights of
// an averaging algorithm or of w = wscale·v, the norm ‖w‖ — computed only
// when read. Learning marks it stale, at no cost; the first reader after
// that recomputes it once. So training batches that nobody reads between
// cost nothing extra, however wide the model, where recomputing at every
// batch's end (or at every prediction) cost O(d).
//
// Thread safety: readers run concurrently (under the model's shared lock);
// the first to see the value stale claims it and recomputes while the
// others wait. Marking stale and writing happen under the model's exclusive
// lock, with no reader. The claim is an atomic state, not a mutex: a model
// keeps a few of these, and a mutex would take 40 bytes each, more than a
// small model's lock and counters together.

#ifndef HALFSPACE_CORE_ALGORITHMS_LAZY_H_
#define HALFSPACE_CORE_ALGORITHMS_LAZY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

namespace halfspace {

template <typename T>
class Lazy {
 public:
  explicit Lazy(T initial, bool stale = false)
      : state_(stale ? kStale : kFresh), value_(std::move(initial)) {}

  // The value, brought up to date by `compute(T&)` if stale.
  template <typename Compute>
  const T& Get(Compute compute) const {
    uint8_t state = state_.load(std::memory_order_acquire);
    for (int waits = 0; state != kFresh;
         state = state_.load(std::memory_order_acquire)) {
      if (state == kStale &&
          state_.compare_exchange_strong(state, kComputing,
                                         std::memory_order_acquire)) {
        compute(value_);
        state_.store(kFresh, std::memory_order_release);
        break;
      }
      // Another reader computes: O(d), microseconds for most models and
      // milliseconds for the widest, so yield first and then sleep.
      if (++waits < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    return value_;
  }

  // After learning: the next Get recomputes.
  void MarkStale() { state_.store(kStale, std::memory_order_release); }

  // Makes `value` the current value.
  void Set(T value) {
    value_ = std::move(value);
    state_.store(kFresh, std::memory_order_release);
  }

 private:
  enum : uint8_t { kFresh, kStale, kComputing };
  // value_ is written only by the reader that moved the state from kStale
  // to kComputing, and read once it is kFresh (the release store after the
  // write and the acquire load before the read order them).
  mutable std::atomic<uint8_t> state_;
  mutable T value_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_LAZY_H_
