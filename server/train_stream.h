// The Train RPC: one bidirectional stream, one reactor.
//
// Protocol: the first request names the model (and the source, for
// exactly-once training); every request may carry examples; the server
// answers each request with exactly one response that holds one result per
// example (or, if the request asks, a summary of them and its errors), in
// order, once its examples are durable. A request is learned
// whole or not at all: one whose response could exceed the message limit
// is refused (RESOURCE_EXHAUSTED) before learning, as is one of more
// examples than --max_examples_per_request allows; a request cancelled (or
// past its deadline) while its examples are prepared learns nothing. A request
// marked end_of_pass closes a pass: its response also sums up the pass. A bad
// example is reported in-band (ExampleResult.error) and the stream goes on. A
// bad first request, a request naming another model, a message that does not
// decode as a TrainRequest (see raw_message.h), or the model's deletion ends
// the stream with INVALID_ARGUMENT or NOT_FOUND.
//
// Fan-out: a first request naming several models (TrainRequest.models)
// makes every request train each of them in turn, each as a stream of its
// own would (models of one feature space share the examples' preparation),
// and each answer holds one result per model per example. Each model logs
// what the models before it did with the request's examples, so that it
// counts its paired mistakes against them (see paired_mistakes.h) in
// recovery too.
//
// The stream is pipelined (see pipelined_stream.h): it reads and learns the
// next request while earlier responses wait for their examples to be
// durable, so one stream's many small requests share a log sync. Learning
// takes the model's lock for the length of one batch, and buffers are reused
// across requests, so after the first few messages a stream does not
// allocate per example.

#ifndef HALFSPACE_SERVER_TRAIN_STREAM_H_
#define HALFSPACE_SERVER_TRAIN_STREAM_H_

#include <cstddef>

#include "core/registry/model_registry.h"
#include "core/training/journal.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/service_parts.h"

namespace halfspace {

// The longest source id a TrainRequest may give.
inline constexpr size_t kMaxSourceBytes = 128;

// The most models one fan-out stream trains.
inline constexpr size_t kMaxFanOut = 16;

// Starts serving one Train stream, or refuses it with UNAVAILABLE when the
// gate is closed (RESOURCE_EXHAUSTED past the stream limits, UNAUTHENTICATED
// without a token the parts' authenticator knows); the reactor deletes
// itself when done. With a log, each
// response waits until its examples are durable.
// REQUIRES: the parts outlive the stream.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartTrainStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_TRAIN_STREAM_H_
