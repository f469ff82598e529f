#include "server/feedback_stream.h"

#include <string>

#include "server/feedback.h"
#include "server/metrics.h"
#include "server/pipelined_stream.h"
#include "server/raw_message.h"
#include "server/status.h"
#include "server/stream_call.h"

namespace halfspace {
namespace {

class FeedbackReactor final : public PipelinedStream {
 public:
  FeedbackReactor(const ServiceParts& parts,
                  grpc::CallbackServerContext* context)
      : PipelinedStream(parts.log),
        parts_(parts),
        call_("FeedbackStream", parts, context) {
    Start(call_.status());
  }

 private:
  absl::Status Handle(grpc::ByteBuffer& request_bytes,
                      grpc::ByteBuffer& response_bytes,
                      uint64_t& lsn) override {
    if (absl::Status s = DecodeMessage(request_bytes, request_); !s.ok()) {
      return s;
    }
    response_.Clear();
    if (absl::Status s = Learn(lsn); !s.ok()) {
      response_.Clear();
      ToRpcStatus(s, response_.mutable_error());
      parts_.metrics->RecordRefusal(s);
    }
    EncodeMessage(response_, response_bytes);
    return absl::OkStatus();
  }

  absl::Status Learn(uint64_t& lsn) {
    if (!request_.model().empty()) model_ = request_.model();
    if (model_.empty()) {
      return absl::InvalidArgumentError(
          "the first FeedbackRequest of a stream must name the model");
    }
    if (absl::Status s = call_.principal().Check(Permission::kTrain, model_);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::shared_ptr<Model>> model = parts_.registry->Get(model_);
    if (!model.ok()) return model.status();
    v1::FeedbackRequest feedback;
    feedback.set_model(model_);
    feedback.mutable_feedback()->Swap(request_.mutable_feedback());
    v1::FeedbackResponse learned;
    absl::Status s =
        LearnFeedback(**model, *parts_.registry, feedback, call_.stop(),
                      parts_.max_message_bytes, *parts_.metrics, learned, lsn);
    response_.mutable_results()->Swap(learned.mutable_results());
    return s;
  }

  grpc::Status End(const absl::Status& status) override {
    return call_.End(status);
  }

  const ServiceParts parts_;
  const StreamCall call_;
  std::string model_;  // the model the last request named
  v1::FeedbackStreamRequest request_;
  v1::FeedbackStreamResponse response_;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
StartFeedbackStream(const ServiceParts& parts,
                    grpc::CallbackServerContext* context) {
  return new FeedbackReactor(parts, context);
}

}  // namespace halfspace
