#include "core/algorithms/parameters.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace halfspace {

absl::Status CheckRange(absl::string_view field, double value, double min,
                        bool min_open, double max) {
  const bool above_min = min_open ? value > min : value >= min;
  if (above_min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", value, "; it must be in ",
                   min_open ? "(" : "[", min, ", ", max, "]"));
}

absl::Status CheckLearningRate(absl::string_view algorithm, double eta) {
  return CheckRange(absl::StrCat(algorithm, ".learning_rate"), eta, 0.0,
                    /*min_open=*/true);
}

absl::Status CheckL2(absl::string_view algorithm, double eta, double l2) {
  const std::string field = absl::StrCat(algorithm, ".l2");
  if (absl::Status s = CheckRange(field, l2, 0.0, false); !s.ok()) return s;
  if (eta * l2 < 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      algorithm, ".learning_rate * ", field, " is ", eta * l2,
      "; it must be below 1, or each step would flip or zero the weights"));
}

}  // namespace halfspace
