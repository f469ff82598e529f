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
        context_(context),
        request_id_(RequestId(*context)),
        stop_(StopOf(context)),
        admission_(parts.gate, ClientOf(*context)) {
    status_ = admission_.admitted()
                  ? AdmitCaller(parts, *context, principal_, caller_)
                  : admission_.status();
  }

  // OK if the stream may go on; else why not (UNAVAILABLE,
  // RESOURCE_EXHAUSTED, UNAUTHENTICATED).
  const absl::Status& status() const { return status_; }

  // Takes `calls` calls and `examples` training examples of one request
  // from the caller's rate limits, or RESOURCE_EXHAUSTED.
  absl::Status Charge(double calls, double examples) const {
    return halfspace::Charge(parts_, caller_, calls, examples);
  }
  const Principal& principal() const { return principal_; }
  const StopCheck& stop() const { return stop_; }
  const std::string& request_id() const { return request_id_; }

  // Counts and logs the stream's end with `status`; returns what to Finish
  // it with.
  grpc::Status End(const absl::Status& status) const {
    AddPushback(status, *context_);
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
  grpc::CallbackServerContext* const context_;
  const absl::Time start_ = absl::Now();
  const std::string request_id_;
  const StopCheck stop_;
  const Admission admission_;
  Principal principal_;
  Caller caller_;
  absl::Status status_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_STREAM_CALL_H_
