#include "server/train_stream.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/base/quoted.h"
#include "server/convert.h"
#include "server/pipelined_stream.h"
#include "server/raw_message.h"
#include "server/replication.h"
#include "server/request_arena.h"
#include "server/status.h"
#include "server/stream_call.h"
#include "server/stream_model.h"
#include "server/train_batch.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

// A FanOutResult's tag and length, around its entries.
constexpr size_t kFanOutResultBytes = 8;

class TrainReactor final : public PipelinedStream {
 public:
  TrainReactor(const ServiceParts& parts, grpc::CallbackServerContext* context)
      : PipelinedStream(parts.log, parts.gate),
        parts_(parts),
        registry_(parts.registry),
        call_("Train", parts, context) {
    Start(call_.status());
  }

 private:
  absl::Status Handle(grpc::ByteBuffer& request_bytes,
                      grpc::ByteBuffer& response_bytes, Reply& reply) override {
    // Each request is decoded into the arena, emptied first: its examples
    // cost no allocation of their own.
    request_ = google::protobuf::Arena::CreateMessage<v1::TrainRequest>(
        &arena_.Next());
    absl::Status s = DecodeMessage(request_bytes, request_raw_, *request_);
    if (s.ok()) s = Learn(reply);
    if (!s.ok()) {
      if (!models_.empty()) Ended(Names(), s);
      return s;
    }
    if (!reply.later) EncodeMessage(response_, response_bytes);
    return absl::OkStatus();
  }

  void Ended(const std::string& names, const absl::Status& s) const {
    spdlog::info("rid={} train stream on {} ended: {}", call_.request_id(),
                 names, s.ToString());
  }

  grpc::Status End(const absl::Status& status) override {
    return call_.End(status);
  }

