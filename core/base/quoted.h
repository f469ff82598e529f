// Request values inside error messages, bounded: an error never echoes more
// than kMaxQuotedBytes of what a client sent, so a 1 MB name cannot come back
// inside a status (where it would exceed the client's metadata limit).

#ifndef HALFSPACE_CORE_BASE_QUOTED_H_
#define HALFSPACE_CORE_BASE_QUOTED_H_

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace halfspace {

inline constexpr size_t kMaxQuotedBytes = 64;

// 'value' in quotes; past kMaxQuotedBytes cut at a UTF-8 character boundary
// and marked: 'abc…' (1048576 bytes).
inline std::string Quoted(absl::string_view value) {
  if (value.size() <= kMaxQuotedBytes) return absl::StrCat("'", value, "'");
  size_t end = kMaxQuotedBytes;
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) {
    --end;  // value[end] continues a character: cut before it starts
  }
  return absl::StrCat("'", value.substr(0, end), "…' (", value.size(),
                      " bytes)");
}

}  // namespace halfspace

#endif  // HALFSPACE_CORE_BASE_QUOTED_H_
