// The hash that names a feature: MurmurHash3_x86_32 of its name, seeded
// with the hash of its group. One definition for the model, which buckets
// named features by it, and for clients, which may hash names before
// sending them (a HashedGroup on the wire) and so send four bytes where
// the name was. Its values are part of the model format: never change them.

#ifndef HALFSPACE_CORE_FEATURES_FEATURE_HASH_H_
#define HALFSPACE_CORE_FEATURES_FEATURE_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/features/murmur_hash.h"

namespace halfspace {

// The seed a group's names are hashed with.
inline uint32_t GroupSeed(absl::string_view group) {
  return MurmurHash3(group, 0);
}

// The hash of a feature named `name` in the group whose seed is
// `group_seed`; the model's bucket is its low hash_bits bits.
inline uint32_t FeatureHash(absl::string_view name, uint32_t group_seed) {
  return MurmurHash3(name, group_seed);
}

}  // namespace halfspace

#endif  // HALFSPACE_CORE_FEATURES_FEATURE_HASH_H_
