#include "server/rate_limits.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace halfspace {
namespace {

absl::Status Refused(absl::string_view what, absl::Duration wait) {
  return WithRetryAfter(
      absl::ResourceExhaustedError(
          absl::StrCat(what, "; retry in ", RetryAfterMillis(wait), " ms")),
      wait);
}

}  // namespace

void TokenBucket::Refill(absl::Time now) {
  if (now > last_) {
    tokens_ = std::min(
        rate_.capacity(),
        tokens_ + absl::ToDoubleSeconds(now - last_) * rate_.per_second);
    last_ = now;
  }
}

absl::Duration TokenBucket::Wait(double n, absl::Time now) {
  if (!rate_.limited() || n <= 0) return absl::ZeroDuration();
  Refill(now);
  const double needed = std::min(n, rate_.capacity());
  if (tokens_ >= needed) return absl::ZeroDuration();
  return absl::Seconds((needed - tokens_) / rate_.per_second);
}

void TokenBucket::Spend(double n, absl::Time now) {
  Refill(now);
  if (rate_.limited()) tokens_ -= n;
}

absl::Duration TokenBucket::Take(double n, absl::Time now) {
  const absl::Duration wait = Wait(n, now);
  if (wait == absl::ZeroDuration() && rate_.limited()) tokens_ -= n;
  return wait;
}

RateLimiter::Buckets& RateLimiter::Find(const std::string& key,
                                        const CallerLimits& limits,
                                        absl::Time now) {
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= options_.max_callers) {
      auto oldest = std::min_element(buckets_.begin(), buckets_.end(),
                                     [](const auto& a, const auto& b) {
                                       return a.second.used < b.second.used;
                                     });
      buckets_.erase(oldest);
    }
    it = buckets_
             .emplace(key, Buckets{TokenBucket(limits.calls, now),
                                   TokenBucket(limits.examples, now), 0})
             .first;
  }
  it->second.used = ++uses_;
  return it->second;
}

absl::Status RateLimiter::Admit(absl::string_view caller,
                                const CallerLimits& limits, double calls,
                                double examples, absl::string_view who) {
  if (!limits.calls.limited() && !limits.examples.limited()) {
    return absl::OkStatus();
  }
  const absl::Time now = absl::Now();
  MutexLock lock(mu_);
  Buckets& b = Find(std::string(caller), limits, now);
  const absl::Duration calls_wait = b.calls.Wait(calls, now);
  const absl::Duration examples_wait = b.examples.Wait(examples, now);
  if (calls_wait > absl::ZeroDuration()) {
    return Refused(
        absl::StrCat(who, " makes more than ", limits.calls.per_second,
                     " calls a second (a burst of ", limits.calls.capacity(),
                     ")"),
        std::max(calls_wait, examples_wait));
  }
  if (examples_wait > absl::ZeroDuration()) {
    return Refused(
        absl::StrCat(who, " sends more than ", limits.examples.per_second,
                     " training examples a second (a burst of ",
                     limits.examples.capacity(), ")"),
        examples_wait);
  }
  b.calls.Take(calls, now);
  b.examples.Take(examples, now);
  return absl::OkStatus();
}

absl::Status RateLimiter::CheckAuthentication(absl::string_view address) {
  if (!options_.auth_failures.limited()) return absl::OkStatus();
  const absl::Time now = absl::Now();
  MutexLock lock(mu_);
  Buckets& b = Find(absl::StrCat("failures ", address),
                    {options_.auth_failures, {}}, now);
  const absl::Duration wait = b.calls.Wait(1, now);
  if (wait == absl::ZeroDuration()) return absl::OkStatus();
  return Refused(
      absl::StrCat("client ", address, " failed to authenticate too often"),
      wait);
}

void RateLimiter::CountAuthenticationFailure(absl::string_view address) {
  if (!options_.auth_failures.limited()) return;
  const absl::Time now = absl::Now();
  MutexLock lock(mu_);
  Buckets& b = Find(absl::StrCat("failures ", address),
                    {options_.auth_failures, {}}, now);
  // A failure always counts, into debt if it must: a client that keeps
  // guessing stays refused.
  b.calls.Spend(1, now);
}

}  // namespace halfspace
