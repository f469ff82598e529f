// CRC-32C (Castagnoli), the checksum of model files and log records: with
// the CPU's crc32 instruction where it has one (SSE 4.2), else a table.

#ifndef HALFSPACE_CORE_STORAGE_CRC32C_H_
#define HALFSPACE_CORE_STORAGE_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace halfspace {

// CRC-32C of `data`.
inline uint32_t Crc32c(absl::string_view data);

// The CRC-32C of a ‖ data, given crc = Crc32c(a): checksums data in parts.
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);

inline uint32_t Crc32c(absl::string_view data) { return Crc32cExtend(0, data); }

// The same, a byte at a time from a table: what Crc32c falls back to, and
// what tests compare the fast path with.
uint32_t Crc32cBytewise(absl::string_view data);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_CRC32C_H_
