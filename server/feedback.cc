#include "server/feedback.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/quoted.h"
#include "core/model/limits.h"
#include "core/monitors/pending_examples.h"
#include "server/convert.h"
#include "server/replication.h"
#include "server/status.h"
#include "server/train_batch.h"

namespace halfspace {
namespace {

PendingLimits PendingLimitsOf(const Limits& limits) {
  return {limits.max_pending_examples, limits.max_pending_bytes};
}

// An id the server makes: 64 random bits in hex.
std::string MakeExampleId() {
  thread_local absl::BitGen bits;
  return absl::StrCat(
      absl::Hex(absl::Uniform<uint64_t>(bits), absl::kZeroPad16));
}

}  // namespace

absl::Status CheckRemember(bool remember, const ExampleIds& ids,
                           int instances) {
  if (ids.empty()) return absl::OkStatus();
  if (!remember) {
    return absl::InvalidArgumentError(
        "example_ids name remembered instances: set remember too");
  }
  if (ids.size() != instances) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request has ", instances, " instances and ", ids.size(),
        " example_ids; give one id per instance, or none"));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& id : ids) {
    if (absl::Status s = ValidateExampleId(id); !s.ok()) return s;
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example id ", Quoted(id), " is given twice in one request"));
    }
  }
  return absl::OkStatus();
}

absl::Status RememberInstances(
    Model& model, const ModelRegistry& registry, const Instances& instances,
    const ExampleIds& ids,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions,
    uint64_t& lsn) {
  if (absl::Status s = CheckNotReplicated(model, "remembering predictions");
      !s.ok()) {
    return s;
  }
  const Limits& limits = registry.budget().limits();
  const PendingLimits pending = PendingLimitsOf(limits);
  const absl::Time now = absl::Now();
  const int64_t now_micros = absl::ToUnixMicros(now);
  const int64_t deadline =
      absl::ToUnixMicros(now + absl::Seconds(limits.pending_ttl_seconds));
  const bool given = !ids.empty();
  absl::Status status;
  // Made ids are retried should one collide with an id in use.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<PendingExamples::Entry> entries;
    for (int i = 0; i < instances.size(); ++i) {
      entries.push_back({given ? ids[i] : MakeExampleId(),
                         instances[i].SerializeAsString(), deadline});
    }
    std::vector<std::string> named;
    for (const PendingExamples::Entry& e : entries) named.push_back(e.id);
    absl::StatusOr<uint64_t> remembered = registry.trainer().Remember(
        model, std::move(entries), now_micros, pending);
    status = remembered.status();
    if (status.ok()) {
      lsn = *remembered;
      for (int i = 0; i < predictions.size(); ++i) {
        predictions[i].set_example_id(std::move(named[i]));
      }
      return status;
    }
    if (given || !absl::IsAlreadyExists(status)) break;
  }
  return status;
}

namespace {

// The feedback of `request` whose remembered examples wait, as of `now`,
// into `waiting` (and feedback i's index there into example[i]); each
// other one's result (a duplicate, or why not) into `response`. Whether
// any had expired.
bool WaitingFeedback(const Model& model, const v1::FeedbackRequest& request,
                     int64_t now, Metrics& metrics,
                     std::vector<Feedback>& waiting, std::vector<int>& example,
                     v1::FeedbackResponse& response) {
  bool expired = false;
  for (int i = 0; i < request.feedback_size(); ++i) {
    const v1::ExampleFeedback& f = request.feedback(i);
    v1::ExampleResult* result = response.add_results();
    absl::Status s = ValidateExampleId(f.example_id());
    if (s.ok()) {
      switch (model.Pending(f.example_id(), now, nullptr)) {
        case PendingExamples::State::kWaiting:
          example[i] = static_cast<int>(waiting.size());
          waiting.push_back({f.example_id(), f.label(), f.class_label(),
                             f.has_weight() ? std::optional<double>(f.weight())
                                            : std::nullopt});
          continue;
        case PendingExamples::State::kJoined:
          result->set_duplicate(true);
          continue;
        case PendingExamples::State::kExpired:
          expired = true;
          s = absl::NotFoundError(absl::StrCat(
              "example ", Quoted(f.example_id()),
              " expired before its feedback came (its time to live passed, "
              "or newer predictions needed its room)"));
          break;
        case PendingExamples::State::kUnknown:
          s = absl::NotFoundError(absl::StrCat(
              "no example is remembered under id ", Quoted(f.example_id()),
              " for model ", Quoted(model.name()),
              ": predict with remember set first"));
          break;
      }
    }
    metrics.RecordRefusal(s);
    ToRpcStatus(s, result->mutable_error());
  }
  return expired;
}

}  // namespace

absl::Status LearnFeedback(Model& model, const ModelRegistry& registry,
                           const v1::FeedbackRequest& request,
                           const StopCheck& stop, size_t max_message_bytes,
                           Metrics& metrics, v1::FeedbackResponse& response,
                           uint64_t& lsn) {
  if (absl::Status s = CheckNotReplicated(model, "delayed feedback"); !s.ok()) {
    return s;
  }
  const int n = request.feedback_size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "FeedbackRequest has no feedback; send example ids with labels");
  }
  const Limits& limits = registry.budget().limits();
  if (absl::Status s = CheckExamplesPerRequest(n, limits, "FeedbackRequest");
      !s.ok()) {
    return s;
  }
  const int64_t now = absl::ToUnixMicros(absl::Now());
  std::vector<Feedback> feedback;
  std::vector<int> example(n, -1);  // feedback i's index in `feedback`
  const bool expired = WaitingFeedback(model, request, now, metrics, feedback,
                                       example, response);
  if (feedback.empty()) {
    // Nothing to learn; give back what the expired examples held.
    if (!expired) return absl::OkStatus();
    absl::StatusOr<uint64_t> expiry =
        registry.trainer().Remember(model, {}, now, PendingLimitsOf(limits));
    if (!expiry.ok()) return expiry.status();
    lsn = *expiry;
    return absl::OkStatus();
  }
  v1::TrainRequest train;
  TrainScratch scratch;
  if (absl::Status s =
          PrepareFeedback(model, feedback, now, train, scratch, stop);
      !s.ok()) {
    return s;
  }
  if (const size_t bound = ResponseSizeBound(model, train, scratch);
      bound > max_message_bytes) {
    return LimitExceeded(
        absl::StrCat("the FeedbackResponse could take ", bound,
                     " bytes (send fewer feedback per request)"),
        max_message_bytes, "max_message_bytes");
  }
  TrainBatch batch;
  batch.feedback = feedback;
  batch.now_micros = now;
  batch.pending_limits = PendingLimitsOf(limits);
  absl::StatusOr<uint64_t> learned =
      LearnPrepared(registry.trainer(), model, train, batch, scratch);
  if (!learned.ok()) return learned.status();
  lsn = *learned;
  for (int i = 0; i < n; ++i) {
    if (example[i] < 0) continue;
    const ExampleOutcome& outcome = scratch.outcomes[example[i]];
    if (!outcome.error.ok()) metrics.RecordRefusal(outcome.error);
    ToProto(outcome, scratch.class_names, response.mutable_results(i));
  }
  return absl::OkStatus();
}

}  // namespace halfspace
