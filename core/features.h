// Dense feature vectors and labels: the input every classifier learns from.
//
// A feature vector is a read-only view of d doubles owned by the caller; the
// view must stay live while it is used. Validation lives here so every entry
// point (training, prediction, weight import) rejects bad input the same way.

#ifndef HALFSPACE_CORE_FEATURES_H_
#define HALFSPACE_CORE_FEATURES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace halfspace {

// A dense feature vector x ∈ R^d, borrowed from the caller.
using Features = absl::Span<const double>;

// A labeled example (x, y) with an importance weight s >= 0 (s = 2 counts as
// two copies of the example, s = 0 as none). Binary models read y from
// `label` (-1 or +1), multiclass models from `class_label`, which is
// borrowed like the features.
struct Example {
  Features features;
  int label = 0;
  double weight = 1.0;
  absl::string_view class_label = {};
};

// The classic decision rule: +1 when f(x) >= 0, else -1 (sign(0) = +1).
inline int PredictedLabel(double score) { return score >= 0.0 ? 1 : -1; }

// ‖x‖².
double SquaredNorm(Features x);

// OK when x has exactly `dimension` values, all finite. `what` names the
// vector in the error message ("features", "weights").
absl::Status ValidateFeatures(Features x, int64_t dimension,
                              const char* what = "features");

// OK when y is -1 or +1; the message explains the 0/1 convention otherwise.
absl::Status ValidateLabel(int label);

// OK when the importance weight is finite and >= 0.
absl::Status ValidateImportanceWeight(double weight);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_FEATURES_H_
