// What the service's handlers and streams share: the models, the log, the
// gate every call passes, who may call and how often, the metrics, and the
// message limit.

#ifndef HALFSPACE_SERVER_SERVICE_PARTS_H_
#define HALFSPACE_SERVER_SERVICE_PARTS_H_

#include <cstddef>

#include "core/registry/model_registry.h"
#include "core/replication/replica_set.h"
#include "core/training/journal.h"
#include "server/auth.h"
#include "server/call_gate.h"
#include "server/metrics.h"
#include "server/rate_limits.h"

namespace halfspace {

// Borrowed pointers: the Server owns every part and outlives the calls.
struct ServiceParts {
  ModelRegistry* registry = nullptr;
  Journal* log = nullptr;          // none when changes are not logged
  ReplicaSet* replicas = nullptr;  // none without --nats_url
  CallGate* gate = nullptr;
  const Authenticator* auth = nullptr;
  Metrics* metrics = nullptr;
  RateLimiter* limiter = nullptr;
  CallerLimits anonymous;        // the rate limits of a caller without a token
  size_t max_message_bytes = 0;  // the largest request or response
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_SERVICE_PARTS_H_
