#include "core/features.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {

double SquaredNorm(Features x) {
  double sum = 0.0;
  for (double v : x) sum += v * v;
  return sum;
}

absl::Status ValidateFeatures(Features x, int64_t dimension, const char* what) {
  if (static_cast<int64_t>(x.size()) != dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", x.size(),
                     " values but the model's dimension is ", dimension));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "[", i, "] is ", x[i], "; every value must be finite"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateLabel(int label) {
  if (label == 1 || label == -1) return absl::OkStatus();
  if (label == 0) {
    return absl::InvalidArgumentError(
        "label is 0; binary labels are -1 and +1, not 0 and 1: send -1 for "
        "the negative class");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("label is ", label, "; binary labels are -1 and +1"));
}

absl::Status ValidateImportanceWeight(double weight) {
  if (std::isfinite(weight) && weight >= 0.0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "importance weight is ", weight, "; it must be finite and >= 0"));
}

}  // namespace halfspace
