// MurmurHash3_x86_32 (Austin Appleby, public domain): the stable 32-bit hash
// that names features into buckets, as Vowpal Wabbit does. Its values are
// part of the model format: never change them.

#ifndef HALFSPACE_CORE_FEATURES_MURMUR_HASH_H_
#define HALFSPACE_CORE_FEATURES_MURMUR_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace halfspace {

uint32_t MurmurHash3(absl::string_view data, uint32_t seed);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_FEATURES_MURMUR_HASH_H_
