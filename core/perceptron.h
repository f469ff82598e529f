// Rosenblatt's perceptron.
//
//   start:     w = 0, b = 0
//   mistake:   y·(w·x + b) <= 0          (so the first example always updates)
//   update:    w ← w + η·y·x,  b ← b + η·y   (on a mistake only)
//   loss:      max(0, -y·(w·x + b))      (the perceptron criterion)
//
// On data separable with margin γ by a unit-norm (w*, b*), with every
// ‖(x, 1)‖ <= R, it makes at most (R/γ)² updates (Novikoff, 1962).
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_PERCEPTRON_H_
#define HALFSPACE_CORE_PERCEPTRON_H_

#include <cstdint>

#include "core/online_classifier.h"

namespace halfspace {

class Perceptron final : public LinearClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0.
  Perceptron(int64_t dimension, double learning_rate);

  Update Learn(Features x, int y) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }

 private:
  double learning_rate_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_PERCEPTRON_H_
