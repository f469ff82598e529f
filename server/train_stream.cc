#include "server/train_stream.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/quoted.h"
#include "core/storage/log_record.h"
#include "server/convert.h"
#include "server/pipelined_stream.h"
#include "server/raw_message.h"
#include "server/request_arena.h"
#include "server/status.h"
#include "server/stream_call.h"
#include "server/stream_model.h"
#include "server/train_batch.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

class TrainReactor final : public PipelinedStream {
 public:
  TrainReactor(const ServiceParts& parts, grpc::CallbackServerContext* context)
      : PipelinedStream(parts.log),
        parts_(parts),
        registry_(parts.registry),
        call_("Train", parts, context) {
    Start(call_.status());
  }

 private:
  absl::Status Handle(grpc::ByteBuffer& request_bytes,
                      grpc::ByteBuffer& response_bytes,
                      uint64_t& lsn) override {
    // Each request is decoded into the arena, emptied first: its examples
    // cost no allocation of their own.
    request_ = google::protobuf::Arena::CreateMessage<v1::TrainRequest>(
        &arena_.Next());
    absl::Status s = DecodeMessage(request_bytes, request_raw_, *request_);
    if (s.ok()) s = Learn(lsn);
    if (!s.ok()) {
      if (model_ != nullptr) {
        spdlog::info("rid={} train stream on '{}' ended: {}",
                     call_.request_id(), model_->name(), s.ToString());
      }
      return s;
    }
    EncodeMessage(response_, response_bytes);
    return absl::OkStatus();
  }

  grpc::Status End(const absl::Status& status) override {
    return call_.End(status);
  }

  // Binds the stream to its model and source on the first request, then
  // learns from the request's examples, fills response_ and sets `lsn` to
  // the batch's log record.
  absl::Status Learn(uint64_t& lsn) {
    const bool first = model_ == nullptr;
    absl::Status bound =
        BindStreamModel(*registry_, request_->model(), "TrainRequest",
                        call_.principal(), Permission::kTrain, model_);
    if (!bound.ok()) return bound;
    if (first) {
      spdlog::debug("rid={} train stream opened on '{}'", call_.request_id(),
                    model_->name());
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
    if (absl::Status s =
            PrepareRequest(*model_, *request_, scratch_, call_.stop());
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckResponseSize(); !s.ok()) return s;

    Batch batch;
    batch.source = source_;
    batch.first_sequence = source_.empty() ? 0 : request_->sequence();
    if (registry_->journal() != nullptr) {
      record_ = TrainRecord(request_raw_, batch.source, batch.first_sequence);
      batch.log = {registry_->journal(), record_, 0};
      batch.record_refusals = [this](Batch& b) {
        record_ =
            TrainRecord(request_raw_, b.source, b.first_sequence, b.refused);
        b.log.record = record_;
      };
    }
    absl::Status learned = LearnPrepared(*model_, *request_, batch, scratch_);
    if (!learned.ok()) return learned;
    lsn = batch.log.lsn;

    response_.Clear();
    const bool summarize = request_->results() == v1::TRAIN_RESULTS_SUMMARY;
    PassCounters counts;
    for (size_t i = 0; i < scratch_.outcomes.size(); ++i) {
      const ExampleOutcome& outcome = scratch_.outcomes[i];
      pass_.Count(outcome);
      if (summarize) counts.Count(outcome);
      if (!outcome.error.ok()) parts_.metrics->RecordRefusal(outcome.error);
      if (!summarize) {
        ToProto(outcome, scratch_.class_names, response_.add_results());
      } else if (!outcome.error.ok()) {
        v1::ExampleError* error = response_.mutable_summary()->add_errors();
        error->set_index(i);
        ToRpcStatus(outcome.error, error->mutable_error());
      }
    }
    if (summarize) ToProto(counts, response_.mutable_summary());
    if (request_->end_of_pass()) EndPass();
    return absl::OkStatus();
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
    const size_t bound = ResponseSizeBound(*model_, *request_, scratch_);
    if (bound <= parts_.max_message_bytes) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrCat("the response to this TrainRequest of ",
                     request_->examples_size(), " examples could take ", bound,
                     " bytes, over the ", parts_.max_message_bytes,
                     "-byte message limit; send fewer examples per request"));
  }

  // Sums up the pass into response_ and starts the next one.
  void EndPass() {
    ToProto(++passes_, pass_, model_->Stats(),
            response_.mutable_pass_summary());
    pass_ = PassCounters();
  }

  const ServiceParts parts_;
  ModelRegistry* const registry_;
  const StreamCall call_;
  std::shared_ptr<Model> model_;
  std::string source_;
  std::string request_raw_;  // the request as received
  std::string record_;       // its log record
  RequestArena arena_;
  v1::TrainRequest* request_ = nullptr;  // the request being handled, in arena_
  v1::TrainResponse response_;
  TrainScratch scratch_;

  // This stream's current pass.
  PassCounters pass_;
  uint64_t passes_ = 0;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartTrainStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context) {
  return new TrainReactor(parts, context);
}

}  // namespace halfspace
