#include "core/storage/crc32c.h"

#include <array>
#include <cstring>

namespace halfspace {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0u);
    table[i] = c;
  }
  return table;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cInstruction(
    uint32_t start, absl::string_view data) {
  uint64_t crc = ~start;
  const char* p = data.data();
  size_t n = data.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  uint32_t crc32 = static_cast<uint32_t>(crc);
  for (; n > 0; ++p, --n) {
    crc32 = __builtin_ia32_crc32qi(crc32, static_cast<unsigned char>(*p));
  }
  return ~crc32;
}
#endif

uint32_t Crc32cBytewiseExtend(uint32_t start, absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeTable();
  uint32_t crc = ~start;
  for (unsigned char byte : data) crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

}  // namespace

uint32_t Crc32cBytewise(absl::string_view data) {
  return Crc32cBytewiseExtend(0, data);
}

uint32_t Crc32cExtend(uint32_t crc, absl::string_view data) {
#if defined(__x86_64__)
  static const bool instruction = __builtin_cpu_supports("sse4.2");
  if (instruction) return Crc32cInstruction(crc, data);
#endif
  return Crc32cBytewiseExtend(crc, data);
}

}  // namespace halfspace
