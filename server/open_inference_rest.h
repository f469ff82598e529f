// The Open Inference Protocol's HTTP/REST form, to and from its gRPC
// messages (open_inference.h answers them):
//
//   GET  /v2/health/live                      ServerLive   200, or 400
//   GET  /v2/health/ready                     ServerReady  200, or 400
//   GET  /v2/models/{name}[/versions/{v}]/ready  ModelReady 200, or 400
//   GET  /v2                                  ServerMetadata
//   GET  /v2/models/{name}[/versions/{v}]     ModelMetadata
//   POST /v2/models/{name}[/versions/{v}]/infer  ModelInfer
//
// An infer body is {"id", "parameters", "inputs": [{"name", "shape",
// "datatype", "parameters", "data"}], "outputs": [{"name"}]}, its data flat
// or nested in row-major order; the answer {"model_name", "id",
// "outputs": [{"name", "shape", "datatype", "data"}]} with flat data. An
// error is {"error": "message"}, with the HTTP status gRPC's mapping gives
// its code.
//
// Pure functions of their input: the HTTP decoding fuzzer runs them.

#ifndef HALFSPACE_SERVER_OPEN_INFERENCE_REST_H_
#define HALFSPACE_SERVER_OPEN_INFERENCE_REST_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "inference/grpc_predict_v2.pb.h"

namespace halfspace {

// A REST request matched to its RPC, with the request message made.
struct RestCall {
  std::string rpc;  // "ModelInfer", ...
  std::unique_ptr<google::protobuf::Message> request;
  // For the health and readiness calls: the answer's status is 200 or 400
  // by the response's one boolean.
  bool status_by_answer = false;
};

// Whether `path` is the protocol's ("/v2" or below).
bool IsRestPath(absl::string_view path);

// The call `method` and `path` (and the body, for infer) make: NOT_FOUND
// for a path the protocol has not, UNIMPLEMENTED for another method,
// INVALID_ARGUMENT for a body that is not an inference request.
absl::StatusOr<RestCall> DecodeRestRequest(absl::string_view method,
                                           absl::string_view path,
                                           absl::string_view body);

// The answer to a call's response, in the protocol's JSON; for a
// `status_by_answer` call, `ok` is set to its boolean.
std::string EncodeRestResponse(const google::protobuf::Message& response,
                               bool* ok);

// {"error": message}.
std::string RestError(absl::string_view message);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_OPEN_INFERENCE_REST_H_
