#include "server/evaluate_stream.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/model/limits.h"
#include "core/monitors/evaluation.h"
#include "server/convert.h"
#include "server/raw_message.h"
#include "server/replication.h"
#include "server/status.h"
#include "server/stream_call.h"
#include "server/stream_model.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

class EvaluateReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  EvaluateReactor(const ServiceParts& parts,
                  grpc::CallbackServerContext* context,
                  grpc::ByteBuffer* response)
      : registry_(parts.registry),
        replicas_(parts.replicas),
        max_message_bytes_(parts.max_message_bytes),
        response_(response),
        call_("Evaluate", parts, context) {
    if (call_.status().ok()) {
      StartRead(&request_bytes_);
    } else {
      Finish(call_.End(call_.status()));
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client is done sending, or the call was cancelled
      absl::Status s = Summarize();
      if (s.ok()) EncodeMessage(summary_, *response_);
      End(s);
      return;
    }
    absl::Status s = DecodeMessage(request_bytes_, request_);
    if (s.ok()) s = Score();
    if (!s.ok()) {
      End(s);
      return;
    }
    StartRead(&request_bytes_);
  }

  void OnDone() override { delete this; }

 private:
  // Finishes the stream with `status`, and counts it.
  void End(const absl::Status& status) { Finish(call_.End(status)); }

  // Binds the model on the first request, then scores the request's examples.
  absl::Status Score() {
    const bool first = model_ == nullptr;
    absl::Status bound =
        BindStreamModel(*registry_, request_.model(), "EvaluateRequest",
                        call_.principal(), Permission::kPredict, model_);
    // A replicated model this server has not caught up with: retried.
    if (!bound.ok()) {
      return NotHeldYet(replicas_, request_.model(), std::move(bound));
    }
    if (first) {
      if (request_.has_threshold()) {
        if (absl::Status s = model_->CheckThreshold(request_.threshold());
            !s.ok()) {
          return s;
        }
        threshold_ = request_.threshold();
      }
      confusion_ = !request_.omit_confusion();
    }
    const int n = request_.examples_size();
    if (absl::Status s = CheckExamplesPerRequest(
            n, registry_->budget().limits(), "EvaluateRequest");
        !s.ok()) {
      return s;
    }
    examples_.resize(n);
    if (static_cast<int>(named_.size()) < n) named_.resize(n);
    for (int i = 0; i < n; ++i) {
      examples_[i] = FromProto(request_.examples(i), named_[i]);
    }
    if (absl::Status s =
            model_->Evaluate(examples_, threshold_, evaluation_, call_.stop());
        !s.ok()) {
      return s;
    }
    return CheckResponseSize();
  }

  // RESOURCE_EXHAUSTED once the response could pass the message limit: a
  // request adds at most its examples' classes, so memory stays bounded.
  absl::Status CheckResponseSize() const {
    const size_t bound = EvaluateResponseBound(evaluation_, confusion_);
    if (bound <= max_message_bytes_) return absl::OkStatus();
    return LimitExceeded(
        absl::StrCat("the EvaluateResponse of ", evaluation_.classes().size(),
                     " classes could take ", bound, " bytes",
                     confusion_ ? " (set omit_confusion to leave the "
                                  "confusion matrix out)"
                                : ""),
        max_message_bytes_, "max_message_bytes");
  }

  // Fills the response from what was counted.
  absl::Status Summarize() {
    if (model_ == nullptr) {
      return absl::InvalidArgumentError(
          "the stream ended before a request named the model");
    }
    ToProto(evaluation_, confusion_, &summary_);
    return absl::OkStatus();
  }

  ModelRegistry* const registry_;
  const ReplicaSet* const replicas_;  // null without NATS
  const size_t max_message_bytes_;
  grpc::ByteBuffer* const response_;
  const StreamCall call_;
  grpc::ByteBuffer request_bytes_;
  v1::EvaluateResponse summary_;
  std::shared_ptr<Model> model_;
  std::optional<double> threshold_;
  bool confusion_ = true;
  v1::EvaluateRequest request_;
  std::vector<Example> examples_;
  std::vector<NamedParts> named_;  // one per example
  Evaluation evaluation_;
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* StartEvaluateStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context,
    grpc::ByteBuffer* response) {
  return new EvaluateReactor(parts, context, response);
}

}  // namespace halfspace
