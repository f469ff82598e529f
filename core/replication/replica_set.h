// The replicated models of one server. Each follows its stream in the
// replicated log (replicated_log.h): a thread per model reads the records
// in stream order and applies each through the registry
// (ModelRegistry::ApplyReplicated), so that every server's replica of a
// model applies the same records in the same order and holds the same
// state, bit for bit. The stream sequence of the last record applied is
// the replica's position.
//
// Changes made on this server (Create, Train, delayed feedback and the
// examples it labels, new weights, Delete) are published to the
// stream, not applied: each call is answered once its own replica has
// applied the record, with what that did, so that a result means what it
// means for a local model and an acknowledged change is stored by the
// log's quorum. Train does not wait: a stream of batches keeps many in
// flight, each answered in turn. Producers may also publish TrainRequests to a
// model's subject themselves: they learn in stream order, exactly once (the
// position is the exactly-once mark).
//
// A record a replica cannot apply (its limits, damage) makes that replica
// unavailable, with the reason, rather than let it diverge; the others go
// on. A message that is no change at all (bytes that do not decode, an
// unknown format) is skipped by every replica alike and reported.
//
// The catalog lists the replicated models: every server follows each one
// it lists, and drops its replica of one the catalog no longer lists. It
// lists their aliases too, which every server holds alike.
//
// Shared snapshots bound the stream: now and then a server keeps a
// snapshot of its replica in the log (the same state every replica holds
// at that position), and the stream is trimmed below the previous one. A
// replica that joins starts from the snapshot and reads the stream from
// its position; so does one that finds the records it needs trimmed.
//
// Thread safety: every method may be called concurrently.

#ifndef HALFSPACE_CORE_REPLICATION_REPLICA_SET_H_
#define HALFSPACE_CORE_REPLICATION_REPLICA_SET_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/registry/model_registry.h"
#include "core/replication/replicated_log.h"
#include "core/training/batch.h"

namespace halfspace {

// What one training record did on this server's replica.
struct AppliedBatch {
  uint64_t position = 0;  // the record's stream sequence
  std::vector<ExampleOutcome> outcomes;
  std::vector<std::string> class_names;  // the model's, after it
};

// A producer's message as a batch of examples: its source and first
// sequence (empty and 0 for untagged examples) and the request that holds
// them.
struct ProducerBatch {
  std::string source;
  uint64_t first_sequence = 0;
  std::string request;  // a TrainRequest, serialized
  // Parts of the message left out of the request (lines that do not
  // parse), each reported.
  std::vector<absl::Status> left_out;
};

struct ReplicaOptions {
  // This server's name in the log (its readers'): unique in the cluster.
  std::string reader;
  // Learns a training batch as recovery does (its request decoded, its
  // examples prepared), writing what each example did into `applied`
  // when it is not null.
  std::function<absl::Status(Model& model, TrainBatch& batch,
                             const Trainer& trainer, AppliedBatch* applied)>
      learn;
  // A producer's message, its bytes in the format it names, as a batch
  // for a model that is multiclass or not; INVALID_ARGUMENT for a message
  // that holds none (skipped).
  std::function<absl::StatusOr<ProducerBatch>(
      absl::string_view format, absl::string_view data, bool multiclass)>
      read_producer;
  // Told of each message skipped and each record a replica could not
  // apply (to log and count them).
  std::function<void(absl::string_view model, uint64_t position,
                     const absl::Status& why)>
      report;
  // A snapshot of each replica is shared every this many records of its
  // stream, by a thread of the set's own (see ShareSnapshots); 0: none.
  uint64_t snapshot_every = 0;
  // Told when a replica's snapshot could not be shared, or its stream not
  // trimmed after it (tried again later).
  std::function<void(absl::string_view model, const absl::Status& why)>
      unshared;
  // Told when a replica starts from the shared snapshot at `position`.
  std::function<void(absl::string_view model, uint64_t position)> joined;
  // Told when a replica cannot read its stream (the log unreachable, its
  // reader lost), once until it reads again; it retries meanwhile.
  std::function<void(absl::string_view model, const absl::Status& why)> stalled;
  // Told when a creation takes over the name's abandoned claim of
  // `revision` (see Abandoned).
  std::function<void(absl::string_view model, uint64_t revision)> taken_over;
};

class ReplicaSet {
 public:
  // Follows every model of `log`'s catalog into `registry`; `log` and
  // `registry` must outlive it.
  ReplicaSet(ModelRegistry* registry, ReplicatedLog* log,
             ReplicaOptions options);
  ~ReplicaSet();  // stops following

  // Starts watching the catalog (once), retrying while the log does not
  // answer, and sharing snapshots every second (with snapshot_every).
  void Start();

