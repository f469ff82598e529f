#include "server/feedback.h"

#include <limits>
#include <optional>
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

absl::Status CheckExampleIds(bool remember, bool query, const ExampleIds& ids,
                             int instances) {
  if (ids.empty()) {
    if (query && !remember) {
      return absl::InvalidArgumentError(
          "a query draws from each instance's example id: give example_ids, "
          "or set remember to have the server make them");
    }
    return absl::OkStatus();
  }
  if (!remember && !query) {
    return absl::InvalidArgumentError(
        "example_ids name remembered or queried instances: set remember or "
        "query too");
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

namespace {

// Remembers `entries` on `model`: written to the log and kept here for a
// model of this server's, published to the stream and kept by every
// replica for a replicated one (the record's LSN is then 0: the stream
// stored it). Errors as Trainer::Remember's.
absl::StatusOr<uint64_t> RememberEntries(
    Model& model, const ServiceParts& parts,
    std::vector<PendingExamples::Entry>&& entries, int64_t now_micros,
    const PendingLimits& limits) {
  if (!IsReplicated(model.spec())) {
    return parts.registry->trainer().Remember(model, std::move(entries),
                                              now_micros, limits);
  }
  if (parts.replicas == nullptr) return NotFollowed(model);
  const RememberBatch batch{entries, now_micros, limits};
  if (absl::Status s = parts.replicas->Remember(
          model, batch, ReplicaDeadline(absl::InfiniteFuture()));
      !s.ok()) {
    return s;
  }
  return 0;
}

}  // namespace

double QueryMargin(bool multiclass, const v1::Prediction& prediction) {
  if (!multiclass) return prediction.score();
  // The two highest, whatever order the scores come in.
  double first = -std::numeric_limits<double>::infinity();
  double second = first;
  for (const v1::ClassScore& c : prediction.class_scores()) {
    if (c.score() > first) {
      second = first;
      first = c.score();
    } else if (c.score() > second) {
      second = c.score();
    }
  }
  return prediction.class_scores_size() < 2 ? 0.0 : first - second;
}

double AnswerQuery(const ModelSpec& spec, const std::string& example_id,
                   v1::Prediction& prediction) {
  const LabelQuery q = QueryLabel(
      spec.sampling, QueryMargin(IsMulticlass(spec), prediction), example_id);
  v1::LabelQuery* out = prediction.mutable_query();
  out->set_ask(q.ask);
  out->set_probability(q.probability);
  out->set_weight(q.weight);
  return q.weight;
}

void TrimClassScores(
    std::optional<int64_t> top_k,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions) {
  if (!top_k.has_value()) return;
  for (v1::Prediction& p : predictions) {
    const int kept = static_cast<int>(*top_k);
    if (p.class_scores_size() > kept) {
      p.mutable_class_scores()->DeleteSubrange(kept,
                                               p.class_scores_size() - kept);
    }
  }
}

absl::Status RememberInstances(
    Model& model, const ServiceParts& parts, const Instances& instances,
    const ExampleIds& ids, bool query,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions,
    uint64_t& lsn) {
  const Limits& limits = parts.registry->budget().limits();
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
      std::string id = given ? ids[i] : MakeExampleId();
      const double weight =
          query ? AnswerQuery(model.spec(), id, predictions[i]) : 1.0;
      entries.push_back(
          {std::move(id), instances[i].SerializeAsString(), deadline, weight});
    }
    std::vector<std::string> named;
    for (const PendingExamples::Entry& e : entries) named.push_back(e.id);
    absl::StatusOr<uint64_t> remembered =
        RememberEntries(model, parts, std::move(entries), now_micros, pending);
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
// any had expired. A replicated model's ids this replica does not know yet
// count as waiting: the stream orders the feedback after the records
// before it, and every replica decides there.
bool WaitingFeedback(const Model& model, const v1::FeedbackRequest& request,
                     int64_t now, Metrics& metrics,
                     std::vector<Feedback>& waiting, std::vector<int>& example,
                     v1::FeedbackResponse& response) {
  const bool replicated = IsReplicated(model.spec());
  bool expired = false;
  for (int i = 0; i < request.feedback_size(); ++i) {
    const v1::ExampleFeedback& f = request.feedback(i);
    v1::ExampleResult* result = response.add_results();
    absl::Status s = ValidateExampleId(f.example_id());
    if (s.ok()) {
      PendingExamples::State state =
          model.Pending(f.example_id(), now, nullptr);
      if (replicated && state == PendingExamples::State::kUnknown) {
        state = PendingExamples::State::kWaiting;
      }
      switch (state) {
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

absl::Status LearnFeedback(Model& model, const ServiceParts& parts,
                           const v1::FeedbackRequest& request,
                           const StopCheck& stop,
                           v1::FeedbackResponse& response, uint64_t& lsn) {
  const bool replicated = IsReplicated(model.spec());
  if (replicated && parts.replicas == nullptr) return NotFollowed(model);
  const int n = request.feedback_size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "FeedbackRequest has no feedback; send example ids with labels");
  }
  const Limits& limits = parts.registry->budget().limits();
  if (absl::Status s = CheckExamplesPerRequest(n, limits, "FeedbackRequest");
      !s.ok()) {
    return s;
  }
  Metrics& metrics = *parts.metrics;
  const int64_t now = absl::ToUnixMicros(absl::Now());
  std::vector<Feedback> feedback;
  std::vector<int> example(n, -1);  // feedback i's index in `feedback`
  const bool expired = WaitingFeedback(model, request, now, metrics, feedback,
                                       example, response);
  if (feedback.empty()) {
    // Nothing to learn; give back what the expired examples held (a
    // replicated model's replicas do with their next change).
    if (!expired || replicated) return absl::OkStatus();
    absl::StatusOr<uint64_t> expiry = parts.registry->trainer().Remember(
        model, {}, now, PendingLimitsOf(limits));
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
      bound > parts.max_message_bytes) {
    return LimitExceeded(
        absl::StrCat("the FeedbackResponse could take ", bound,
                     " bytes (send fewer feedback per request)"),
        parts.max_message_bytes, "max_message_bytes");
  }
  TrainBatch batch;
  batch.feedback = feedback;
  batch.now_micros = now;
  batch.pending_limits = PendingLimitsOf(limits);
  if (replicated) {
    // Every replica makes the examples from what it remembered, as of the
    // record's clock.
    absl::StatusOr<AppliedBatch> applied = parts.replicas->Learn(
        model, batch, ReplicaDeadline(absl::InfiniteFuture()));
    if (!applied.ok()) return applied.status();
    scratch.outcomes = std::move(applied->outcomes);
    scratch.class_names = std::move(applied->class_names);
    scratch.outcomes.resize(feedback.size());
  } else {
    absl::StatusOr<uint64_t> learned =
        LearnPrepared(parts.registry->trainer(), model, train, batch, scratch);
    if (!learned.ok()) return learned.status();
    lsn = *learned;
  }
  for (int i = 0; i < n; ++i) {
    if (example[i] < 0) continue;
    const ExampleOutcome& outcome = scratch.outcomes[example[i]];
    if (!outcome.error.ok()) metrics.RecordRefusal(outcome.error);
    ToProto(outcome, scratch.class_names, response.mutable_results(i));
  }
  return absl::OkStatus();
}

}  // namespace halfspace
