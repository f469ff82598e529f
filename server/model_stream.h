// A pipelined stream (pipelined_stream.h) of requests about models, each
// answered by one response in order: a request names its model or leaves
// it empty for the model of the previous request, and one that cannot be
// answered (no model named yet, a denied permission, an unknown model, a
// bad request) gets a response with only its `error` set while the stream
// goes on. A message that does not decode ends the stream with
// INVALID_ARGUMENT. PredictStream and FeedbackStream are such streams.

#ifndef HALFSPACE_SERVER_MODEL_STREAM_H_
#define HALFSPACE_SERVER_MODEL_STREAM_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/pipelined_stream.h"
#include "server/raw_message.h"
#include "server/replication.h"
#include "server/service_parts.h"
#include "server/status.h"
#include "server/stream_call.h"

namespace halfspace {

template <typename Request, typename Response>
class ModelStream : public PipelinedStream {
 protected:
  // A stream of RPC `method` whose requests need `permission` on their
  // model. The subclass calls Start(call().status()) once constructed.
  ModelStream(const char* method, Permission permission,
              const ServiceParts& parts, grpc::CallbackServerContext* context)
      : PipelinedStream(parts.log, parts.gate),
        parts_(parts),
        call_(method, parts, context),
        permission_(permission) {}

  // Answers `request` about `model` (the caller may use it) into
  // `response`, empty on entry, and sets `lsn` to the log record the
  // answer waits for (0: none). An error is answered in-band.
  virtual absl::Status Answer(const std::string& model, Request& request,
                              Response& response, uint64_t& lsn) = 0;

  const ServiceParts& parts() const { return parts_; }
  const StreamCall& call() const { return call_; }

 private:
  absl::Status Handle(grpc::ByteBuffer& request_bytes,
                      grpc::ByteBuffer& response_bytes, Reply& reply) final {
    if (absl::Status s = DecodeMessage(request_bytes, request_); !s.ok()) {
      return s;
    }
    response_.Clear();
    // Each request is a call to the caller's rate limits (its examples
    // too, for feedback), refused in-band.
    absl::Status s = call_.Charge(1, ExamplesIn(request_));
    if (s.ok()) s = Bind();
    if (s.ok()) s = Answer(model_, request_, response_, reply.lsn);
    // A replicated model this server has not caught up with: retried.
    if (!s.ok()) Refuse(NotHeldYet(parts_.replicas, model_, std::move(s)));
    EncodeMessage(response_, response_bytes);
    return absl::OkStatus();
  }

  // The training examples a request brings: feedback's labels.
  static double ExamplesIn(const Request& request) {
    if constexpr (std::is_same_v<Request, v1::FeedbackStreamRequest>) {
      return request.feedback_size();
    } else {
      return 0;
    }
  }

  // Makes the request's model (or the previous one's) the stream's.
  absl::Status Bind() {
    if (!request_.model().empty()) model_ = request_.model();
    if (model_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the first ", Request::descriptor()->name(),
                       " of a stream must name the model"));
    }
    return call_.principal().Check(permission_, model_);
  }

  void Refuse(const absl::Status& status) {
    response_.Clear();
    ToRpcStatus(status, response_.mutable_error());
    parts_.metrics->RecordRefusal(status);
  }

  grpc::Status End(const absl::Status& status) final {
    return call_.End(status);
  }

  const ServiceParts parts_;
  const StreamCall call_;
  const Permission permission_;
  std::string model_;  // the model the last request named
  Request request_;
  Response response_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_MODEL_STREAM_H_
