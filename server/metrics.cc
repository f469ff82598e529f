#include "server/metrics.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/model/limits.h"
#include "prometheus/collectable.h"
#include "server/convert.h"

namespace halfspace {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Call durations from 50 µs to 10 s; log syncs from 50 µs to 1 s.
const prometheus::Histogram::BucketBoundaries kCallBuckets = {
    5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1,  0.25,   0.5,  1,    2.5,    5,    10};
const prometheus::Histogram::BucketBoundaries kSyncBuckets = {
    5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
    1e-2, 2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1};

const char* CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

// One sample: a counter's or a gauge's value, with labels.
ClientMetric Sample(MetricType type, double value,
                    std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return metric;
}

const ClientMetric::Label* FindLabel(const ClientMetric& metric,
                                     absl::string_view name) {
  for (const ClientMetric::Label& label : metric.label) {
    if (label.name == name) return &label;
  }
  return nullptr;
}

// What a scrape reads of one model.
struct ModelNumbers {
  const Model& model;
  ModelCounters counters;
  PendingStats pending;
};

// A family with a sample per model (labelled by its name).
struct PerModel {
  const char* name;
  const char* help;
  MetricType type;
  double (*value)(const ModelNumbers&);
};

constexpr PerModel kPerModel[] = {
    {"halfspace_model_examples_total", "Examples a model learned from",
     MetricType::Counter,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.counters.examples_seen);
     }},
    {"halfspace_model_updates_total", "Examples that changed a model's weights",
     MetricType::Counter,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.counters.updates);
     }},
    {"halfspace_model_mistakes_total",
     "Progressive mistakes: examples predicted wrong before the update",
     MetricType::Counter,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.counters.mistakes);
     }},
    {"halfspace_model_loss_total",
     "Sum of per-example losses, each before its update", MetricType::Counter,
     [](const ModelNumbers& n) { return n.counters.loss_sum; }},
    {"halfspace_model_progressive_accuracy",
     "1 - mistakes / examples: accuracy of predicting before learning",
     MetricType::Gauge,
     [](const ModelNumbers& n) {
       const double seen = static_cast<double>(n.counters.examples_seen);
       return seen == 0 ? 0.0 : 1.0 - n.counters.mistakes / seen;
     }},
    {"halfspace_model_memory_bytes",
     "Memory a model holds (label model), or all models (no label)",
     MetricType::Gauge,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.model.memory_bytes());
     }},
    {"halfspace_model_pending_examples",
     "Examples remembered for delayed feedback and waiting for it",
     MetricType::Gauge,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.pending.waiting);
     }},
    {"halfspace_model_pending_joined_total",
     "Remembered examples joined by their feedback and learned",
     MetricType::Counter,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.pending.counters.joined);
     }},
    {"halfspace_model_pending_expired_total",
     "Remembered examples whose feedback did not come in time",
     MetricType::Counter,
     [](const ModelNumbers& n) {
       return static_cast<double>(n.pending.counters.expired);
     }},
};

// The family that also holds all models' memory.
constexpr size_t kMemoryFamily = 5;
static_assert(std::string_view(kPerModel[kMemoryFamily].name) ==
              "halfspace_model_memory_bytes");

}  // namespace

