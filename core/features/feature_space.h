// The space a model's features live in, and the canonical form of one
// example in it.
//
//   coordinates 0 … d-1             the dense features (d = dimension)
//   coordinates d … d + 2^b - 1     hash buckets (b = hash_bits), for
//                                   named features and their interactions
//
// A named feature (group g, name n, value v) adds v at bucket
//   d + (h mod 2^b),  h = MurmurHash3(n, seed = MurmurHash3(g, 0))
// (FeatureHash; a sender may send h itself, in a HashedGroup).
// An interaction of groups (g1, g2), as Vowpal Wabbit's -q, adds for every
// pair of named features f1 in g1 and f2 in g2 (each unordered pair once
// when g1 = g2) the value v1·v2 at bucket
//   d + ((h1 · 16777619) xor h2) mod 2^b,
// h1 and h2 being the features' hashes (so a group of n features crossed
// with itself makes n(n-1)/2 products, with another of m, n·m). Sparse
// index:value pairs address any coordinate directly. Values that land on one
// coordinate add up.
//
// Thread safety: const methods may run concurrently, each with its own
// Scratch.

#ifndef HALFSPACE_CORE_FEATURES_FEATURE_SPACE_H_
#define HALFSPACE_CORE_FEATURES_FEATURE_SPACE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/features/features.h"

namespace halfspace {

// A pair of named-feature groups whose products become features.
struct Interaction {
  std::string first;
  std::string second;
};

class FeatureSpace {
 public:
  // Buffers one Prepare call fills; reused, they spare allocations.
  struct Scratch {
    std::vector<std::pair<uint32_t, double>> entries;
    std::vector<std::pair<uint32_t, double>> sorted;  // the radix sort's
    std::vector<uint32_t> hashes;
    // With interactions: each named feature's group and value.
    std::vector<absl::string_view> groups;
    std::vector<double> named_values;
    std::vector<uint32_t> indices;
    std::vector<double> values;
    std::vector<uint32_t> first, second;  // an interaction's groups' members
  };

  // REQUIRES: valid values (see ValidateModelSpec).
  FeatureSpace(int64_t dimension, int hash_bits,
               std::vector<Interaction> interactions);

  // The number of coordinates, dense and hashed: the length of w.
  int64_t width() const { return width_; }

  // Sets `x` to the canonical Features of `input`, viewing `input` and
  // `scratch`.
  // INVALID_ARGUMENT for a dense part of another size than the dimension, an
  // example with no features, sparse indices out of range, overlapping the
  // dense part or not matching the values in number, named features in a
  // space without buckets, or a hashed group's values not matching its
  // hashes in number. Finiteness is the caller's to check.
  absl::Status Prepare(const FeatureInput& input, Scratch& scratch,
                       Features& x) const;

  // How many products the model's interactions make of `input`'s named
  // features, hashed or not: Prepare's work beyond one step per feature.
  // O(named features × interactions).
  int64_t InteractionProducts(const FeatureInput& input) const;

 private:
  // INVALID_ARGUMENT for a sparse index out of range (or, with `has_dense`,
  // inside the dense part); else whether the indices ascend.
  absl::StatusOr<bool> CheckSparse(const FeatureInput& input,
                                   bool has_dense) const;

  // INVALID_ARGUMENT for a hashed group whose values do not match its
  // hashes in number.
  absl::Status CheckHashed(const FeatureInput& input) const;

  // Appends to scratch.entries each named feature's bucket and value (those
  // named, then those hashed), then each interaction's products; keeps the
  // features' hashes in scratch.hashes.
  void AppendHashed(const FeatureInput& input, Scratch& scratch) const;

  const int64_t dimension_;
  const uint32_t bucket_mask_;  // 2^b - 1; 0 without buckets
  const int64_t width_;
  const std::vector<Interaction> interactions_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_FEATURES_FEATURE_SPACE_H_
