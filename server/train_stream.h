// The Train RPC: one bidirectional stream, one reactor.
//
// Protocol: the first request names the model (and the source, for
// exactly-once training); every request may carry examples; the server
// answers each request with exactly one response that holds one result per
// example, in order, once its examples are durable. A request is learned
// whole or not at all: one whose response could exceed the message limit
// is refused (RESOURCE_EXHAUSTED) before learning, as is one of more
// examples than --max_examples_per_request allows; a request cancelled (or
// past its deadline) while its examples are prepared learns nothing. A request marked end_of_pass
// closes a pass: its response also sums up the pass. A bad example is
// reported in-band (ExampleResult.error) and the stream goes on. A bad first
// request, a request naming another model, a message that does not decode as
// a TrainRequest (see raw_message.h), or the model's deletion ends the stream
// with INVALID_ARGUMENT or NOT_FOUND.
//
// Reactor rules obeyed here:
// - At most one read and one write in flight, never both: read a request,
//   learn from it, write the response, and only then read the next. So the
//   request and response buffers are never touched by two operations at once
//   and no reaction needs a lock.
// - Reactions never block on I/O or on the client; the only wait is the
//   model's own lock for the length of one batch. A response waiting for
//   its examples to be durable is written from the log's sync thread.
// - Finish is called exactly once: from the first read or write that fails
//   (client half-close, cancellation) or on a protocol error. A cancelled
//   stream's pending operation fails, which leads to that same Finish.
// - OnDone leaves the CallGate and frees the reactor.
// - Buffers are reused across requests, so after the first few messages a
//   stream does not allocate per example.

#ifndef HALFSPACE_SERVER_TRAIN_STREAM_H_
#define HALFSPACE_SERVER_TRAIN_STREAM_H_

#include <cstddef>

#include "core/model_registry.h"
#include "core/storage/write_ahead_log.h"
#include "server/service_parts.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The longest source id a TrainRequest may give.
inline constexpr size_t kMaxSourceBytes = 128;

// Starts serving one Train stream, or refuses it with UNAVAILABLE when the
// gate is closed (RESOURCE_EXHAUSTED past the stream limits, UNAUTHENTICATED
// without a token the parts' authenticator knows); the reactor deletes
// itself when done. With a log, each
// response waits until its examples are durable.
// REQUIRES: the parts outlive the stream.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
StartTrainStream(const ServiceParts& parts,
                 grpc::CallbackServerContext* context);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_TRAIN_STREAM_H_
