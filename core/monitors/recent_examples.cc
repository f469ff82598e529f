#include "core/monitors/recent_examples.h"

namespace halfspace {

void RecentExamples::Add(const Example& example) {
  if (ring_.size() < kCapacity) {
    ring_.push_back(example);
    return;
  }
  ring_[next_] = example;
  next_ = (next_ + 1) % kCapacity;
}

std::vector<RecentExamples::Example> RecentExamples::InOrder() const {
  std::vector<Example> out;
  out.reserve(ring_.size());
  out.insert(out.end(), ring_.begin() + next_, ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + next_);
  return out;
}

}  // namespace halfspace
