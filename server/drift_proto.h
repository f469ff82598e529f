// A drift detector's settings and findings, and its reaction's, to and
// from halfspace.v1's DriftDetection and DriftState (see
// core/monitors/drift_detector.h and core/model/drift_reaction.h); and a
// model's events to ModelEvent (core/monitors/event_feed.h).

#ifndef HALFSPACE_SERVER_DRIFT_PROTO_H_
#define HALFSPACE_SERVER_DRIFT_PROTO_H_

#include "absl/status/statusor.h"
#include "core/model/model_state.h"
#include "core/monitors/drift_detector.h"
#include "core/monitors/event_feed.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The detector the message sets, every setting it leaves unset at its
// default. INVALID_ARGUMENT when no method is set, or the input is one
// this server does not know. The values' ranges are left to core.
absl::StatusOr<DriftOptions> FromProto(const v1::DriftDetection& drift);

// Every setting of the method, with the value in effect.
// REQUIRES: a method is set.
void ToProto(const DriftOptions& options, v1::DriftDetection* out);

v1::DriftState::Signal ToProto(DriftSignal signal);

// What a drift reaction did at an example, and its state.
v1::DriftState::Reaction::Event ToProto(ReactionEvent event);
void ToProto(const ReactionStats& reaction, v1::DriftState::Reaction* out);

// What a drift detector found, and its reaction's state.
void ToProto(const ModelDrift& drift, v1::DriftState* out);

// One of a model's events (core/monitors/event_feed.h).
void ToProto(const ModelEvent& event, v1::ModelEvent* out);

// Microseconds since the Unix epoch as a Timestamp.
void ToTimestamp(int64_t micros, google::protobuf::Timestamp* out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_DRIFT_PROTO_H_
