// Per-caller rate limits: token buckets of calls a second and of training
// examples a second, each with a burst, so that no one caller — one token,
// or one client address where the server has no tokens — takes the server
// from the others; and of failed authentications a second per address, so
// that guessing tokens is slow.
//
// A bucket holds up to `burst` tokens and refills at `per_second`; a call
// takes one token of the calls bucket, a request of n examples n of the
// examples bucket. A request larger than the burst passes once the bucket
// is full and leaves it in debt, so it is slowed, never refused forever. A
// refusal is RESOURCE_EXHAUSTED saying how long to wait, and carries the
// delay (RetryAfter) for the caller's grpc-retry-pushback-ms trailer; a
// refused call takes nothing from either bucket.
//
// Bounded: at most `max_callers` callers' buckets are kept; past that the
// one used least recently is forgotten (its caller starts full again).
//
// Thread-safe.

#ifndef HALFSPACE_SERVER_RATE_LIMITS_H_
#define HALFSPACE_SERVER_RATE_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/base/retry_after.h"

namespace halfspace {

// A rate and its burst; per_second 0 is no limit. Burst 0 means one
// second's worth (at least 1).
struct Rate {
  double per_second = 0;
  double burst = 0;
  bool limited() const { return per_second > 0; }
  double capacity() const {
    return burst > 0 ? burst : (per_second > 1 ? per_second : 1);
  }
};

// What one caller may do.
struct CallerLimits {
  Rate calls;
  Rate examples;
};

class TokenBucket {
 public:
  TokenBucket(const Rate& rate, absl::Time now)
      : rate_(rate), tokens_(rate.capacity()), last_(now) {}

  // Takes n tokens and returns zero, or takes none and returns how long
  // until they would be there (for n past the burst: until it is full).
  absl::Duration Take(double n, absl::Time now);
  // The wait Take would answer, taking nothing.
  absl::Duration Wait(double n, absl::Time now);
  // Takes n tokens whatever there are, into debt if need be.
  void Spend(double n, absl::Time now);

 private:
  void Refill(absl::Time now);

  Rate rate_;
  double tokens_;
  absl::Time last_;
};

class RateLimiter {
 public:
  struct Options {
    Rate auth_failures;  // per client address
    size_t max_callers = 10000;
  };
  explicit RateLimiter(const Options& options) : options_(options) {}
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // OK, taking `calls` calls and `examples` examples from `caller`'s
  // buckets, or RESOURCE_EXHAUSTED (taking nothing) naming `who` and the
  // wait.
  absl::Status Admit(absl::string_view caller, const CallerLimits& limits,
                     double calls, double examples, absl::string_view who);

  // RESOURCE_EXHAUSTED while `address` failed to authenticate too often.
  absl::Status CheckAuthentication(absl::string_view address);
  // Counts a failed authentication from `address`.
  void CountAuthenticationFailure(absl::string_view address);

 private:
  struct Buckets {
    TokenBucket calls;
    TokenBucket examples;
    uint64_t used = 0;
  };
  // `key`'s buckets, made (and the least recently used forgotten) if new.
  Buckets& Find(const std::string& key, const CallerLimits& limits,
                absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  Mutex mu_;
  absl::flat_hash_map<std::string, Buckets> buckets_ ABSL_GUARDED_BY(mu_);
  uint64_t uses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_RATE_LIMITS_H_
