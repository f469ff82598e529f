// The replicated log on NATS JetStream: each replicated model's records
// are messages of a subject in a JetStream stream (replicated by the
// cluster's Raft groups, numbered by the stream, deduplicated by message
// id), read by a durable pull consumer per server; the catalog is a
// key-value bucket, `halfspace_models`, from model name to stream (and
// from a shared alias's name to its model); shared
// snapshots lie in a stream and a bucket of their own.
//
// Thread safety: every method may be called concurrently (the NATS client
// is thread-safe); a reader or watch is used by one thread at a time.

#ifndef HALFSPACE_CORE_REPLICATION_JETSTREAM_LOG_H_
#define HALFSPACE_CORE_REPLICATION_JETSTREAM_LOG_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/replication/replicated_log.h"

namespace halfspace {

struct NatsOptions {
  // nats://host:port, one or more (any member of the cluster will do).
  std::vector<std::string> urls;
  // A NATS credentials file (user JWT and NKey seed); empty for none.
  std::string credentials_file;
  // TLS: the CA that signs the servers' certificates, and this client's
  // certificate and key (for servers that verify clients); empty for none.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // The connection's name, as NATS monitoring shows it.
  std::string name = "halfspace";
  // How many servers store the catalog, if this connection creates it.
  int catalog_replicas = 3;
};

class JetStreamLog final : public ReplicatedLog {
 public:
  // Connects (retrying while the cluster comes up, until `deadline`) and
  // opens the catalog, creating it with `catalog_replicas` replicas if
  // there is none. UNAVAILABLE when no server answers.
  static absl::StatusOr<std::unique_ptr<JetStreamLog>> Connect(
      const NatsOptions& options, int catalog_replicas, absl::Time deadline);
  ~JetStreamLog() override;

  absl::Status EnsureStream(const Replication& replication) override;
  void Publish(const Replication& replication, absl::string_view data,
               absl::string_view call, absl::Time deadline,
               Published done) override;
  absl::Status Trim(const Replication& replication, uint64_t before) override;
  absl::StatusOr<std::unique_ptr<LogReader>> Read(
      const Replication& replication, uint64_t from,
      absl::string_view reader) override;
  absl::StatusOr<uint64_t> Claim(absl::string_view model,
                                 const Replication& replication,
                                 absl::Time creating_until,
                                 uint64_t over = 0) override;
  absl::Status Release(absl::string_view model) override;
  absl::Status CheckFree(absl::string_view name) override;
  absl::StatusOr<std::unique_ptr<CatalogWatch>> WatchCatalog() override;
  absl::StatusOr<AliasChange> PutAlias(absl::string_view alias,
                                       absl::string_view model,
                                       const AliasCheck& check) override;
  absl::StatusOr<AliasChange> DropAlias(absl::string_view alias) override;
  // Snapshots (jetstream_snapshots.cc): chunks of up to 256 KiB in the
  // stream halfspace_snapshots, and where they lie in the key-value bucket
  // halfspace_snapshot_index, written after them.
  absl::Status PutSnapshot(absl::string_view model, const SnapshotInfo& info,
                           absl::string_view file,
                           absl::string_view writer) override;
  absl::StatusOr<std::optional<SnapshotInfo>> SnapshotOf(
      absl::string_view model) override;
  absl::StatusOr<std::pair<SnapshotInfo, std::string>> ReadSnapshot(
      absl::string_view model) override;
  absl::Status DropSnapshot(absl::string_view model) override;

  struct Handles;  // the client's objects

 private:
  explicit JetStreamLog(std::unique_ptr<Handles> handles);
  std::unique_ptr<Handles> handles_;
};

// The headers a message carries: what its bytes are (kFormatHeader: "record"
// for a server's change record; anything else names a producer's format),
// and the token of the call that published it.
inline constexpr char kFormatHeader[] = "Halfspace-Format";
inline constexpr char kCallHeader[] = "Halfspace-Call";

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REPLICATION_JETSTREAM_LOG_H_
