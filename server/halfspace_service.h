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

// Every method takes raw bytes and decodes its messages itself (see
// raw_message.h): a request that does not decode is INVALID_ARGUMENT, where
// gRPC's generated handlers would answer UNIMPLEMENTED (unary) or mistake it
// for the end of a stream.
using HalfspaceServiceBase = v1::HalfspaceService::WithRawCallbackMethod_CreateModel<
    v1::HalfspaceService::WithRawCallbackMethod_GetModel<
        v1::HalfspaceService::WithRawCallbackMethod_ListModels<
            v1::HalfspaceService::WithRawCallbackMethod_DeleteModel<
                v1::HalfspaceService::WithRawCallbackMethod_Train<
                    v1::HalfspaceService::WithRawCallbackMethod_Predict<
                        v1::HalfspaceService::WithRawCallbackMethod_Evaluate<
                            v1::HalfspaceService::WithRawCallbackMethod_GetWeights<
                                v1::HalfspaceService::WithRawCallbackMethod_SetWeights<
                                    v1::HalfspaceService::Service>>>>>>>>>;

class HalfspaceService final : public HalfspaceServiceBase {
 public:
  // REQUIRES: `registry` and `gate` outlive the service.
  HalfspaceService(ModelRegistry* registry, CallGate* gate)
      : registry_(registry), gate_(gate) {}

  using Unary = grpc::ServerUnaryReactor*;
  using Context = grpc::CallbackServerContext;
  using Bytes = grpc::ByteBuffer;

  Unary CreateModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary GetModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary ListModels(Context* c, const Bytes* in, Bytes* out) override;
  Unary DeleteModel(Context* c, const Bytes* in, Bytes* out) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* Train(Context* c) override;
  Unary Predict(Context* c, const Bytes* in, Bytes* out) override;
  grpc::ServerReadReactor<Bytes>* Evaluate(Context* c, Bytes* out) override;
  Unary GetWeights(Context* c, const Bytes* in, Bytes* out) override;
  Unary SetWeights(Context* c, const Bytes* in, Bytes* out) override;

 private:
  template <typename Request, typename Response>
  using Handler = absl::Status (HalfspaceService::*)(const Request&,
                                                     Response&);

  // Runs one admitted call: decodes the request, runs `handler`, encodes
  // the response, and finishes the call with the handler's status.
  template <typename Request, typename Response>
  Unary Serve(Context* context, const Bytes* request, Bytes* response,
              Handler<Request, Response> handler);

  absl::Status DoCreateModel(const v1::CreateModelRequest& request,
                             v1::CreateModelResponse& response);
  absl::Status DoGetModel(const v1::GetModelRequest& request,
                          v1::GetModelResponse& response);
  absl::Status DoListModels(const v1::ListModelsRequest& request,
                            v1::ListModelsResponse& response);
  absl::Status DoDeleteModel(const v1::DeleteModelRequest& request,
                             v1::DeleteModelResponse& response);
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
