#include "server/train_stream.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/raw_message.h"
#include "server/status.h"
#include "server/stream_model.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

class TrainReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  TrainReactor(ModelRegistry* registry, CallGate* gate)
      : registry_(registry), admission_(gate) {
    if (admission_.admitted()) {
      StartRead(&request_bytes_);
    } else {
      Finish(ToGrpcStatus(ShuttingDownError()));
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed, or the call was cancelled
      Finish(grpc::Status::OK);
      return;
    }
    absl::Status s = DecodeMessage(request_bytes_, request_);
    if (s.ok()) s = Learn();
    if (!s.ok()) {
      if (model_ != nullptr) {
        spdlog::info("train stream on '{}' ended: {}", model_->name(),
                     s.ToString());
      }
      Finish(ToGrpcStatus(s));
      return;
    }
    EncodeMessage(response_, response_bytes_);
    StartWrite(&response_bytes_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
      return;
    }
    StartRead(&request_bytes_);
  }

  void OnDone() override { delete this; }

 private:
  // Binds the stream to its model on the first request, then learns from the
  // request's examples and fills response_.
  absl::Status Learn() {
    const bool first = model_ == nullptr;
    absl::Status bound = BindStreamModel(*registry_, request_.model(),
                                         "TrainRequest", model_);
    if (!bound.ok()) return bound;
    if (first) spdlog::debug("train stream opened on '{}'", model_->name());

    // Check and featurize every example before the model's lock is taken.
    const int n = request_.examples_size();
    outcomes_.resize(n);
    if (static_cast<int>(prepared_.size()) < n) prepared_.resize(n);
    for (int i = 0; i < n; ++i) {
      model_->Prepare(FromProto(request_.examples(i), named_), prepared_[i]);
    }
    absl::Status learned =
        model_->Learn(absl::MakeConstSpan(prepared_.data(), n),
                      absl::MakeSpan(outcomes_), &class_names_);
    if (!learned.ok()) return learned;

    response_.Clear();
    for (int i = 0; i < n; ++i) {
      ToProto(outcomes_[i], class_names_, response_.add_results());
      pass_.Count(outcomes_[i]);
    }
    if (request_.end_of_pass()) EndPass();
    return absl::OkStatus();
  }

  // Sums up the pass into response_ and starts the next one.
  void EndPass() {
    ToProto(++passes_, pass_, model_->Stats(),
            response_.mutable_pass_summary());
    pass_ = PassCounters();
  }

  ModelRegistry* const registry_;
  const Admission admission_;
  std::shared_ptr<Model> model_;
  grpc::ByteBuffer request_bytes_;
  grpc::ByteBuffer response_bytes_;
  v1::TrainRequest request_;
  v1::TrainResponse response_;
  std::vector<NamedFeature> named_;  // one example's, while preparing it
  std::vector<PreparedExample> prepared_;  // only grows: scratch is reused
  std::vector<ExampleOutcome> outcomes_;
  std::vector<std::string> class_names_;  // the model's classes, cached

  // This stream's current pass.
  PassCounters pass_;
  uint64_t passes_ = 0;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
StartTrainStream(ModelRegistry* registry, CallGate* gate) {
  return new TrainReactor(registry, gate);
}

}  // namespace halfspace
