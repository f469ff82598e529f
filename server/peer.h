// Who is calling: the client address the stream limits count, the
// principal its token makes it, the caller its rate limits count; and
// whether the caller still waits.

#ifndef HALFSPACE_SERVER_PEER_H_
#define HALFSPACE_SERVER_PEER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "grpcpp/server_context.h"
#include "server/auth.h"
#include "server/rate_limits.h"
#include "server/service_parts.h"

namespace halfspace {

// The metadata key that carries an HTTP client's address to the service,
// as "SECRET ADDRESS": the gateway calls over the in-process channel, and
// the secret, made at random when the process starts, proves the call is
// the gateway's (nothing outside the process knows it).
inline constexpr char kHttpClientMetadata[] = "halfspace-http-client";

// This process's secret, 32 hex digits.
const std::string& HttpGatewaySecret();

// Whether `value` (of kHttpClientMetadata) holds the secret; then sets
// `client` to the address after it.
bool ForwardedByGateway(absl::string_view value, std::string* client);

// The client a call comes from: its address without the port
// ("ipv4:10.0.0.7", "ipv6:[::1]", "unix:/run/halfspace.sock"); for a call
// the HTTP gateway makes, the address of its HTTP client.
inline std::string ClientOf(const grpc::CallbackServerContext& context) {
  auto forwarded = context.client_metadata().find(kHttpClientMetadata);
  if (forwarded != context.client_metadata().end()) {
    std::string client;
    if (ForwardedByGateway(absl::string_view(forwarded->second.data(),
                                             forwarded->second.size()),
                           &client)) {
      return client;
    }
  }
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

// Whom a call's rate limits count: a token (by its name), or, without
// one, the client's address.
struct Caller {
  std::string key;   // its buckets' key
  std::string name;  // in metrics: the token's name, or "anonymous"
  std::string who;   // in messages
  CallerLimits limits;
};

inline Caller CallerOf(const Principal& principal, const std::string& address,
                       const CallerLimits& anonymous) {
  if (principal.token() != nullptr) {
    const TokenEntry& t = *principal.token();
    return {absl::StrCat("token ", t.name), t.name,
            absl::StrCat("token '", t.name, "'"), t.limits};
  }
  return {absl::StrCat("address ", address), "anonymous",
          absl::StrCat("client ", address), anonymous};
}

// Takes `calls` calls and `examples` training examples from the caller's
// buckets, or RESOURCE_EXHAUSTED (counted) saying how long to wait.
inline absl::Status Charge(const ServiceParts& parts, const Caller& caller,
                           double calls, double examples) {
  absl::Status s = parts.limiter->Admit(caller.key, caller.limits, calls,
                                        examples, caller.who);
  if (!s.ok()) parts.metrics->RecordRateLimited(caller.name);
  return s;
}

// Who a call from `context` is, as far as its admission goes: refused
// while its address fails to authenticate too often; its token
// (UNAUTHENTICATED, counted against the address); its first call charged.
inline absl::Status AdmitCaller(const ServiceParts& parts,
                                const grpc::CallbackServerContext& context,
                                Principal& principal, Caller& caller) {
  const std::string address = ClientOf(context);
  if (parts.auth->enabled()) {
    if (absl::Status s = parts.limiter->CheckAuthentication(address); !s.ok()) {
      parts.metrics->RecordRateLimited("unauthenticated");
      return s;
    }
  }
  absl::StatusOr<Principal> found = PrincipalOf(*parts.auth, context);
  if (!found.ok()) {
    parts.limiter->CountAuthenticationFailure(address);
    return found.status();
  }
  principal = *std::move(found);
  caller = CallerOf(principal, address, parts.anonymous);
  return Charge(parts, caller, 1, 0);
}

// Tells the client how long to wait (grpc-retry-pushback-ms) when
// `status` is a refusal that asks it to.
inline void AddPushback(const absl::Status& status,
                        grpc::CallbackServerContext& context) {
  const absl::Duration wait = RetryAfter(status);
  if (wait > absl::ZeroDuration()) {
    context.AddTrailingMetadata("grpc-retry-pushback-ms",
                                absl::StrCat(absl::ToInt64Milliseconds(wait)));
  }
}

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PEER_H_
