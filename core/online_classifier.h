// The interface every online binary classifier implements: learn from one
// example and say what changed, score a feature vector, and export or import
// its weights.
//
// Implementations are not thread-safe; Model serializes access. Inputs are
// validated by the caller (Model): dimensions match and values are finite.

#ifndef HALFSPACE_CORE_ONLINE_CLASSIFIER_H_
#define HALFSPACE_CORE_ONLINE_CLASSIFIER_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "core/features.h"
#include "core/linear_weights.h"

namespace halfspace {

// What one example did to a classifier. Every field but `updated` describes
// the model *before* the update.
struct Update {
  double score = 0.0;          // f(x) = w·x + b
  double margin = 0.0;         // y·f(x)
  int predicted_label = 0;     // PredictedLabel(score)
  bool updated = false;        // whether w or b changed
  double loss = 0.0;           // the algorithm's loss on (x, y)
  std::optional<double> probability;  // P(y = +1 | x), if probabilistic
};

class OnlineClassifier {
 public:
  virtual ~OnlineClassifier() = default;

  // Learns from (x, y).  REQUIRES: x has the weights' dimension, finite
  // values; y ∈ {-1, +1}.
  virtual Update Learn(Features x, int y) = 0;

  // P(y = +1 | x) for a given score, or nullopt when the algorithm is not
  // probabilistic.
  virtual std::optional<double> Probability(double score) const = 0;

  // The current weights; the reference is valid until the next Learn or
  // set_weights.
  virtual const LinearWeights& weights() const = 0;

  // Replaces the weights.  REQUIRES: same dimension, finite values.
  virtual void set_weights(LinearWeights weights) = 0;
};

// The base of classifiers whose whole state is one LinearWeights.
class LinearClassifier : public OnlineClassifier {
 public:
  const LinearWeights& weights() const final { return weights_; }
  void set_weights(LinearWeights weights) final {
    weights_ = std::move(weights);
  }

 protected:
  explicit LinearClassifier(int64_t dimension) : weights_(dimension) {}

  LinearWeights weights_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ONLINE_CLASSIFIER_H_
