// The WatchModel RPC: a model's events (core/monitors/event_feed.h) as a
// server stream, for pipelines that wait for a drift or a switch rather
// than poll GetModel.
//
// Reactor rules obeyed here: the feed hands events over under its own lock
// (and the model's writer lock), so the reactor only queues them there and
// wakes itself with an alarm; every write, and Finish, is started from a
// reaction or the alarm with no lock held. One write in flight at a time;
// Finish once, with no write or alarm pending; OnDone stops watching,
// leaves the CallGate and frees the reactor.

#ifndef HALFSPACE_SERVER_WATCH_MODEL_H_
#define HALFSPACE_SERVER_WATCH_MODEL_H_

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "server/service_parts.h"

namespace halfspace {

// Starts serving one WatchModel call for `request` (an encoded
// WatchModelRequest), or refuses it: UNAVAILABLE when the gate is closed,
// RESOURCE_EXHAUSTED past the stream limits, UNAUTHENTICATED without a
// known token, INVALID_ARGUMENT for a request that does not decode,
// PERMISSION_DENIED without predict permission on the model, NOT_FOUND for
// an unknown one. The reactor deletes itself when done.
// REQUIRES: the parts outlive the stream.
grpc::ServerWriteReactor<grpc::ByteBuffer>* StartWatchModel(
    const ServiceParts& parts, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_WATCH_MODEL_H_