  // Binds the stream to its models and source on the first request, then
  // learns from the request's examples, fills response_ and sets
  // reply.lsn to the last model's log record; or, for a replicated model,
  // publishes them and delivers the response later.
  absl::Status Learn(Reply& reply) {
    const bool first = models_.empty();
    if (absl::Status s = Bind(); !s.ok()) {
      // A replicated model this server has not caught up with: retried.
      return NotHeldYet(parts_.replicas, request_->model(), std::move(s));
    }
    if (first) {
      spdlog::debug("rid={} train stream opened on {}", call_.request_id(),
                    Names());
      source_ = request_->source();
    }
    if (absl::Status s = CheckSource(); !s.ok()) return s;
    if (!v1::TrainResults_IsValid(request_->results())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "results is ", request_->results(),
          "; use TRAIN_RESULTS_PER_EXAMPLE or TRAIN_RESULTS_SUMMARY"));
    }
    if (absl::Status s = CheckExamplesPerRequest(request_->examples_size(),
                                                 registry_->budget().limits(),
                                                 "TrainRequest");
        !s.ok()) {
      return s;
    }
    // The caller's rate of training examples: a refusal ends the stream
    // before anything of the request is learned, telling how long to wait.
    if (absl::Status s = call_.Charge(0, request_->examples_size()); !s.ok()) {
      return s;
    }
    for (size_t k = 0; k < models_.size(); ++k) {
      if (prepared_by_[k] != k) continue;
      if (absl::Status s =
              PrepareRequest(*models_[k], *request_, scratch_[k], call_.stop());
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = CheckResponseSize(); !s.ok()) return s;

    const Shape shape = ShapeOf(*request_);
    if (IsReplicated(models_.front()->spec())) {  // then all of them are
      return fan_out_ ? LearnFanOutReplicated(shape, reply)
                      : LearnReplicated(shape, reply);
    }
    reply.lsn = 0;
    std::vector<const TrainScratch*> results;
    for (size_t k = 0; k < models_.size(); ++k) {
      if (absl::Status s = LearnModel(k, reply.lsn); !s.ok()) return s;
      results.push_back(&scratch_[k]);
    }
    Respond(shape, models_, results, response_);
    return absl::OkStatus();
  }

  // Learns the prepared request on model k, after the models before it.
  absl::Status LearnModel(size_t k, uint64_t& lsn) {
    TrainBatch batch;
    batch.source = source_;
    batch.first_sequence = source_.empty() ? 0 : request_->sequence();
    batch.request = request_raw_;
    batch.now_micros = absl::ToUnixMicros(absl::Now());
    batch.peers = absl::MakeConstSpan(peers_.data(), k);
    TrainScratch& scratch = scratch_[k];
    absl::StatusOr<uint64_t> learned =
        LearnPrepared(registry_->trainer(), *models_[k], *request_, batch,
                      scratch, &scratch_[prepared_by_[k]]);
    if (!learned.ok()) return learned.status();
    lsn = std::max(lsn, *learned);
    if (k + 1 < models_.size()) {  // the models after it count against it
      std::vector<uint8_t>& outcomes = peer_outcomes_[k];
      outcomes.resize(scratch.outcomes.size());
      for (size_t i = 0; i < outcomes.size(); ++i) {
        outcomes[i] = PeerOutcomeOf(scratch.outcomes[i]);
      }
      peers_[k] = {models_[k]->name(), models_[k]->incarnation(), outcomes};
    }
    return absl::OkStatus();
  }

  // What a response reports of its request.
  struct Shape {
    size_t examples = 0;
    bool summarize = false;
    bool end_of_pass = false;
    uint64_t position = 0;  // a replicated model's, of the request
  };

  static Shape ShapeOf(const v1::TrainRequest& request) {
    Shape shape;
    shape.examples = request.examples_size();
    shape.summarize = request.results() == v1::TRAIN_RESULTS_SUMMARY;
    shape.end_of_pass = request.end_of_pass();
    return shape;
  }

  // The record of this request for a replicated model's stream (the
  // request itself in `request_raw_`, no peers), and the source's place
  // after it. A tagged request after the stream's first follows the one
  // before it.
  TrainBatch ReplicatedBatch(const Shape& shape) {
    TrainBatch batch;
    batch.source = source_;
    batch.first_sequence = source_.empty() ? 0 : request_->sequence();
    batch.follows = follows_;
    batch.request = request_raw_;
    batch.now_micros = absl::ToUnixMicros(absl::Now());
    if (!source_.empty() && shape.examples > 0) {
      follows_ = request_->sequence() + (shape.examples - 1);
    }
    return batch;
  }

  // Publishes the request to the replicated model's stream without
  // waiting: the response is delivered once this server's replica applied
  // it (on the replica's thread), so that many requests are in flight.
  absl::Status LearnReplicated(Shape shape, Reply& reply) {
    const std::shared_ptr<Model> model = models_.front();
    if (parts_.replicas == nullptr) return NotFollowed(*model);
    const TrainBatch batch = ReplicatedBatch(shape);
    reply.later = true;
    parts_.replicas->Train(
        *model, batch, ReplicaDeadline(absl::InfiniteFuture()),
        [this, id = reply.id, shape, model,
         names = Names()](absl::StatusOr<AppliedBatch> applied) mutable {
          Deliver(id, Answered(shape, model, names, std::move(applied)));
        });
    return absl::OkStatus();
  }

  // A fan-out request on replicated models on its way: published to each
  // model's stream in turn, with what the models before it did with the
  // examples (their outcomes, as peers), once they applied it; so every
  // replica of a model counts its paired mistakes alike. Each model's
  // records follow the requests' order: a request reaches model k + 1
  // when model k applied it, and model k applies them in order.
  struct FanOut {
    uint64_t id = 0;  // the reply's
    Shape shape;
    std::string names;
    std::vector<std::shared_ptr<Model>> models;
    std::string request;  // the request as received
    TrainBatch batch;     // the record, but for its request and peers
    // Per model, as applied by this server's replica:
    std::vector<TrainScratch> results;
    std::vector<uint64_t> positions;
    std::vector<std::vector<uint8_t>> outcomes;  // as the later models' peer
    std::vector<PeerOutcomes> peers;
  };

  absl::Status LearnFanOutReplicated(Shape shape, Reply& reply) {
    if (parts_.replicas == nullptr) return NotFollowed(*models_.front());
    auto fan_out = std::make_shared<FanOut>();
    fan_out->id = reply.id;
    fan_out->shape = shape;
    fan_out->names = Names();
    fan_out->models = models_;
    fan_out->request = request_raw_;
    fan_out->batch = ReplicatedBatch(shape);
    const size_t m = models_.size();
    fan_out->results.resize(m);
    fan_out->positions.resize(m);
    fan_out->outcomes.resize(m);
    fan_out->peers.resize(m);
    reply.later = true;
    PublishFanOut(std::move(fan_out), 0);
    return absl::OkStatus();
  }

  // Publishes `fan_out`'s request to model k's stream, and once this
  // replica applied it, to the next model's, or answers it after the last.
  void PublishFanOut(std::shared_ptr<FanOut> fan_out, size_t k) {
    TrainBatch batch = fan_out->batch;
    batch.request = fan_out->request;
    batch.peers = absl::MakeConstSpan(fan_out->peers.data(), k);
    const Model& model = *fan_out->models[k];
    parts_.replicas->Train(
        model, batch, ReplicaDeadline(absl::InfiniteFuture()),
        [this, fan_out, k](absl::StatusOr<AppliedBatch> applied) {
          if (!applied.ok()) {
            return Deliver(fan_out->id,
                           Failed(fan_out->names, applied.status()));
          }
          FanOut& f = *fan_out;
          TrainScratch& scratch = f.results[k];
          scratch.outcomes = std::move(applied->outcomes);
          scratch.class_names = std::move(applied->class_names);
          scratch.outcomes.resize(f.shape.examples);
          f.positions[k] = applied->position;
          if (k + 1 == f.models.size()) {
            return Deliver(fan_out->id, FanOutAnswer(f));
          }
          std::vector<uint8_t>& outcomes = f.outcomes[k];
          outcomes.resize(scratch.outcomes.size());
          for (size_t i = 0; i < outcomes.size(); ++i) {
            outcomes[i] = PeerOutcomeOf(scratch.outcomes[i]);
          }
          f.peers[k] = {f.models[k]->name(), f.models[k]->incarnation(),
                        outcomes};
          PublishFanOut(fan_out, k + 1);
        });
  }

  // The response to a fan-out request every model applied.
  grpc::ByteBuffer FanOutAnswer(const FanOut& f) {
    std::vector<const TrainScratch*> results;
    for (const TrainScratch& scratch : f.results) results.push_back(&scratch);
    v1::TrainResponse response;
    Respond(f.shape, f.models, results, response);
    response.mutable_model_positions()->Assign(f.positions.begin(),
                                               f.positions.end());
    grpc::ByteBuffer bytes;
    EncodeMessage(response, bytes);
    return bytes;
  }

  // A replicated request failed: the first failure ends the stream; those
  // after it are dropped.
  absl::Status Failed(const std::string& names, const absl::Status& status) {
    if (!failed_.exchange(true)) Ended(names, status);
    return status;
  }

  // The response to a request that `applied` answers, or the error that
  // ends the stream.
  absl::StatusOr<grpc::ByteBuffer> Answered(
      Shape shape, const std::shared_ptr<Model>& model,
      const std::string& names, absl::StatusOr<AppliedBatch> applied) {
    if (!applied.ok()) return Failed(names, applied.status());
    TrainScratch scratch;
    scratch.outcomes = std::move(applied->outcomes);
    scratch.class_names = std::move(applied->class_names);
    scratch.outcomes.resize(shape.examples);
    shape.position = applied->position;
    const TrainScratch* results[] = {&scratch};
    v1::TrainResponse response;
    Respond(shape, {&model, 1}, results, response);
    grpc::ByteBuffer bytes;
    EncodeMessage(response, bytes);
    return bytes;
  }

  // Fills `response` with what the request's examples did on each of
  // `models` (`results[k]` on models[k]).
  void Respond(const Shape& shape,
               absl::Span<const std::shared_ptr<Model>> models,
               absl::Span<const TrainScratch* const> results,
               v1::TrainResponse& response) {
    MutexLock lock(respond_mu_);
    response.Clear();
    if (shape.position != 0) response.set_position(shape.position);
    const size_t n = shape.examples;
    if (fan_out_ && !shape.summarize) {
      for (size_t i = 0; i < n; ++i) response.add_fan_out_results();
    }
    for (size_t k = 0; k < models.size(); ++k) {
      const TrainScratch& scratch = *results[k];
      v1::TrainSummary* summary = nullptr;
      if (shape.summarize) {
        summary = fan_out_ ? response.add_model_summaries()
                           : response.mutable_summary();
      }
      PassCounters counts;
      for (size_t i = 0; i < n; ++i) {
        const ExampleOutcome& outcome = scratch.outcomes[i];
        passes_[k].Count(outcome);
        if (!outcome.error.ok()) parts_.metrics->RecordRefusal(outcome.error);
        if (summary == nullptr) {
          ToProto(outcome, scratch.class_names,
                  fan_out_ ? response.mutable_fan_out_results(i)->add_models()
                           : response.add_results());
          continue;
        }
        counts.Count(outcome);
        if (!outcome.error.ok()) {
          v1::ExampleError* error = summary->add_errors();
          error->set_index(i);
          ToRpcStatus(outcome.error, error->mutable_error());
        }
      }
      if (summary != nullptr) ToProto(counts, summary);
    }
    if (shape.end_of_pass) EndPass(models, response);
  }

  // Binds the stream to the models its first request names; a later
  // request may repeat them but not name others.
  absl::Status Bind() {
    const auto& names = request_->models();
    if (!models_.empty()) {
      const bool same =
          fan_out_ ? request_->model().empty() &&
                         (names.empty() ||
                          std::equal(names.begin(), names.end(),
                                     models_.begin(), models_.end(),
                                     [this](const std::string& name,
                                            const std::shared_ptr<Model>& m) {
                                       return !name.empty() &&
                                              NamesModel(*registry_, name, *m);
                                     }))
                   : names.empty();
      if (!same) {
        return absl::InvalidArgumentError(absl::StrCat(
            "this stream trains ", Names(),
            "; a later TrainRequest names other models. Open one stream per "
            "set of models"));
      }
      std::shared_ptr<Model>& model = models_.front();
      return fan_out_ ? absl::OkStatus()
                      : BindStreamModel(*registry_, request_->model(),
                                        "TrainRequest", call_.principal(),
                                        Permission::kTrain, model);
    }
    if (names.empty()) {
      models_.emplace_back();
      absl::Status s = BindStreamModel(*registry_, request_->model(),
                                       "TrainRequest", call_.principal(),
                                       Permission::kTrain, models_.front());
      if (!s.ok()) {
        models_.clear();
        return s;
      }
    } else {
      if (absl::Status s = BindFanOut(); !s.ok()) {
        models_.clear();
        return s;
      }
      fan_out_ = true;
    }
    const size_t m = models_.size();
    scratch_.resize(m);
    {
      MutexLock lock(respond_mu_);
      passes_.resize(m);
    }
    peers_.resize(m);
    peer_outcomes_.resize(m);
    prepared_by_.resize(m);
    for (size_t k = 0; k < m; ++k) {
      prepared_by_[k] = k;
      for (size_t j = 0; j < k; ++j) {
        if (models_[j]->PreparesLike(*models_[k])) {
          prepared_by_[k] = j;
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  // Looks up the models of a fan-out stream's first request.
  absl::Status BindFanOut() {
    const auto& names = request_->models();
    if (!request_->model().empty()) {
      return absl::InvalidArgumentError(
          "a TrainRequest names its model in `model` or its models in "
          "`models`, not both");
    }
    if (names.size() < 2 || names.size() > static_cast<int>(kMaxFanOut)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a fan-out stream trains 2 to ", kMaxFanOut, " models; models names ",
          names.size(), ". Name one model in `model` instead"));
    }
    absl::flat_hash_set<absl::string_view> seen;
    for (const std::string& name : names) {
      if (!seen.insert(name).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "models names ", Quoted(name), " twice; name each model once"));
      }
      std::shared_ptr<Model> model;
      absl::Status s =
          BindStreamModel(*registry_, name, "TrainRequest", call_.principal(),
                          Permission::kTrain, model);
      if (!s.ok()) return s;
      if (std::find(models_.begin(), models_.end(), model) != models_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "models names model ", Quoted(model->name()),
            " twice (an alias is its model); name each model once"));
      }
      models_.push_back(std::move(model));
    }
    // Paired mistakes against a peer are counted in the records of the
    // models after it: of one server's log, or of the replicated streams.
    for (const std::shared_ptr<Model>& model : models_) {
      const std::shared_ptr<Model>& first = models_.front();
      if (IsReplicated(model->spec()) != IsReplicated(first->spec())) {
        const bool replicated = IsReplicated(model->spec());
        return absl::FailedPreconditionError(absl::StrCat(
            "a fan-out stream trains replicated models or models of this "
            "server, not both: model ",
            Quoted(replicated ? model->name() : first->name()),
            " is replicated and model ",
            Quoted(replicated ? first->name() : model->name()), " is not"));
      }
    }
    return absl::OkStatus();
  }

  // The stream's models, for messages: 'a' or ['a', 'b'].
  std::string Names() const {
    if (models_.size() == 1) return Quoted(models_.front()->name());
    std::string names = "[";
    for (const std::shared_ptr<Model>& model : models_) {
      absl::StrAppend(&names, names.size() > 1 ? ", " : "",
                      Quoted(model->name()));
    }
    return names + "]";
  }

  // INVALID_ARGUMENT unless the request's source and sequence are usable.
  absl::Status CheckSource() const {
    if (!request_->source().empty() && request_->source() != source_) {
      return absl::InvalidArgumentError(
          absl::StrCat("this stream's source is ", Quoted(source_),
                       "; a TrainRequest names ", Quoted(request_->source()),
                       ". Open one stream per source"));
    }
    if (source_.empty()) {
      if (request_->sequence() != 0) {
        return absl::InvalidArgumentError(
            "sequence is set but source is not; name the source in the "
            "stream's first request");
      }
      return absl::OkStatus();
    }
    if (source_.size() > kMaxSourceBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("source is ", source_.size(), " bytes; the most is ",
                       kMaxSourceBytes));
    }
    const uint64_t n = request_->examples_size();
    if (n > 0 && (request_->sequence() == 0 ||
                  request_->sequence() > UINT64_MAX - (n - 1))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence is ", request_->sequence(),
          "; with a source, examples are numbered from 1 (and below 2^64)"));
    }
    return absl::OkStatus();
  }

  // RESOURCE_EXHAUSTED, before anything is learned, when the response could
  // exceed the message limit.
  absl::Status CheckResponseSize() const {
    size_t bound = 0;
    for (size_t k = 0; k < models_.size(); ++k) {
      bound +=
          ResponseSizeBound(*models_[k], *request_, scratch_[prepared_by_[k]]);
    }
    if (fan_out_ && request_->results() != v1::TRAIN_RESULTS_SUMMARY) {
      bound += kFanOutResultBytes * request_->examples_size();
    }
    if (bound <= parts_.max_message_bytes) return absl::OkStatus();
    return LimitExceeded(
        absl::StrCat("the response to this TrainRequest of ",
                     request_->examples_size(), " examples could take ", bound,
                     " bytes (send fewer examples per request, or ask for "
                     "TRAIN_RESULTS_SUMMARY)"),
        parts_.max_message_bytes, "max_message_bytes");
  }

  // Sums up the pass of each model into `response` and starts the next.
  void EndPass(absl::Span<const std::shared_ptr<Model>> models,
               v1::TrainResponse& response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(respond_mu_) {
    ++passes_done_;
    for (size_t k = 0; k < models.size(); ++k) {
      ToProto(passes_done_, passes_[k], models[k]->Stats(),
              fan_out_ ? response.add_model_pass_summaries()
                       : response.mutable_pass_summary());
      passes_[k] = PassCounters();
    }
  }

  const ServiceParts parts_;
  ModelRegistry* const registry_;
  const StreamCall call_;
  // The models the stream trains, in order; one unless it fans out.
  std::vector<std::shared_ptr<Model>> models_;
  bool fan_out_ = false;
  std::string source_;
  std::string request_raw_;  // the request as received
  RequestArena arena_;
  v1::TrainRequest* request_ = nullptr;  // the request being handled, in arena_
  v1::TrainResponse response_;
  // Per model, in the order of models_:
  std::vector<TrainScratch> scratch_;
  std::vector<size_t> prepared_by_;  // whose scratch holds its examples
  // Responses are made on the replica's thread for a replicated model.
  Mutex respond_mu_;
  // This stream's current pass.
  std::vector<PassCounters> passes_ ABSL_GUARDED_BY(respond_mu_);
  // What the model did with each example, for the models after it.
  std::vector<std::vector<uint8_t>> peer_outcomes_;
  std::vector<PeerOutcomes> peers_;
  uint64_t passes_done_ ABSL_GUARDED_BY(respond_mu_) = 0;
  // A tagged stream on a replicated model: where its last request leaves
  // the source (0 before the first).
  uint64_t follows_ = 0;
  std::atomic<bool> failed_{false};  // a replicated request failed
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartTrainStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context) {
  return new TrainReactor(parts, context);
}

}  // namespace halfspace