// The numbers read from the models and the gate when scraped.
class Metrics::ModelCollector final : public prometheus::Collectable {
 public:
  ModelCollector(const ModelRegistry* models, CallGate* gate)
      : models_(models), gate_(gate) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> families;
    for (const PerModel& m : kPerModel) {
      families.push_back(Family(m.name, m.help, m.type));
    }
    MetricFamily drift_state =
        Family("halfspace_model_drift_state",
               "A model's drift detector lately: 0 stable, 1 warning, 2 drift "
               "(within its progress window)",
               MetricType::Gauge);
    MetricFamily drift_warnings =
        Family("halfspace_model_drift_warnings_total",
               "Warnings of a model's drift detector", MetricType::Counter);
    MetricFamily drifts =
        Family("halfspace_model_drifts_total",
               "Drifts a model's drift detector found", MetricType::Counter);
    MetricFamily switches = Family(
        "halfspace_model_challenger_switches_total",
        "Challengers that replaced a model's weights (its drift reaction)",
        MetricType::Counter);
    MetricFamily challenging =
        Family("halfspace_model_challenging",
               "1 while a challenger learns beside the model, else 0",
               MetricType::Gauge);
    int64_t count = 0;
    for (const std::shared_ptr<Model>& model : models_->List()) {
      ++count;
      if (const std::optional<ModelDrift> d = model->drift(); d.has_value()) {
        const std::vector<ClientMetric::Label> labels = {
            {"model", model->name()}};
        drift_state.metric.push_back(
            Sample(MetricType::Gauge, static_cast<double>(d->state), labels));
        drift_warnings.metric.push_back(
            Sample(MetricType::Counter, static_cast<double>(d->stats.warnings),
                   labels));
        drifts.metric.push_back(Sample(
            MetricType::Counter, static_cast<double>(d->stats.drifts), labels));
        if (d->reaction.has_value()) {
          switches.metric.push_back(
              Sample(MetricType::Counter,
                     static_cast<double>(d->reaction->switches), labels));
          challenging.metric.push_back(Sample(
              MetricType::Gauge, d->reaction->challenging ? 1.0 : 0.0, labels));
        }
      }
      const ModelNumbers numbers{*model, model->counters(),
                                 model->pending_stats()};
      const std::vector<ClientMetric::Label> labels = {
          {"model", model->name()}};
      for (size_t i = 0; i < std::size(kPerModel); ++i) {
        families[i].metric.push_back(
            Sample(kPerModel[i].type, kPerModel[i].value(numbers), labels));
      }
    }
    AddReplicas(families);
    // And all models' memory, with no label.
    families[kMemoryFamily].metric.push_back(
        Sample(MetricType::Gauge, models_->budget().reserved()));
    MetricFamily models =
        Family("halfspace_models", "Models served", MetricType::Gauge);
    models.metric.push_back(Sample(MetricType::Gauge, count));
    MetricFamily streams =
        Family("halfspace_open_streams", "Train and Evaluate streams open",
               MetricType::Gauge);
    streams.metric.push_back(Sample(MetricType::Gauge, gate_->streams()));
    families.push_back(std::move(models));
    families.push_back(std::move(streams));
    families.push_back(std::move(drift_state));
    families.push_back(std::move(drift_warnings));
    families.push_back(std::move(drifts));
    families.push_back(std::move(switches));
    families.push_back(std::move(challenging));
    return families;
  }

  void FollowReplicas(const ReplicaSet* replicas) {
    MutexLock lock(replicas_mu_);
    replicas_ = replicas;
  }

 private:
  // Each replicated model's position in its stream and its lag.
  void AddReplicas(std::vector<MetricFamily>& families) const {
    MetricFamily position =
        Family("halfspace_replica_position",
               "The stream sequence of the last record a replica applied",
               MetricType::Gauge);
    MetricFamily records = Family(
        "halfspace_replica_lag_records",
        "Records of a replica's stream it has not applied yet, as of its "
        "last read",
        MetricType::Gauge);
    MetricFamily seconds =
        Family("halfspace_replica_lag_seconds",
               "How long the first record a replica has not applied has waited",
               MetricType::Gauge);
    MetricFamily stalled = Family(
        "halfspace_replica_stalled",
        "1 while a replica does not read its stream (it has not yet, or the "
        "log does not answer), else 0",
        MetricType::Gauge);
    MutexLock lock(replicas_mu_);
    if (replicas_ == nullptr) return;
    for (const ModelRegistry::Replica& r : models_->Replicas()) {
      const std::vector<ClientMetric::Label> labels = {{"model", r.name}};
      const ReplicaSet::Lag lag = replicas_->LagOf(r.name);
      position.metric.push_back(Sample(
          MetricType::Gauge,
          static_cast<double>(std::max(r.position, lag.position)), labels));
      records.metric.push_back(
          Sample(MetricType::Gauge, static_cast<double>(lag.records), labels));
      seconds.metric.push_back(Sample(MetricType::Gauge, lag.seconds, labels));
      stalled.metric.push_back(
          Sample(MetricType::Gauge, lag.stalled.empty() ? 0 : 1, labels));
    }
    families.push_back(std::move(position));
    families.push_back(std::move(records));
    families.push_back(std::move(seconds));
    families.push_back(std::move(stalled));
  }

  const ModelRegistry* const models_;
  CallGate* const gate_;
  mutable Mutex replicas_mu_;
  const ReplicaSet* replicas_ ABSL_GUARDED_BY(replicas_mu_) = nullptr;
};

Metrics::Metrics(const ModelRegistry* models, CallGate* gate)
    : models_(models),
      gate_(gate),
      registry_(std::make_shared<prometheus::Registry>()),
      calls_(prometheus::BuildHistogram()
                 .Name("halfspace_rpc_duration_seconds")
                 .Help("Finished calls by RPC and status code, and their "
                       "duration (a stream's whole life)")
                 .Register(*registry_)),
      refusals_(prometheus::BuildCounter()
                    .Name("halfspace_limit_refusals_total")
                    .Help("Requests, streams and examples a limit refused, "
                          "by the flag that sets it")
                    .Register(*registry_)),
      syncs_(prometheus::BuildHistogram()
                 .Name("halfspace_log_sync_seconds")
                 .Help("Syncs of the write-ahead log")
                 .Register(*registry_)
                 .Add({}, kSyncBuckets)),
      log_damage_(prometheus::BuildCounter()
                      .Name("halfspace_log_damaged_records_total")
                      .Help("Damaged records (or spans of bytes) recovery "
                            "found in the write-ahead log, kept for the "
                            "operator beside their segment")
                      .Register(*registry_)
                      .Add({})),
      rate_limited_(prometheus::BuildCounter()
                        .Name("halfspace_rate_limited_total")
                        .Help("Calls refused by a rate limit, by caller: a "
                              "token's name, anonymous, or unauthenticated")
                        .Register(*registry_)),
      replica_skips_(prometheus::BuildCounter()
                         .Name("halfspace_replica_skipped_total")
                         .Help("Reports of a replica on its stream, each "
                               "also in the log: a message skipped (no "
                               "change), a record it could not apply, a text "
                               "line left out (up to 10 a message, then one "
                               "for the rest)")
                         .Register(*registry_)),
      http_responses_(prometheus::BuildCounter()
                          .Name("halfspace_http_responses_total")
                          .Help("Answers of the JSON-over-HTTP gateway, by "
                                "HTTP status")
                          .Register(*registry_)),
      collector_(std::make_shared<ModelCollector>(models, gate)) {}

