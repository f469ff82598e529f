#include "core/features/murmur_hash.h"

#include <cstring>

namespace halfspace {
namespace {

uint32_t Rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t Mix(uint32_t k) {
  k *= 0xcc9e2d51u;
  k = Rotl(k, 15);
  return k * 0x1b873593u;
}

}  // namespace

uint32_t MurmurHash3(absl::string_view data, uint32_t seed) {
  const size_t n = data.size();
  const size_t blocks = n / 4;
  uint32_t h = seed;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k;
    std::memcpy(&k, data.data() + 4 * i, 4);  // little-endian, as the spec
    h ^= Mix(k);
    h = Rotl(h, 13);
    h = h * 5 + 0xe6546b64u;
  }
  const unsigned char* tail =
      reinterpret_cast<const unsigned char*>(data.data()) + 4 * blocks;
  uint32_t k = 0;
  switch (n & 3) {
    case 3:
      k ^= uint32_t{tail[2]} << 16;
      [[fallthrough]];
    case 2:
      k ^= uint32_t{tail[1]} << 8;
      [[fallthrough]];
    case 1:
      k ^= tail[0];
      h ^= Mix(k);
  }
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace halfspace
