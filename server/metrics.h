// What the server has done, for Prometheus (an HTTP /metrics endpoint served
// by prometheus-cpp) and for the GetStats RPC, which reports the same
// numbers:
//
//   halfspace_rpc_duration_seconds{method,code}   histogram: calls, by RPC
//                                                  and status (a stream's
//                                                  whole life)
//   halfspace_limit_refusals_total{limit}         counter: requests and
//                                                  examples a limit refused
//   halfspace_http_responses_total{code}          counter: answers of the
//                                                  JSON-over-HTTP gateway, by
//                                                  HTTP status
//   halfspace_log_sync_seconds                    histogram: fdatasync of
//                                                  the write-ahead log
//   halfspace_open_streams                        gauge
//   halfspace_models, halfspace_model_memory_bytes gauges
//   halfspace_model_{examples,updates,mistakes}_total{model},
//   halfspace_model_loss_total{model}             counters, from the models
//   halfspace_model_progressive_accuracy{model}    gauge
//   halfspace_model_memory_bytes{model}            gauge
//   halfspace_model_drift_state{model}             gauge: 0 stable, 1
//                                                  warning, 2 drift lately
//   halfspace_model_drift_warnings_total{model},
//   halfspace_model_drifts_total{model}            counters: what a model's
//                                                  drift detector found (only
//                                                  models with one)
//   halfspace_replica_skipped_total{model}         counter: messages of a
//                                                  replicated model's stream
//                                                  its replica did not apply,
//                                                  and text lines left out
//   halfspace_replica_position{model},
//   halfspace_replica_lag_records{model},
//   halfspace_replica_lag_seconds{model},
//   halfspace_replica_stalled{model}               gauges: a replica's place
//                                                  in its stream (GetModel's)
//
// The per-model numbers are read from the models when scraped: training
// pays nothing for them.
//
// Thread safety: every method may be called concurrently.

#ifndef HALFSPACE_SERVER_METRICS_H_
#define HALFSPACE_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/registry/model_registry.h"
#include "core/replication/replica_set.h"
#include "grpcpp/support/status.h"
#include "halfspace/v1/halfspace.pb.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/auth.h"
#include "server/call_gate.h"

namespace halfspace {

class Metrics {
 public:
  // REQUIRES: `models` and `gate` outlive the metrics.
  Metrics(const ModelRegistry* models, CallGate* gate);
  ~Metrics();

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Serves /metrics over HTTP on `address` (host:port); UNAVAILABLE if it
  // cannot be bound.
  absl::Status Serve(const std::string& address);

  // The port /metrics is served on; 0 if not served.
  int port() const;

  // Counts a finished call of RPC `method`.
  void RecordCall(absl::string_view method, grpc::StatusCode code,
                  absl::Duration elapsed);

  // Counts `status` if a limit refused something (see LimitOf).
  void RecordRefusal(const absl::Status& status);

  // Reports the position and lag of `replicas`' models from now on (none:
  // no longer); returns once no scrape reads an earlier set. REQUIRES:
  // `replicas` outlives the next call.
  void FollowReplicas(const ReplicaSet* replicas);

  // Counts a message of `model`'s stream that its replica skipped (no
  // change at all) or could not apply, or a text line of one left out.
  void RecordReplicaSkip(const std::string& model);

  // Counts one sync of the write-ahead log.
  void RecordSync(absl::Duration elapsed);

  // Counts one damaged span of the write-ahead log found by recovery.
  void RecordLogDamage();

  // Counts an answer of the HTTP gateway, by its HTTP status.
  void RecordHttpResponse(int status);

  // Counts a call a rate limit refused, by the caller's name (a token's
  // name, "anonymous", or "unauthenticated").
  void RecordRateLimited(const std::string& caller);

  // Every metric, as Prometheus scrapes them.
  std::vector<prometheus::MetricFamily> Collect() const;

  // The same numbers for GetStats; only the models `caller` may see.
  void ToProto(const Principal& caller, v1::GetStatsResponse& out) const;

 private:
  class ModelCollector;

  const ModelRegistry* const models_;
  CallGate* const gate_;
  const std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& calls_;
  // calls_'s histogram of each method and code, found once: looking one up
  // builds its labels and bucket bounds, costly on every call.
  mutable Mutex call_histograms_mu_;
  absl::flat_hash_map<std::pair<std::string, int>, prometheus::Histogram*>
      call_histograms_ ABSL_GUARDED_BY(call_histograms_mu_);
  prometheus::Family<prometheus::Counter>& refusals_;
  prometheus::Histogram& syncs_;
  prometheus::Counter& log_damage_;
  prometheus::Family<prometheus::Counter>& rate_limited_;
  prometheus::Family<prometheus::Counter>& replica_skips_;
  prometheus::Family<prometheus::Counter>& http_responses_;
  const std::shared_ptr<ModelCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_METRICS_H_
