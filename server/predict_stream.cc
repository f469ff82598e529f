#include "server/predict_stream.h"

#include <string>

#include "server/feedback.h"
#include "server/metrics.h"
#include "server/pipelined_stream.h"
#include "server/predict.h"
#include "server/raw_message.h"
#include "server/status.h"
#include "server/stream_call.h"

namespace halfspace {
namespace {

class PredictReactor final : public PipelinedStream {
 public:
  PredictReactor(const ServiceParts& parts,
                 grpc::CallbackServerContext* context)
      : PipelinedStream(parts.log),
        parts_(parts),
        call_("PredictStream", parts, context) {
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
    if (absl::Status s = Predict(lsn); !s.ok()) {
      response_.Clear();
      ToRpcStatus(s, response_.mutable_error());
      parts_.metrics->RecordRefusal(s);
    }
    EncodeMessage(response_, response_bytes);
    return absl::OkStatus();
  }

  absl::Status Predict(uint64_t& lsn) {
    if (!request_.model().empty()) model_ = request_.model();
    if (model_.empty()) {
      return absl::InvalidArgumentError(
          "the first PredictRequest of a stream must name the model");
    }
    if (absl::Status s = call_.principal().Check(Permission::kPredict, model_);
        !s.ok()) {
      return s;
    }
    return PredictAndRemember(parts_, call_.principal(), model_, request_,
                              scratch_, call_.stop(),
                              *response_.mutable_predictions(), lsn);
  }

  grpc::Status End(const absl::Status& status) override {
    return call_.End(status);
  }

  const ServiceParts parts_;
  const StreamCall call_;
  std::string model_;  // the model the last request named
  v1::PredictStreamRequest request_;
  v1::PredictStreamResponse response_;
  PredictScratch scratch_;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartPredictStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context) {
  return new PredictReactor(parts, context);
}

}  // namespace halfspace
