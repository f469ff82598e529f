// Feature vectors and labeled examples: the input every classifier learns
// from.
//
// Users send features as FeatureInput: any mix of dense values, sparse
// index:value pairs and named features (hashed into buckets; see
// feature_space.h). Classifiers see Features: the canonical form of one
// example, dense values for the first indices and then sorted, unique
// sparse nonzeros. Both are borrowed views: the data must stay live while
// they are used.

#ifndef HALFSPACE_CORE_FEATURES_FEATURES_H_
#define HALFSPACE_CORE_FEATURES_FEATURES_H_

#include <cstdint>
#include <vector>

#include "absl/base/macros.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace halfspace {

// A feature vector x as classifiers see it: `dense` holds x_0 … x_{n-1};
// `indices` and `values` hold further nonzeros, indices ascending, unique
// and >= n. Every other coordinate is 0.
struct Features {
  Features() = default;
  Features(absl::Span<const double> dense_values) : dense(dense_values) {}
  Features(const std::vector<double>& dense_values) : dense(dense_values) {}

  // Calls f(j, x_j) for every stored coordinate, in ascending j.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t j = 0; j < dense.size(); ++j) f(j, dense[j]);
    for (size_t k = 0; k < indices.size(); ++k) f(indices[k], values[k]);
  }

  // Calls f(j, x_j) for every j in [0, width), zeros included, in order.
  // REQUIRES: every stored index is below width.
  template <typename F>
  void ForEachCoordinate(size_t width, F&& f) const {
    size_t j = 0;
    for (; j < dense.size(); ++j) f(j, dense[j]);
    for (size_t k = 0; k < indices.size(); ++k, ++j) {
      for (; j < indices[k]; ++j) f(j, 0.0);
      f(j, values[k]);
    }
    for (; j < width; ++j) f(j, 0.0);
  }

  absl::Span<const double> dense;
  absl::Span<const uint32_t> indices;
  absl::Span<const double> values;
};

// ‖x‖², summed in order (as scikit-learn's passive-aggressive does).
double SquaredNorm(const Features& x);

// ‖x‖² summed in four interleaved parts, about four times as fast on long
// vectors; it may differ from SquaredNorm in the last bits. For the
// statistics (R) and the finiteness check, where no algorithm's arithmetic
// depends on the order.
double FastSquaredNorm(const Features& x);

// w·x, summed in order.  REQUIRES: every index of x is below w.size().
// Inline, as are AddScaled's loops: they are every algorithm's inner loop.
// The dense part's bounds are checked once, not at every value (a hardened
// Span's operator[] checks each), so that the loop is the arithmetic alone.
inline double Dot(absl::Span<const double> w, const Features& x) {
  ABSL_HARDENING_ASSERT(x.dense.size() <= w.size());
  const double* wj = w.data();
  const double* xj = x.dense.data();
  double dot = 0.0;
  for (size_t j = 0, n = x.dense.size(); j < n; ++j) dot += wj[j] * xj[j];
  for (size_t k = 0; k < x.indices.size(); ++k) {
    dot += w[x.indices[k]] * x.values[k];
  }
  return dot;
}

// w ← w + c·x.  REQUIRES: as Dot.
inline void AddScaled(double c, const Features& x, absl::Span<double> w) {
  ABSL_HARDENING_ASSERT(x.dense.size() <= w.size());
  double* wj = w.data();
  const double* xj = x.dense.data();
  for (size_t j = 0, n = x.dense.size(); j < n; ++j) wj[j] += c * xj[j];
  for (size_t k = 0; k < x.indices.size(); ++k) {
    w[x.indices[k]] += c * x.values[k];
  }
}

// A feature named by a group (a namespace, for interactions) and a name,
// hashed into one of the model's buckets.
struct NamedFeature {
  absl::string_view group;
  absl::string_view name;
  double value = 1.0;
};

// Named features of one group that the sender hashed (see feature_hash.h):
// hashes[k] is FeatureHash(name_k, GroupSeed(group)), values[k] its value,
// or, with no values, every value 1.
struct HashedGroup {
  absl::string_view group;
  absl::Span<const uint32_t> hashes;
  absl::Span<const double> values;
};

// Features as a request gives them. The dense part, if any, has exactly the
// model's dimension; sparse indices address the whole feature space; named
// features need a model with hash buckets.
struct FeatureInput {
  FeatureInput() = default;
  FeatureInput(absl::Span<const double> dense_values) : dense(dense_values) {}
  FeatureInput(const std::vector<double>& dense_values) : dense(dense_values) {}

  bool only_dense() const {
    return !has_sparse && sparse_indices.empty() && named.empty() &&
           hashed.empty();
  }

  // Whether it has named features, hashed or not.
  bool has_named() const { return !named.empty() || !hashed.empty(); }

  // How many named features it has, hashed ones included.
  size_t named_count() const {
    size_t n = named.size();
    for (const HashedGroup& g : hashed) n += g.hashes.size();
    return n;
  }

  absl::Span<const double> dense;
  // Whether the example has a sparse part, even an empty one: then a missing
  // dense part means zeros, not a forgotten vector.
  bool has_sparse = false;
  absl::Span<const uint32_t> sparse_indices;
  absl::Span<const double> sparse_values;
  absl::Span<const NamedFeature> named;
  absl::Span<const HashedGroup> hashed;
};

// A labeled example (x, y) with an importance weight s >= 0 (s = 2 counts as
// two copies of the example, s = 0 as none). Binary models read y from
// `label` (-1 or +1), multiclass models from `class_label`, which is
// borrowed like the features.
struct Example {
  FeatureInput features;
  int label = 0;
  double weight = 1.0;
  absl::string_view class_label = {};
};

// The classic decision rule: +1 when f(x) >= 0, else -1 (sign(0) = +1).
inline int PredictedLabel(double score) { return score >= 0.0 ? 1 : -1; }

// OK when x has exactly `dimension` values, all finite. `what` names the
// vector in the error message ("features", "weights").
absl::Status ValidateFeatures(absl::Span<const double> x, int64_t dimension,
                              const char* what = "features");

// OK when every value of the input is finite; else names the first that is
// not.
absl::Status ValidateFinite(const FeatureInput& input);

// OK when y is -1 or +1; the message explains the 0/1 convention otherwise.
absl::Status ValidateLabel(int label);

// OK when the importance weight is finite and >= 0.
absl::Status ValidateImportanceWeight(double weight);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_FEATURES_FEATURES_H_
