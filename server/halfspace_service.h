// halfspace.v1.HalfspaceService: thin adapters that validate a request,
// delegate to the ModelRegistry and its Models, and fill the response (with
// convert.h). All logic lives in core/; all status conversion in status.h.
//
// Every method runs on the callback API. A unary handler does its work
// before it returns; those that change stored state (CreateModel,
// DeleteModel, SetWeights) wait for the store's fsync, which never holds a
// lock that training or prediction needs. Every call passes the CallGate, so
// a draining server turns new calls away with UNAVAILABLE.

#ifndef HALFSPACE_SERVER_HALFSPACE_SERVICE_H_
#define HALFSPACE_SERVER_HALFSPACE_SERVICE_H_

#include "core/model_registry.h"
#include "server/call_gate.h"
#include "halfspace/v1/halfspace.grpc.pb.h"

namespace halfspace {

// Train and Evaluate take raw bytes, so that they can tell a message that
// does not decode from the end of the stream (see raw_message.h).
// (The generated CallbackService, with those two methods raw.)
using HalfspaceServiceBase = v1::HalfspaceService::WithCallbackMethod_CreateModel<
    v1::HalfspaceService::WithCallbackMethod_GetModel<
        v1::HalfspaceService::WithCallbackMethod_ListModels<
            v1::HalfspaceService::WithCallbackMethod_DeleteModel<
                v1::HalfspaceService::WithRawCallbackMethod_Train<
                    v1::HalfspaceService::WithCallbackMethod_Predict<
                        v1::HalfspaceService::WithRawCallbackMethod_Evaluate<
                            v1::HalfspaceService::WithCallbackMethod_GetWeights<
                                v1::HalfspaceService::WithCallbackMethod_SetWeights<
                                    v1::HalfspaceService::Service>>>>>>>>>;

class HalfspaceService final : public HalfspaceServiceBase {
 public:
  // REQUIRES: `registry` and `gate` outlive the service.
  HalfspaceService(ModelRegistry* registry, CallGate* gate)
      : registry_(registry), gate_(gate) {}

  grpc::ServerUnaryReactor* CreateModel(
      grpc::CallbackServerContext* context,
      const v1::CreateModelRequest* request,
      v1::CreateModelResponse* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::GetModelResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(
      grpc::CallbackServerContext* context,
      const v1::ListModelsRequest* request,
      v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteModel(
      grpc::CallbackServerContext* context,
      const v1::DeleteModelRequest* request,
      v1::DeleteModelResponse* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Train(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* Evaluate(
      grpc::CallbackServerContext* context,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetWeights(
      grpc::CallbackServerContext* context,
      const v1::GetWeightsRequest* request,
      v1::GetWeightsResponse* response) override;
  grpc::ServerUnaryReactor* SetWeights(
      grpc::CallbackServerContext* context,
      const v1::SetWeightsRequest* request,
      v1::SetWeightsResponse* response) override;

 private:
  // Runs `handler` as one admitted call and finishes it with its status.
  template <typename Handler>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context,
                                  Handler handler);

  absl::Status DoCreateModel(const v1::CreateModelRequest& request,
                             v1::CreateModelResponse& response);
  absl::Status DoGetModel(const v1::GetModelRequest& request,
                          v1::GetModelResponse& response);
  absl::Status DoListModels(const v1::ListModelsRequest& request,
                            v1::ListModelsResponse& response);
  absl::Status DoDeleteModel(const v1::DeleteModelRequest& request);
  absl::Status DoPredict(const v1::PredictRequest& request,
                         v1::PredictResponse& response);
  absl::Status DoGetWeights(const v1::GetWeightsRequest& request,
                            v1::GetWeightsResponse& response);
  absl::Status DoSetWeights(const v1::SetWeightsRequest& request,
                            v1::SetWeightsResponse& response);

  ModelRegistry* const registry_;
  CallGate* const gate_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_HALFSPACE_SERVICE_H_