  // Creates a replicated model: claims the name in the catalog, creates
  // its stream if there is none, publishes its creation and returns it
  // once this server's replica holds it. Errors as ModelRegistry::Create's,
  // ALREADY_EXISTS for a name any server uses, UNAVAILABLE (nothing
  // created) when the log cannot store it by `deadline`.
  absl::StatusOr<std::shared_ptr<Model>> Create(
      absl::string_view name, const ModelSpec& spec,
      const std::vector<std::string>& classes, absl::Time deadline);

  // ALREADY_EXISTS when a replicated model has the name `model`, which a
  // model of this server alone then cannot take; the log's error.
  absl::Status CheckUnclaimed(absl::string_view model) const;

  // `status`, a NOT_FOUND for the name `name`, or UNAVAILABLE when this
  // server holds nothing of the name but the catalog lists it: a
  // replicated model (or its alias) this server has not caught up with
  // yet (it has just started, say), which another replica may hold.
  absl::Status NotHeldYet(absl::string_view name, absl::Status status) const;

  // What a change published here did on this server's replica, or why it
  // did not apply.
  using Applied = std::function<void(absl::StatusOr<AppliedBatch>)>;

  // Publishes `batch` (its request, source, sequence and what it follows)
  // to `model`'s stream without waiting; `done` is called once, on a
  // thread of the set's or the log's (or in the call), with what the batch
  // did here. UNAVAILABLE when the log could not store it by `deadline`,
  // or this replica cannot apply records; DEADLINE_EXCEEDED when it is
  // stored but not yet applied here by then (sending a tagged batch again
  // is safe). Batches published one after another are stored in order,
  // unless one fails: the one after may be stored, and a tagged batch that
  // `follows` it then learns nothing.
  void Train(const Model& model, const TrainBatch& batch, absl::Time deadline,
             Applied done);

  // Publishes `batch` as Train does and waits until this server's replica
  // applied it (or `deadline`): for a batch of delayed feedback, whose
  // examples are the ones the replica remembered. Errors as Train's, and a
  // refusal of the batch as a whole (see ModelRegistry::ApplyReplicated).
  absl::StatusOr<AppliedBatch> Learn(const Model& model,
                                     const TrainBatch& batch,
                                     absl::Time deadline);

  // Publishes examples for `model` to remember for delayed feedback (see
  // Model::Remember) and waits until this server's replica remembered
  // them: ALREADY_EXISTS, nothing remembered, for an id in use there;
  // errors as Learn's.
  absl::Status Remember(const Model& model, const RememberBatch& batch,
                        absl::Time deadline);

  // Publishes new weights for one class of `model` (see
  // Model::SetClassWeights) and waits until this server's replica holds
  // them; errors as Learn's.
  absl::Status SetWeights(const Model& model, absl::string_view class_label,
                          absl::Span<const double> w, double b,
                          absl::Time deadline);

  // Publishes a roll-back of `model`'s drift reaction (Model::RollBack)
  // and waits until this server's replica applied it; FAILED_PRECONDITION,
  // publishing nothing, while this replica has nothing to roll back to;
  // errors as Learn's.
  absl::Status RollBack(const Model& model, absl::Time deadline);

  // Publishes new drift settings for `model` (Model::SetDrift), checked
  // first on this server's replica, and returns once this server applied
  // them.
  absl::Status SetDrift(const Model& model, const DriftOptions& drift,
                        absl::Time deadline);

  // Publishes the deletion of `model` and releases its name once this
  // server's replica applied it. FAILED_PRECONDITION while an alias points
  // to it.
  absl::Status Delete(absl::string_view model, absl::Time deadline);

  // Shared aliases: an alias of a replicated model is kept in the catalog,
  // and every server that follows it holds it (ModelRegistry's shared
  // aliases). Points `alias` at replicated `model`, as
  // ModelRegistry::SetAlias does (its errors), as one compare-and-set in
  // the catalog, and returns once this server holds the change.
  // DEADLINE_EXCEEDED when the catalog stored it but this server has not
  // read it by `deadline`; the log's error, nothing changed.
  absl::StatusOr<std::string> SetAlias(
      absl::string_view alias, absl::string_view model,
      const std::optional<std::string>& expected, absl::Time deadline);
  // Removes the shared alias `alias` (NOT_FOUND for a name that is none),
  // returning its model once this server no longer holds it.
  absl::StatusOr<std::string> DeleteAlias(absl::string_view alias,
                                          absl::Time deadline);

  // Builds this server's replica of `model` again from its stream, after
  // it became unavailable: drops it and reads the stream from its start.
  // Returns the model once it is available again (its creation applied);
  // FAILED_PRECONDITION for a replica that is available or not followed,
  // DEADLINE_EXCEEDED when it is not back by `deadline`.
  absl::StatusOr<std::shared_ptr<Model>> Rebuild(absl::string_view model,
                                                 absl::Time deadline);

  // Waits until this server's replica of `model` has applied the stream
  // up to `position` (one not followed yet is at 0): DEADLINE_EXCEEDED at
  // `deadline`, UNAVAILABLE once the set stops.
  absl::Status WaitFor(absl::string_view model, uint64_t position,
                       absl::Time deadline);

