#include "core/features/features.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

double SquaredNorm(const Features& x) {
  double sum = 0.0;
  for (double v : x.dense) sum += v * v;
  for (double v : x.values) sum += v * v;
  return sum;
}

namespace {

// Through the data pointer: a hardened Span checks its bounds on every [].
double FastSquaredNorm(absl::Span<const double> values) {
  const double* v = values.data();
  const size_t n = values.size();
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += v[j] * v[j];
    s1 += v[j + 1] * v[j + 1];
    s2 += v[j + 2] * v[j + 2];
    s3 += v[j + 3] * v[j + 3];
  }
  for (; j < n; ++j) s0 += v[j] * v[j];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

double FastSquaredNorm(const Features& x) {
  return FastSquaredNorm(x.dense) + FastSquaredNorm(x.values);
}

absl::Status ValidateFeatures(absl::Span<const double> x, int64_t dimension,
                              const char* what) {
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

absl::Status ValidateFinite(const FeatureInput& input) {
  for (size_t i = 0; i < input.dense.size(); ++i) {
    if (!std::isfinite(input.dense[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("features[", i, "] is ", input.dense[i],
                       "; every value must be finite"));
    }
  }
  for (size_t k = 0; k < input.sparse_values.size(); ++k) {
    if (!std::isfinite(input.sparse_values[k])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the sparse value at index ", input.sparse_indices[k], " is ",
          input.sparse_values[k], "; every value must be finite"));
    }
  }
  for (const NamedFeature& f : input.named) {
    if (!std::isfinite(f.value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "named feature ", Quoted(absl::StrCat(f.group, ":", f.name)), " is ",
          f.value, "; every value must be finite"));
    }
  }
  for (const HashedGroup& g : input.hashed) {
    for (size_t k = 0; k < g.values.size(); ++k) {
      if (!std::isfinite(g.values[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat("hashed feature ", k, " of group ", Quoted(g.group),
                         " is ", g.values[k], "; every value must be finite"));
      }
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
