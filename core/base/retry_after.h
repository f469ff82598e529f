// How long a refused caller should wait before it sends again, carried by
// the refusal's absl::Status as a payload: whichever layer made the status
// (a rate limit, a replicated log electing a leader), the one that answers
// the call finds the delay there and tells the client (gRPC's
// grpc-retry-pushback-ms trailer).

#ifndef HALFSPACE_CORE_BASE_RETRY_AFTER_H_
#define HALFSPACE_CORE_BASE_RETRY_AFTER_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace halfspace {

// The payload the delay travels in, in whole milliseconds.
inline constexpr absl::string_view kRetryAfterPayload =
    "halfspace/retry-after-ms";

// `wait` in whole milliseconds, rounded up, at least 1: what a refusal asks.
inline int64_t RetryAfterMillis(absl::Duration wait) {
  return std::max<int64_t>(
      1, absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1))));
}

// `status` asking its caller to wait `wait` first.
inline absl::Status WithRetryAfter(absl::Status status, absl::Duration wait) {
  status.SetPayload(kRetryAfterPayload,
                    absl::Cord(absl::StrCat(RetryAfterMillis(wait))));
  return status;
}

// The delay `status` asks for; zero if it asks none.
inline absl::Duration RetryAfter(const absl::Status& status) {
  const auto ms = status.GetPayload(kRetryAfterPayload);
  int64_t value = 0;
  if (!ms.has_value() || !absl::SimpleAtoi(std::string(*ms), &value)) {
    return absl::ZeroDuration();
  }
  return absl::Milliseconds(value);
}

}  // namespace halfspace

#endif  // HALFSPACE_CORE_BASE_RETRY_AFTER_H_
