// The engine a replicated model's changes are ordered in: a log that many
// servers append to and read in one order, numbering each message, and a
// catalog of the replicated models. NATS JetStream is one
// (jetstream_log.h); the replica set (replica_set.h) knows only this
// interface, so that another engine (Kafka's topics and compacted topics)
// fits without touching it.

#ifndef HALFSPACE_CORE_REPLICATION_REPLICATED_LOG_H_
#define HALFSPACE_CORE_REPLICATION_REPLICATED_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model/model_spec.h"

namespace halfspace {

// What a message's bytes are: a change as the write-ahead log encodes it
// (published by a server), or a producer's examples in the format it names
// (which the replica set's options decode).
enum class MessageFormat { kRecord, kProducer };

// One message of a model's stream, as read.
struct LogMessage {
  uint64_t sequence = 0;    // the stream's number for it, from 1
  int64_t time_micros = 0;  // when the stream stored it (Unix time)
  MessageFormat format = MessageFormat::kProducer;
  std::string format_name;  // as the message named it; may be empty
  std::string call;         // the publishing call's token; may be empty
  std::string data;
};

// Reads one stream's messages of one subject in order, from a position.
class LogReader {
 public:
  virtual ~LogReader() = default;
  // Up to `max` messages, waiting up to `timeout` for the first: none when
  // none came. An error (the engine unreachable, the stream gone) leaves
  // the reader unusable: open another from the next position.
  virtual absl::StatusOr<std::vector<LogMessage>> Next(
      int max, absl::Duration timeout) = 0;
  // Messages of the subject it has not returned yet, as the engine last
  // said: when the reader opened, then with each message read.
  virtual uint64_t Pending() const = 0;
};

// What the catalog says of one name: a model's stream, a shared alias's
// model, or (neither) that the name is free again.
struct CatalogChange {
  std::string model;  // the name: a model's, or an alias's
  std::optional<Replication> replication;
  std::string alias_of;   // set for an alias
  uint64_t revision = 0;  // the catalog's number for the change
  // When the call that claimed the name gives up creating the model (see
  // ReplicatedLog::Claim); never for a claim that does not say.
  absl::Time creating_until = absl::InfiniteFuture();
  // Set once, after the models listed when the watch began (model empty):
  // a replica of a model not among them is of one deleted meanwhile.
  bool listed_all = false;
};

class CatalogWatch {
 public:
  virtual ~CatalogWatch() = default;
  // The next change, waiting up to `timeout` (none then). Starts with
  // every model the catalog lists.
  virtual absl::StatusOr<std::optional<CatalogChange>> Next(
      absl::Duration timeout) = 0;
};

// A replicated model's shared snapshot: the state as of a position of its
// stream, kept in the engine for replicas that join, or that fell behind
// the stream's trimmed start.
struct SnapshotInfo {
  uint64_t position = 0;  // the last record of the stream the state holds
  // The model's records below this sequence may be gone from the stream
  // (0: none trimmed): a replica not past it must start from the snapshot.
  uint64_t trimmed_below = 0;
};

// What became of a record published: its sequence in the stream, or why
// it is not known to be stored.
using Published = std::function<void(absl::StatusOr<uint64_t> sequence)>;

// What a change of a shared alias did: the model it pointed to before (""
// for none), and the catalog's revision of the change.
struct AliasChange {
  std::string previous;
  uint64_t revision = 0;
};

class ReplicatedLog {
 public:
  virtual ~ReplicatedLog() = default;

  // Creates the stream with the subject if there is none;
  // FAILED_PRECONDITION if a stream of the name does not take the subject.
  virtual absl::Status EnsureStream(const Replication& replication) = 0;

  // Appends `data` (a change record, calling token `call`) to the subject
  // without waiting: `done` is called once, on a thread of the log's (or
  // in the call), with the record's sequence once the engine stored it,
  // or UNAVAILABLE when it could not by `deadline` (it may still have).
  // Records published one after another are stored in that order, but a
  // record after one that failed may be stored.
  virtual void Publish(const Replication& replication, absl::string_view data,
                       absl::string_view call, absl::Time deadline,
                       Published done) = 0;

  // Removes the subject's messages below sequence `before`, all of them
  // for 0: a new model of the name starts from none of an earlier one's.
  virtual absl::Status Trim(const Replication& replication,
                            uint64_t before) = 0;

  // A reader of the subject's messages from sequence `from` (>= 1), under
  // a durable name of this server's (`reader`), replacing its earlier
  // reader of the stream.
  virtual absl::StatusOr<std::unique_ptr<LogReader>> Read(
      const Replication& replication, uint64_t from,
      absl::string_view reader) = 0;

  // The catalog: claims `model`'s name with its stream for a creation
  // that gives up at `creating_until` (ALREADY_EXISTS when the name is
  // taken) and returns the claim's revision; with `over`, replaces the
  // claim of that revision instead (ALREADY_EXISTS if it is no longer the
  // name's): one whose creator died or gave up. Releases a claim; watches
  // the catalog.
  virtual absl::StatusOr<uint64_t> Claim(absl::string_view model,
                                         const Replication& replication,
                                         absl::Time creating_until,
                                         uint64_t over = 0) = 0;
  virtual absl::Status Release(absl::string_view model) = 0;
  // OK when no model or shared alias has the name `name`, else
  // ALREADY_EXISTS saying which.
  virtual absl::Status CheckFree(absl::string_view name) = 0;
  virtual absl::StatusOr<std::unique_ptr<CatalogWatch>> WatchCatalog() = 0;

  // Shared aliases, names in the catalog beside the models': points
  // `alias` at `model` once `check` approves of the model it points to now
  // ("" for none), as one compare-and-set; `check`'s error, nothing
  // changed, when it does not. ALREADY_EXISTS when a model has the name.
  using AliasCheck = std::function<absl::Status(absl::string_view previous)>;
  virtual absl::StatusOr<AliasChange> PutAlias(absl::string_view alias,
                                               absl::string_view model,
                                               const AliasCheck& check) = 0;
  // Removes the shared alias `alias` (only if it is still the alias it
  // was when read: never a model that took the name meanwhile). NOT_FOUND
  // for a name that is no alias.
  virtual absl::StatusOr<AliasChange> DropAlias(absl::string_view alias) = 0;

  // Shared snapshots, one kept per model. Keeps `file` (a model file) as
  // `model`'s snapshot of `info`, written by `writer` (a server's reader
  // name), in place of the one kept; ABORTED, nothing changed, when the
  // kept one is of the same position or later (another server's, say).
  virtual absl::Status PutSnapshot(absl::string_view model,
                                   const SnapshotInfo& info,
                                   absl::string_view file,
                                   absl::string_view writer) = 0;
  // What the kept snapshot of `model` is of; none if there is none.
  virtual absl::StatusOr<std::optional<SnapshotInfo>> SnapshotOf(
      absl::string_view model) = 0;
  // The kept snapshot's bytes and what it is of: NOT_FOUND if none is
  // kept, DATA_LOSS if its bytes are damaged.
  virtual absl::StatusOr<std::pair<SnapshotInfo, std::string>> ReadSnapshot(
      absl::string_view model) = 0;
  // Forgets `model`'s snapshot (none kept is no error).
  virtual absl::Status DropSnapshot(absl::string_view model) = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REPLICATION_REPLICATED_LOG_H_
