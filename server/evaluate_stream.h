// The Evaluate RPC: a client stream of labeled examples, scored without
// learning, answered with one summary.
//
// Reactor rules obeyed here: one read in flight at a time; each reaction
// scores one request's examples under the model's reader lock and never
// waits on the client; Finish exactly once, from the read that fails (end of
// stream or cancellation) or on a protocol error; OnDone leaves the CallGate
// and frees the reactor.

#ifndef HALFSPACE_SERVER_EVALUATE_STREAM_H_
#define HALFSPACE_SERVER_EVALUATE_STREAM_H_

#include "core/registry/model_registry.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/service_parts.h"

namespace halfspace {

// Starts serving one Evaluate stream, whose encoded EvaluateResponse goes to
// `response`, or refuses it with UNAVAILABLE when the gate is closed
// (RESOURCE_EXHAUSTED past the stream limits, UNAUTHENTICATED without a
// token the parts' authenticator knows); the
// reactor deletes itself when done. A message that does not decode as an
// EvaluateRequest ends the stream with INVALID_ARGUMENT (see raw_message.h).
// REQUIRES: the parts outlive the stream.
grpc::ServerReadReactor<grpc::ByteBuffer>* StartEvaluateStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context,
    grpc::ByteBuffer* response);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_EVALUATE_STREAM_H_
