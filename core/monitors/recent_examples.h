// The last examples a low-dimensional model learned, as they were given,
// for drawing them under its decision boundary (the web console does). A
// ring of at most kCapacity examples of one or two features: the oldest
// gives way to the newest.
//
// Kept in memory only (a restart starts it empty) and not counted in the
// model's memory: at most kCapacity · 24 bytes, by the few models of
// dimension 1 or 2. Not thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_RECENT_EXAMPLES_H_
#define HALFSPACE_CORE_MONITORS_RECENT_EXAMPLES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace halfspace {

class RecentExamples {
 public:
  static constexpr size_t kCapacity = 200;
  // The most features an example kept here has.
  static constexpr size_t kMaxDimension = 2;

  struct Example {
    std::array<double, kMaxDimension> x = {0.0, 0.0};  // unused ones 0
    int32_t target = 0;  // y for a binary model, else the class's index
    bool mistake = false;
  };

  void Add(const Example& example);

  // The examples, oldest first.
  std::vector<Example> InOrder() const;

 private:
  std::vector<Example> ring_;  // grows to kCapacity, then wraps at next_
  size_t next_ = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_RECENT_EXAMPLES_H_
