// The one place where absl::Status becomes a gRPC status: canonical codes map
// one to one, the message is kept, and payloads (such as the path of a file
// an error concerns) are logged, never sent.

#ifndef HALFSPACE_SERVER_STATUS_H_
#define HALFSPACE_SERVER_STATUS_H_

#include "absl/status/status.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/support/status.h"

namespace halfspace {

// For an RPC's final status.
grpc::Status ToGrpcStatus(const absl::Status& status);

// For an in-band error inside a stream response.
void ToRpcStatus(const absl::Status& status, google::rpc::Status* out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_STATUS_H_
