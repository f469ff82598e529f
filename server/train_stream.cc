#include "server/train_stream.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/status.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

class TrainReactor final
    : public grpc::ServerBidiReactor<v1::TrainRequest, v1::TrainResponse> {
 public:
  TrainReactor(ModelRegistry* registry, CallGate* gate)
      : registry_(registry), gate_(gate), admitted_(gate->TryEnter()) {
    if (admitted_) {
      StartRead(&request_);
    } else {
      Finish(ToGrpcStatus(ShuttingDownError()));
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed, or the call was cancelled
      Finish(grpc::Status::OK);
      return;
    }
    if (absl::Status s = Learn(); !s.ok()) {
      if (model_ != nullptr) {
        spdlog::info("train stream on '{}' ended: {}", model_->name(),
                     s.ToString());
      }
      Finish(ToGrpcStatus(s));
      return;
    }
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override {
    if (admitted_) gate_->Leave();
    delete this;
  }

 private:
  // Binds the stream to its model on the first request, then learns from the
  // request's examples and fills response_.
  absl::Status Learn() {
    const std::string& name = request_.model();
    if (model_ == nullptr) {
      if (name.empty()) {
        return absl::InvalidArgumentError(
            "the first TrainRequest must name the model");
      }
      absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(name);
      if (!model.ok()) return model.status();
      model_ = *std::move(model);
      spdlog::debug("train stream opened on '{}'", name);
    } else if (!name.empty() && name != model_->name()) {
      return absl::InvalidArgumentError(
          absl::StrCat("this stream trains '", model_->name(),
                       "'; a request names '", name,
                       "'. Open one stream per model"));
    }

    const int n = request_.examples_size();
    examples_.resize(n);
    outcomes_.resize(n);
    for (int i = 0; i < n; ++i) {
      const v1::Example& e = request_.examples(i);
      examples_[i] = Example{e.features(), e.label(),
                             e.has_weight() ? e.weight() : 1.0};
    }
    if (absl::Status s = model_->Learn(examples_, absl::MakeSpan(outcomes_)); !s.ok()) return s;

    response_.Clear();
    for (const ExampleOutcome& outcome : outcomes_) {
      ToProto(outcome, response_.add_results());
    }
    return absl::OkStatus();
  }

  ModelRegistry* const registry_;
  CallGate* const gate_;
  const bool admitted_;
  std::shared_ptr<Model> model_;
  v1::TrainRequest request_;
  v1::TrainResponse response_;
  std::vector<Example> examples_;
  std::vector<ExampleOutcome> outcomes_;
};

}  // namespace

grpc::ServerBidiReactor<v1::TrainRequest, v1::TrainResponse>*
StartTrainStream(ModelRegistry* registry, CallGate* gate) {
  return new TrainReactor(registry, gate);
}

}  // namespace halfspace
