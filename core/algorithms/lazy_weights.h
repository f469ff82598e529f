// Prediction weights derived from a classifier's learning state (the
// average of an averaging algorithm, or w = wscale·v), computed only when
// read. Learning marks them stale, at no cost; the first reader after that
// recomputes them once. So a stream of training batches that nobody reads
// between costs nothing per batch, however wide the model, where
// recomputing at every batch's end cost O(d).
//
// Thread safety: readers run concurrently (under the model's shared lock);
// the first to see them stale recomputes under a mutex while the others
// wait. Marking stale and writing happen under the model's exclusive lock,
// with no reader.

#ifndef HALFSPACE_CORE_ALGORITHMS_LAZY_WEIGHTS_H_
#define HALFSPACE_CORE_ALGORITHMS_LAZY_WEIGHTS_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

#include "core/linear_weights.h"

namespace halfspace {

class LazyWeights {
 public:
  explicit LazyWeights(int64_t dimension) : weights_(dimension) {}

  // The weights, brought up to date by `compute(LinearWeights&)` if stale.
  template <typename Compute>
  const LinearWeights& Get(Compute compute) const {
    if (stale_.load(std::memory_order_acquire)) {
      std::lock_guard lock(mu_);
      if (stale_.load(std::memory_order_relaxed)) {
        compute(weights_);
        stale_.store(false, std::memory_order_release);
      }
    }
    return weights_;
  }

  // After learning: the next Get recomputes.
  void MarkStale() { stale_.store(true, std::memory_order_release); }

  // Makes `weights` the current value.
  void Set(LinearWeights weights) {
    weights_ = std::move(weights);
    stale_.store(false, std::memory_order_release);
  }

 private:
  mutable std::mutex mu_;
  mutable std::atomic<bool> stale_{false};
  mutable LinearWeights weights_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_LAZY_WEIGHTS_H_
