// What one request, one example, one model and one server may take: the
// bounds checked *before* work starts, so that no request can exhaust the
// server's memory or hold a model's lock for long.
//
// Each limit is set by the server flag of the same name; an error for a
// limit names both (RESOURCE_EXHAUSTED, "example has 20000 named features;
// the limit is 10000, set by --max_named_features"). The defaults here are
// no limit at all (a model used as a library); the server sets its own.
//
// ResourceBudget is the one object every model of a server shares: the
// limits, and the memory all models hold together. A model reserves its
// bytes when it is created and when it grows (a new class), and releases
// them when it is destroyed.
//
// Recovery replays changes that were accepted under the limits of their
// day, which an operator may have lowered since: while a budget is not
// `enforcing`, reservations always succeed and no limit refuses anything.
//
// Thread safety: every method may be called concurrently.

#ifndef HALFSPACE_CORE_MODEL_LIMITS_H_
#define HALFSPACE_CORE_MODEL_LIMITS_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/monitors/pending_examples.h"

namespace halfspace {

struct Limits {
  // The memory of one model: weights and the algorithm's state, for every
  // class (see ModelBytes).
  int64_t max_model_bytes = std::numeric_limits<int64_t>::max();
  // The memory of all models together.
  int64_t max_total_model_bytes = std::numeric_limits<int64_t>::max();
  // How many models a server holds.
  int64_t max_models = std::numeric_limits<int64_t>::max();
  // The classes of one multiclass model (at most kMaxClasses).
  int64_t max_classes = std::numeric_limits<int64_t>::max();
  // Named features in one example.
  int64_t max_named_features = std::numeric_limits<int64_t>::max();
  // Interaction products one example makes (over all its interactions).
  int64_t max_interaction_products = std::numeric_limits<int64_t>::max();
  // Examples (or instances) in one request.
  int64_t max_examples_per_request = std::numeric_limits<int64_t>::max();
  // Delayed labels: what one model keeps of the examples it predicted and
  // remembers for feedback (see pending_examples.h), and for how long.
  int64_t max_pending_examples = kDefaultMaxPendingExamples;
  int64_t max_pending_bytes = kDefaultMaxPendingBytes;
  int64_t pending_ttl_seconds = kDefaultPendingTtlSeconds;
};

// RESOURCE_EXHAUSTED: "<what>; the limit is <limit>, set by --<flag>".
absl::Status LimitExceeded(absl::string_view what, int64_t limit,
                           absl::string_view flag);

// The flag of the limit a LimitExceeded status names ("max_models"); empty
// for any other status.
std::string LimitOf(const absl::Status& status);

// LimitExceeded naming --max_examples_per_request for a `request` (its
// message type) of more than that many examples; else OK.
absl::Status CheckExamplesPerRequest(int64_t examples, const Limits& limits,
                                     absl::string_view request);

class ResourceBudget {
 public:
  explicit ResourceBudget(const Limits& limits = {}) : limits_(limits) {}

  ResourceBudget(const ResourceBudget&) = delete;
  ResourceBudget& operator=(const ResourceBudget&) = delete;

  const Limits& limits() const { return limits_; }

  bool enforcing() const { return enforcing_.load(std::memory_order_acquire); }
  void set_enforcing(bool enforcing) {
    enforcing_.store(enforcing, std::memory_order_release);
  }

  // Reserves `bytes` of model memory for `model` (named in the error):
  // RESOURCE_EXHAUSTED naming --max_total_model_bytes when all models
  // would then hold more, unless the budget is not enforcing.
  absl::Status Reserve(int64_t bytes, absl::string_view model);
  void Release(int64_t bytes);

  // The model memory reserved now.
  int64_t reserved() const { return reserved_.load(std::memory_order_acquire); }

 private:
  const Limits limits_;
  std::atomic<bool> enforcing_{true};
  std::atomic<int64_t> reserved_{0};
};

// The budget of a model made outside a server: no limit but the hard ones.
std::shared_ptr<ResourceBudget> UnlimitedBudget();

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_LIMITS_H_
