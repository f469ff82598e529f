#include "server/halfspace_service.h"

#include <vector>

#include "server/convert.h"
#include "server/evaluate_stream.h"
#include "server/status.h"
#include "server/train_stream.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

// A unary call admitted by the gate; it leaves the gate once the response
// is on its way and the call is done.
class AdmittedCall final : public grpc::ServerUnaryReactor {
 public:
  explicit AdmittedCall(CallGate* gate) : gate_(gate) {}
  void OnDone() override {
    gate_->Leave();
    delete this;
  }

 private:
  CallGate* const gate_;
};

}  // namespace

template <typename Handler>
grpc::ServerUnaryReactor* HalfspaceService::Serve(
    grpc::CallbackServerContext* context, Handler handler) {
  if (!gate_->TryEnter()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(ShuttingDownError()));
    return reactor;
  }
  grpc::ServerUnaryReactor* reactor = new AdmittedCall(gate_);
  reactor->Finish(ToGrpcStatus(handler()));
  return reactor;
}

grpc::ServerUnaryReactor* HalfspaceService::CreateModel(
    grpc::CallbackServerContext* context, const v1::CreateModelRequest* request,
    v1::CreateModelResponse* response) {
  return Serve(context, [&] { return DoCreateModel(*request, *response); });
}

grpc::ServerUnaryReactor* HalfspaceService::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::GetModelResponse* response) {
  return Serve(context, [&] { return DoGetModel(*request, *response); });
}

grpc::ServerUnaryReactor* HalfspaceService::ListModels(
    grpc::CallbackServerContext* context, const v1::ListModelsRequest*,
    v1::ListModelsResponse* response) {
  return Serve(context, [&] { return DoListModels(*response); });
}

grpc::ServerUnaryReactor* HalfspaceService::DeleteModel(
    grpc::CallbackServerContext* context, const v1::DeleteModelRequest* request,
    v1::DeleteModelResponse*) {
  return Serve(context, [&] { return DoDeleteModel(*request); });
}

grpc::ServerBidiReactor<v1::TrainRequest, v1::TrainResponse>*
HalfspaceService::Train(grpc::CallbackServerContext*) {
  return StartTrainStream(registry_, gate_);
}

grpc::ServerUnaryReactor* HalfspaceService::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  return Serve(context, [&] { return DoPredict(*request, *response); });
}

grpc::ServerReadReactor<v1::EvaluateRequest>* HalfspaceService::Evaluate(
    grpc::CallbackServerContext*, v1::EvaluateResponse* response) {
  return StartEvaluateStream(registry_, gate_, response);
}

grpc::ServerUnaryReactor* HalfspaceService::GetWeights(
    grpc::CallbackServerContext* context, const v1::GetWeightsRequest* request,
    v1::GetWeightsResponse* response) {
  return Serve(context, [&] { return DoGetWeights(*request, *response); });
}

grpc::ServerUnaryReactor* HalfspaceService::SetWeights(
    grpc::CallbackServerContext* context, const v1::SetWeightsRequest* request,
    v1::SetWeightsResponse* response) {
  return Serve(context, [&] { return DoSetWeights(*request, *response); });
}

absl::Status HalfspaceService::DoCreateModel(
    const v1::CreateModelRequest& request, v1::CreateModelResponse& response) {
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(request);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Create(
      request.name(), *spec,
      {request.classes().begin(), request.classes().end()});
  if (!model.ok()) return model.status();
  spdlog::info("created model '{}' (dimension {})", request.name(),
               spec->dimension);
  ToProto(**model, response.mutable_model());
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoGetModel(const v1::GetModelRequest& request,
                                          v1::GetModelResponse& response) {
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(request.name());
  if (!model.ok()) return model.status();
  ToProto(**model, response.mutable_model());
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoListModels(v1::ListModelsResponse& response) {
  for (const std::shared_ptr<Model>& model : registry_->List()) {
    ToProto(*model, response.add_models());
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoDeleteModel(
    const v1::DeleteModelRequest& request) {
  absl::Status status = registry_->Delete(request.name());
  if (status.ok()) spdlog::info("deleted model '{}'", request.name());
  return status;
}

absl::Status HalfspaceService::DoPredict(const v1::PredictRequest& request,
                                         v1::PredictResponse& response) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      registry_->Get(request.model());
  if (!model.ok()) return model.status();
  if (request.instances_size() == 0) {
    return absl::InvalidArgumentError(
        "PredictRequest has no instances; send at least one feature vector");
  }
  const int n = request.instances_size();
  std::vector<FeatureInput> instances(n);
  std::vector<std::vector<NamedFeature>> named(n);
  for (int i = 0; i < n; ++i) {
    instances[i] = FromProto(request.instances(i), named[i]);
  }
  std::vector<Prediction> predictions(instances.size());
  std::vector<std::string> class_names;
  absl::Status status =
      (*model)->Predict(instances, absl::MakeSpan(predictions), &class_names);
  if (!status.ok()) return status;
  for (const Prediction& p : predictions) {
    ToProto(p, class_names, response.add_predictions());
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoGetWeights(const v1::GetWeightsRequest& request,
                                            v1::GetWeightsResponse& response) {
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(request.name());
  if (!model.ok()) return model.status();
  ModelSnapshot snapshot = (*model)->Weights();
  response.mutable_weights()->Add(snapshot.weights.w.begin(),
                                  snapshot.weights.w.end());
  response.set_bias(snapshot.weights.b);
  for (size_t k = 0; k < snapshot.classes.size(); ++k) {
    v1::ClassWeights* row = response.add_classes();
    row->set_label(snapshot.classes[k]);
    const LinearWeights& w = snapshot.class_weights[k];
    row->mutable_weights()->Add(w.w.begin(), w.w.end());
    row->set_bias(w.b);
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoSetWeights(const v1::SetWeightsRequest& request,
                                            v1::SetWeightsResponse& response) {
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(request.name());
  if (!model.ok()) return model.status();
  std::vector<double> w(request.weights().begin(), request.weights().end());
  absl::Status status =
      request.class_label().empty()
          ? (*model)->SetWeights(std::move(w), request.bias())
          : (*model)->SetClassWeights(request.class_label(), std::move(w),
                                      request.bias());
  if (status.ok()) status = registry_->Save(request.name());
  if (!status.ok()) return status;
  ToProto(**model, response.mutable_model());
  return absl::OkStatus();
}

}  // namespace halfspace
