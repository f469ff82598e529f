// The FeedbackStream RPC: delayed labels over one bidirectional stream, one
// response per request, in order, each once what it learned is durable
// (see pipelined_stream.h and feedback.h).
//
// Each request names its model, or leaves it empty for the model of the
// previous request. A request that cannot be answered (no model named yet,
// an unknown model, a denied permission, a limit) gets a response with only
// `error` set, and the stream goes on; a message that does not decode as a
// FeedbackStreamRequest ends the stream with INVALID_ARGUMENT.

#ifndef HALFSPACE_SERVER_FEEDBACK_STREAM_H_
#define HALFSPACE_SERVER_FEEDBACK_STREAM_H_

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "server/service_parts.h"

namespace halfspace {

// Starts serving one FeedbackStream, or refuses it as StartTrainStream
// does; the reactor deletes itself when done.
// REQUIRES: the parts outlive the stream.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
StartFeedbackStream(const ServiceParts& parts,
                    grpc::CallbackServerContext* context);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_FEEDBACK_STREAM_H_
