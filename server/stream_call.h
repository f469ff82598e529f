// What a Train or Evaluate stream knows of its call, as every call does:
// its request id, its pass through the gate (and the stream limits), its
// caller's principal, whether the caller still waits; and the counting and
// logging of its end.

#ifndef HALFSPACE_SERVER_STREAM_CALL_H_
#define HALFSPACE_SERVER_STREAM_CALL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "grpcpp/server_context.h"
#include "server/auth.h"
#include "server/call_gate.h"
#include "server/logging.h"
#include "server/peer.h"
#include "server/service_parts.h"
#include "server/status.h"
#include "spdlog/spdlog.h"

namespace halfspace {

class StreamCall {
 public:
  // Admits and authenticates a call of RPC `method`.
  // REQUIRES: `parts` and `context` outlive the call.
  StreamCall(const char* method, const ServiceParts& parts,
             grpc::CallbackServerContext* context)
      : method_(method),
        parts_(parts),
        request_id_(RequestId(*context)),
        stop_(StopOf(context)),
        admission_(parts.gate, ClientOf(*context)) {
    absl::StatusOr<Principal> principal = PrincipalOf(*parts.auth, *context);
    if (!admission_.admitted()) {
      status_ = admission_.status();
    } else if (!principal.ok()) {
      status_ = principal.status();
    } else {
      principal_ = *std::move(principal);
    }
  }

  // OK if the stream may go on; else why not (UNAVAILABLE,
  // RESOURCE_EXHAUSTED, UNAUTHENTICATED).
  const absl::Status& status() const { return status_; }
  const Principal& principal() const { return principal_; }
  const StopCheck& stop() const { return stop_; }
  const std::string& request_id() const { return request_id_; }

  // Counts and logs the stream's end with `status`; returns what to Finish
  // it with.
  grpc::Status End(const absl::Status& status) const {
    const grpc::Status finished = ToGrpcStatus(status);
    const absl::Duration elapsed = absl::Now() - start_;
    parts_.metrics->RecordRefusal(status);
    parts_.metrics->RecordCall(method_, finished.error_code(), elapsed);
    spdlog::debug("rid={} {} {} in {}", request_id_, method_, status.ToString(),
                  absl::FormatDuration(elapsed));
    return finished;
  }

 private:
  const char* const method_;
  const ServiceParts& parts_;
  const absl::Time start_ = absl::Now();
  const std::string request_id_;
  const StopCheck stop_;
  const Admission admission_;
  Principal principal_;
  absl::Status status_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_STREAM_CALL_H_