  // A replica's progress: the stream position it has applied (records
  // that changed nothing, such as duplicates, count), the records of its
  // stream it has not applied yet, as the log last said, and for how long
  // the first of them has waited. While it does not read its stream (it
  // has not yet, or the log does not answer), why, and the seconds count
  // at least from when it last read. A model not followed is at 0.
  struct Lag {
    uint64_t position = 0;
    uint64_t records = 0;
    double seconds = 0;
    std::string stalled;  // empty while it reads
  };
  Lag LagOf(absl::string_view model) const;

 private:
  struct Follower;
  struct Waiter;

  // Starts following `model`'s stream, from its replica's position, for
  // the catalog's claim of `revision` (whose creator gives up at
  // `creating_until`); a follower of the same model already there is kept
  // (and counts as of the later revision), one of an earlier model of the
  // name replaced.
  void Follow(const std::string& model, const Replication& replication,
              uint64_t revision, absl::Time creating_until);
  // The revision of `model`'s claim if it is abandoned: its creator gave
  // up long ago, and this server, having read the whole stream since,
  // holds no model of it (so its creation was never stored).
  std::optional<uint64_t> Abandoned(absl::string_view model) const;
  // Stops following `model` and drops its replica, unless it follows a
  // claim later than `revision` (the catalog's watch may report a deletion
  // after this server made a new claim of the name).
  void Unfollow(const std::string& model, uint64_t revision);
  void FollowLoop(Follower& follower);
  // Applies one message of `follower`'s stream.
  void Apply(Follower& follower, const LogMessage& message);
  // Starts `f`'s replica from the shared snapshot if it holds nothing yet
  // (`position` 0) or the records after `position` are trimmed; returns
  // its position then. After a `gap` in the stream, an error when the
  // engine cannot say whether records were trimmed; an error when they
  // were and the snapshot cannot be installed (the replica must not read
  // on past them).
  absl::StatusOr<uint64_t> FromSnapshot(Follower& f, uint64_t position,
                                        bool gap);
  // Shares a snapshot of each replica this server holds whose position is
  // snapshot_every records or more past the shared one, unless another
  // server shared one meanwhile, and trims the model's stream below the
  // previous shared snapshot's position. A replica that joins, or that
  // fell behind the trimmed start, starts from the shared snapshot rather
  // than the stream's start. After the log failed a replica's share, that
  // replica waits 30 s before the next try. Slow (it writes whole models):
  // the sharing thread's.
  void ShareSnapshots();
  // Shares `f`'s replica's snapshot if no other server's is recent.
  void ShareSnapshot(Follower& f);
  // The change record a producer's message makes here, into `record`: left
  // empty when this replica holds no model to learn it; an error for a
  // message that holds no batch (every replica skips it alike).
  absl::Status ProducerRecord(const Follower& f, const LogMessage& m,
                              std::string& record);
  // A token no other call or creation of any server's has: for a call's
  // record, and for a model's creation (Replication::creation).
  std::string NextToken() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes `record` to `model`'s stream; `done` is called once this
  // replica applied it, or the log failed it, or at `deadline`.
  void Publish(const std::string& model, const Replication& replication,
               absl::string_view record, absl::Time deadline, Applied done);
  // Publishes `record` and waits until `done` would be called.
  absl::StatusOr<AppliedBatch> PublishAndWait(const std::string& model,
                                              const Replication& replication,
                                              absl::string_view record,
                                              absl::Time deadline);
  // Settles, with `why`, the waiters of `model` (every model's if empty)
  // whose deadline is `now` or earlier, and forgets those settled.
  void SettleWaiters(absl::string_view model, absl::Time now,
                     const std::function<absl::Status(const Waiter&)>& why);
  std::shared_ptr<Follower> Find(absl::string_view model) const;
  // Waits until the catalog's watch has applied `revision`.
  absl::Status WaitForCatalog(uint64_t revision, absl::Time deadline);

  ModelRegistry* const registry_;
  ReplicatedLog* const log_;
  const ReplicaOptions options_;

  mutable Mutex mu_;
  CondVar applied_;  // signalled after each batch of records applies
  absl::flat_hash_map<std::string, std::shared_ptr<Follower>> followers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Waiter>> waiters_
      ABSL_GUARDED_BY(mu_);  // by call token
  // Models whose follower is being stopped (Unfollow), until it has.
  std::multiset<std::string> retiring_ ABSL_GUARDED_BY(mu_);
  // A call's token is the reader's name, this process's incarnation (drawn
  // at random) and a count: a server that restarts reads its earlier
  // records again, and a token of theirs must not answer a new call.
  const uint64_t incarnation_;
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The catalog's last change this server applied.
  uint64_t catalog_revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread watcher_;
  std::thread sharer_;  // shares snapshots, with snapshot_every
  std::atomic<bool> stop_{false};
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REPLICATION_REPLICA_SET_H_
