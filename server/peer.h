// Who is calling: the client address the stream limits count, the
// principal its token makes it; and whether the caller still waits.

#ifndef HALFSPACE_SERVER_PEER_H_
#define HALFSPACE_SERVER_PEER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/model.h"
#include "grpcpp/server_context.h"
#include "server/auth.h"

namespace halfspace {

// The client a call comes from: its address without the port
// ("ipv4:10.0.0.7", "ipv6:[::1]", "unix:/run/halfspace.sock").
inline std::string ClientOf(const grpc::CallbackServerContext& context) {
  std::string peer = context.peer();
  if (peer.rfind("ipv4:", 0) == 0 || peer.rfind("ipv6:", 0) == 0) {
    const size_t colon = peer.rfind(':');
    if (colon > 4) peer.resize(colon);
  }
  return peer;
}

// True once the call was cancelled or its deadline passed.
// REQUIRES: `context` outlives the check.
inline StopCheck StopOf(grpc::CallbackServerContext* context) {
  return [context] { return context->IsCancelled(); };
}

// The principal of the call, from its `authorization` metadata.
inline absl::StatusOr<Principal> PrincipalOf(
    const Authenticator& auth, const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return auth.Authenticate(nullptr);
  const std::string value(it->second.data(), it->second.size());
  return auth.Authenticate(&value);
}

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PEER_H_