Metrics::~Metrics() = default;

absl::Status Metrics::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address,
                     " (--metrics_listen): ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(collector_);
  return absl::OkStatus();
}

int Metrics::port() const {
  if (exposer_ == nullptr) return 0;
  std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordCall(absl::string_view method, grpc::StatusCode code,
                         absl::Duration elapsed) {
  prometheus::Histogram* histogram = nullptr;
  {
    MutexLock lock(call_histograms_mu_);
    auto [it, added] = call_histograms_.try_emplace(
        std::make_pair(std::string(method), static_cast<int>(code)), nullptr);
    if (added) {
      it->second = &calls_.Add(
          {{"method", std::string(method)}, {"code", CodeName(code)}},
          kCallBuckets);
    }
    histogram = it->second;
  }
  histogram->Observe(absl::ToDoubleSeconds(elapsed));
}

void Metrics::RecordRefusal(const absl::Status& status) {
  const std::string limit = LimitOf(status);
  if (!limit.empty()) refusals_.Add({{"limit", limit}}).Increment();
}

void Metrics::RecordSync(absl::Duration elapsed) {
  syncs_.Observe(absl::ToDoubleSeconds(elapsed));
}

void Metrics::FollowReplicas(const ReplicaSet* replicas) {
  collector_->FollowReplicas(replicas);
}

void Metrics::RecordReplicaSkip(const std::string& model) {
  replica_skips_.Add({{"model", model}}).Increment();
}

void Metrics::RecordLogDamage() { log_damage_.Increment(); }

void Metrics::RecordHttpResponse(int status) {
  http_responses_.Add({{"code", std::to_string(status)}}).Increment();
}

void Metrics::RecordRateLimited(const std::string& caller) {
  rate_limited_.Add({{"caller", caller}}).Increment();
}

std::vector<MetricFamily> Metrics::Collect() const {
  std::vector<MetricFamily> families = registry_->Collect();
  std::vector<MetricFamily> models = collector_->Collect();
  families.insert(families.end(), models.begin(), models.end());
  return families;
}

void Metrics::ToProto(const Principal& caller,
                      v1::GetStatsResponse& out) const {
  for (const std::shared_ptr<Model>& model : models_->List()) {
    if (!caller.Allows(Permission::kPredict, model->name())) continue;
    v1::ModelUsage* usage = out.add_models();
    usage->set_name(model->name());
    halfspace::ToProto(model->Stats(), usage->mutable_stats());
    usage->set_memory_bytes(model->memory_bytes());
  }
  for (const MetricFamily& family : registry_->Collect()) {
    for (const ClientMetric& metric : family.metric) {
      if (family.name == "halfspace_rpc_duration_seconds") {
        v1::CallStats* calls = out.add_calls();
        calls->set_method(FindLabel(metric, "method")->value);
        calls->set_code(FindLabel(metric, "code")->value);
        calls->set_count(metric.histogram.sample_count);
        calls->set_seconds(metric.histogram.sample_sum);
      } else if (family.name == "halfspace_limit_refusals_total") {
        v1::LimitRefusals* refusals = out.add_refusals();
        refusals->set_limit(FindLabel(metric, "limit")->value);
        refusals->set_count(static_cast<uint64_t>(metric.counter.value));
      } else if (family.name == "halfspace_log_sync_seconds") {
        out.set_log_syncs(metric.histogram.sample_count);
        out.set_log_sync_seconds(metric.histogram.sample_sum);
      }
    }
  }
  out.set_open_streams(gate_->streams());
  out.set_model_memory_bytes(models_->budget().reserved());
  out.set_model_memory_limit_bytes(
      models_->budget().limits().max_total_model_bytes);
  const Limits& limits = models_->budget().limits();
  for (const auto& [flag, value] :
       {std::pair<const char*, int64_t>{"max_models", limits.max_models},
        {"max_model_bytes", limits.max_model_bytes},
        {"max_total_model_bytes", limits.max_total_model_bytes},
        {"max_classes", limits.max_classes},
        {"max_named_features", limits.max_named_features},
        {"max_interaction_products", limits.max_interaction_products},
        {"max_examples_per_request", limits.max_examples_per_request},
        {"max_pending_examples", limits.max_pending_examples},
        {"max_pending_bytes", limits.max_pending_bytes},
        {"pending_ttl", limits.pending_ttl_seconds}}) {
    if (value == std::numeric_limits<int64_t>::max()) continue;  // not set
    v1::LimitSetting* setting = out.add_limits();
    setting->set_limit(flag);
    setting->set_value(value);
  }
}

}  // namespace halfspace
