// What the files that implement JetStreamLog share (jetstream_log.cc,
// jetstream_snapshots.cc): the NATS client's objects it holds, and NATS's
// errors as statuses. Not for other users.

#ifndef HALFSPACE_CORE_REPLICATION_JETSTREAM_HANDLES_H_
#define HALFSPACE_CORE_REPLICATION_JETSTREAM_HANDLES_H_

#include <nats/nats.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/replication/jetstream_log.h"

namespace halfspace {

// The records a log published and JetStream has not answered yet
// (jetstream_log.cc).
struct PublishAcks;

struct JetStreamLog::Handles {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  kvStore* catalog = nullptr;
  kvStore* snapshot_index = nullptr;
  // What the acknowledgements of `js`'s publishes find, under their id.
  std::shared_ptr<PublishAcks> acks;
  uint64_t acks_id = 0;
  ~Handles() {
    kvStore_Destroy(snapshot_index);
    kvStore_Destroy(catalog);
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
  }
};

// What NATS said of a failed `what`, as a status: UNAVAILABLE for what
// passes (no server, a timeout, a leader being elected), else INTERNAL.
absl::Status FromNats(absl::string_view what, natsStatus s,
                      jsErrCode js_error = static_cast<jsErrCode>(0));

// Opens the key-value bucket `bucket` into `out`, creating it (one value a
// key, on disk, `replicas` replicas) if there is none.
natsStatus OpenBucket(jsCtx* js, const char* bucket, int replicas,
                      kvStore** out);

// Opens the snapshot stream and its index bucket, creating them with
// `replicas` replicas if there are none (jetstream_snapshots.cc).
natsStatus OpenSnapshots(JetStreamLog::Handles& h, int replicas);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REPLICATION_JETSTREAM_HANDLES_H_
