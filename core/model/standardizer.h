// Online standardization of dense features: the running mean and variance of
// each feature (Welford's algorithm), and the standardized vector
//
//   z_j = (x_j - mean_j) / sd_j,   sd_j = √(Σ (x_j - mean_j)² / n)
//
// with z_j = x_j - mean_j while sd_j = 0 (so the first example maps to 0).
// A model that standardizes observes each training example of positive
// importance weight before it learns from it, so features in any units learn
// at the same pace: a perceptron on raw features of scale 1000 that needs
// thousands of passes converges in a few.
//
// A plain value type; not thread-safe.

#ifndef HALFSPACE_CORE_MODEL_STANDARDIZER_H_
#define HALFSPACE_CORE_MODEL_STANDARDIZER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/algorithms/undo_log.h"
#include "core/features/features.h"

namespace halfspace {

class Standardizer {
 public:
  explicit Standardizer(int64_t dimension)
      : mean_(dimension, 0.0), m2_(dimension, 0.0) {}

  // Adds x to the running statistics, saving what it changes into `undo`.
  // REQUIRES: x's indices are below the dimension.
  void Observe(const Features& x, UndoLog& undo = *UndoLog::Off());

  // Writes the standardized x into z (resized to the dimension).
  void Transform(const Features& x, std::vector<double>& z) const;

  // [n, mean..., m2...], and back.
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

 private:
  double count_ = 0.0;
  std::vector<double> mean_;
  std::vector<double> m2_;  // Σ (x_j - mean_j)²
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_STANDARDIZER_H_
