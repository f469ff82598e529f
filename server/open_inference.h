// The Open Inference Protocol (KServe's v2, as Triton and KServe speak it)
// over gRPC: inference.GRPCInferenceService, beside halfspace.v1 on the
// same port, so that v2 clients and tools query halfspace models
// unchanged.
//
// Each call is made a halfspace.v1 call (GetModel, Predict) on the
// server's in-process channel with the caller's token, address and
// deadline, so it passes the same gate, tokens, limits and metrics:
//
//   ServerLive       true while the process answers
//   ServerReady      the server's health (SERVING once its models loaded)
//   ModelReady       the model exists and can serve (no unavailable_reason);
//                    an unknown model is not ready
//   ServerMetadata   {"halfspace", its version, no extensions}
//   ModelMetadata    input "input" FP64 [-1, d]; outputs of a binary model
//                    "label" INT32 [-1], "score" FP64 [-1] and, when the
//                    model gives probabilities, "probability" FP64 [-1]; of
//                    a multiclass one "label" BYTES [-1] (the class),
//                    "scores" FP64 [-1, k], "classes" BYTES [k], and
//                    "probabilities" FP64 [-1, k] when it gives them
//   ModelInfer       one input tensor, FP64 or FP32, of shape [N, d] (or
//                    [d]: one instance), in `contents` or raw little-endian
//                    bytes; the outputs asked for (all by default), N
//                    predictions made as Predict makes them
//
// Versions: a halfspace model is its current weights, with no versions to
// choose from: a request that names one is NOT_FOUND.

#ifndef HALFSPACE_SERVER_OPEN_INFERENCE_H_
#define HALFSPACE_SERVER_OPEN_INFERENCE_H_

#include <memory>
#include <string>

#include "core/base/mutex.h"
#include "grpcpp/channel.h"
#include "inference/grpc_predict_v2.grpc.pb.h"

namespace halfspace {

class OpenInferenceService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit OpenInferenceService(std::string server_version)
      : version_(std::move(server_version)) {}

  // The in-process channel its calls go through, once the server runs;
  // until then they are UNAVAILABLE.
  void Connect(std::shared_ptr<grpc::Channel> channel);

  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* context,
      const inference::ServerLiveRequest* request,
      inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* context,
      const inference::ServerReadyRequest* request,
      inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* context,
      const inference::ModelReadyRequest* request,
      inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* context,
      const inference::ServerMetadataRequest* request,
      inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* context,
      const inference::ModelMetadataRequest* request,
      inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const inference::ModelInferRequest* request,
      inference::ModelInferResponse* response) override;

 private:
  std::shared_ptr<grpc::Channel> channel() const;

  const std::string version_;
  mutable Mutex mu_;
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_OPEN_INFERENCE_H_
