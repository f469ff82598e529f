// The server's side of replicated models (core/replication/): how a
// replica learns a record's examples and reads a producer's message, and
// the checks that keep a replica's changes on its stream.

#ifndef HALFSPACE_SERVER_REPLICATION_H_
#define HALFSPACE_SERVER_REPLICATION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model/model.h"
#include "core/replication/replica_set.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/metrics.h"

namespace halfspace {

// The replica set's options for this server: `reader` is its name in the
// log; skipped messages and refused records are logged and counted in
// `metrics`.
ReplicaOptions ServerReplicaOptions(std::string reader, Metrics* metrics);

// The spec's replication as `request` asks for it, defaults filled in;
// none for a local model. INVALID_ARGUMENT for a bad stream, subject or
// replica count.
absl::StatusOr<std::optional<Replication>> ReplicationFromRequest(
    const v1::CreateModelRequest& request);

// UNAVAILABLE: replicated `model`'s changes cannot be published, since this
// server no longer follows the streams (it is stopping).
absl::Status NotFollowed(const Model& model);

// `status`, or UNAVAILABLE when it is NOT_FOUND for a replicated model the
// catalog lists but this server does not hold yet (ReplicaSet::NotHeldYet),
// so that the client retries; `replicas` is null without NATS.
absl::Status NotHeldYet(const ReplicaSet* replicas, absl::string_view model,
                        absl::Status status);

// How long a replicated change waits for its replica at most when the call
// sets no deadline.
inline constexpr absl::Duration kReplicaWait = absl::Seconds(30);

// The call's deadline, or kReplicaWait from now if it is later or unset.
absl::Time ReplicaDeadline(absl::Time call_deadline);

// Fills `out` with the replica's place in its stream.
void ToProto(const Model& model, const ReplicaSet& replicas,
             v1::ReplicaState* out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_REPLICATION_H_
