// The named models of one server, and their persistence: snapshots in a
// ModelStore and, between snapshots, every change in a Journal (the
// write-ahead log) when one is given.
//
// Recovery: Load reads every snapshot, then the log's records are passed to
// Replay in order; each model skips the records its snapshot already holds
// (LSN <= the snapshot's). A model whose snapshot cannot be read, or whose
// records were damaged, is *unavailable*: listed with the reason, refused
// with DATA_LOSS by Get, never written over, and kept until deleted; the
// others serve as usual.
//
// Thread safety: every method may be called concurrently. Lookups take a
// short lock on the name map only. Create, Delete, SetWeights and the
// snapshot calls are serialized with each other by a second lock held across
// store I/O, so a model's file is never written after it was deleted;
// lookups, training and predictions never wait for that I/O.
//
// Ownership: the registry shares each model with the callers that looked it
// up; a deleted model lives on until its last user lets go, but refuses to
// learn. The store and journal must outlive the registry.

#ifndef HALFSPACE_CORE_REGISTRY_MODEL_REGISTRY_H_
#define HALFSPACE_CORE_REGISTRY_MODEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/model/model.h"
#include "core/storage/model_store.h"
#include "core/training/journal.h"
#include "core/training/trainer.h"

namespace halfspace {
namespace storage::v1 {
class LogRecord;
class ModelFile;
}  // namespace storage::v1

// A registered name: its model, or why it is unavailable.
struct Listing {
  std::string name;
  std::shared_ptr<Model> model;  // null when unavailable
  absl::Status unavailable;      // OK when available
};

// FAILED_PRECONDITION, saying what it points to, unless alias `alias`
// points to `expected` (given) now: `previous` ("" for none). A
// compare-and-set's compare.
absl::Status CheckExpectedAlias(absl::string_view alias,
                                absl::string_view previous,
                                const std::optional<std::string>& expected);

class ModelRegistry {
 public:
  // `journal` may be null: then changes are kept only by snapshots. Every
  // model lives within `budget` (see limits.h); so does the number of
  // models (max_models). Keep the budget from enforcing during Load and
  // Replay.
  explicit ModelRegistry(
      ModelStore* store, Journal* journal = nullptr,
      std::shared_ptr<ResourceBudget> budget = UnlimitedBudget())
      : store_(store), journal_(journal), budget_(std::move(budget)) {}

  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Loads every stored model and the aliases; returns the largest LSN the
  // snapshots hold.
  // Call once, before Replay and serving.
  absl::StatusOr<uint64_t> Load();

  // Replays a batch of training examples or delayed feedback during
  // recovery: makes its examples (of batch.request, whose encoding is the
  // server's business, or of the features the model remembers for
  // batch.feedback) and trains `model` on them with `trainer`.
  using TrainReplay = std::function<absl::Status(
      Model& model, TrainBatch& batch, const Trainer& trainer)>;

  // Called once before the first log record is replayed, with its LSN (0
  // if the log holds none). A model whose snapshot was unreadable but whose
  // previous snapshot loaded is available again if the log holds every
  // change since that one (it is then replayed; the damaged file is set
  // aside); otherwise it stays unavailable and RestorePrevious can roll it
  // back. Returns the names of the models recovered that way.
  std::vector<std::string> StartReplay(uint64_t first_lsn);

  // The examples a logged batch holds (the request's encoding is the
  // server's business), to tell what rolling a model back gives up.
  using ExamplesOf = std::function<uint64_t(absl::string_view request)>;

  // Applies log record `lsn` of `model` during recovery, before serving.
  // A record that cannot be applied makes its model unavailable. An
  // unavailable model's changes wait for the operator, but a deletion, and
  // a creation or roll-back after it, apply whatever came before: no record
  // from before a delete or an import reaches what comes after it.
  void Replay(uint64_t lsn, absl::string_view model, absl::string_view payload,
              const TrainReplay& train, const ExamplesOf& examples = nullptr);

  // Recovery found log record `lsn` damaged. Marks `model` unavailable for
  // `reason` unless its snapshot already holds that record (returns false);
  // with an empty name, every model registered so far, since the damaged
  // bytes may have been any model's. A model that keeps its state from
  // before the damage can be rolled back to it (RestorePrevious).
  bool MarkUnavailable(absl::string_view model, const absl::Status& reason,
                       uint64_t lsn = 0);

  // Called once after the last log record is replayed: each model that can
  // be rolled back says in its reason what that gives up.
  void FinishReplay();

  // Starts logging changes to `journal` (null: none). Call after recovery,
  // before serving.
  void set_journal(Journal* journal) { journal_ = journal; }

  // The journal changes go to; null if none.
  Journal* journal() const { return journal_; }

  // The write path of the models' training (see trainer.h), to the
  // journal.
  Trainer trainer() const { return Trainer(journal_); }

  // The limits and memory every model shares.
  ResourceBudget& budget() const { return *budget_; }

  // Creates, logs and (without a journal) stores a fresh model (a
  // multiclass one starting with `classes`); sets `lsn` to its record's.
  // INVALID_ARGUMENT for a bad name, spec or class, ALREADY_EXISTS for a
  // taken name, RESOURCE_EXHAUSTED past the limits.
  absl::StatusOr<std::shared_ptr<Model>> Create(
      absl::string_view name, const ModelSpec& spec,
      const std::vector<std::string>& classes = {}, uint64_t* lsn = nullptr);

  // Creates model `name` with the whole state of `file`, a model file
  // (ExportedFiles makes them); logs or stores it as Create does.
  // INVALID_ARGUMENT for bytes that are not a model file, or a state that
  // does not fit its spec.
  absl::StatusOr<std::shared_ptr<Model>> Import(absl::string_view name,
                                                absl::string_view file,
                                                uint64_t* lsn = nullptr);

  // NOT_FOUND for an unknown name, DATA_LOSS for an unavailable model.
  absl::StatusOr<std::shared_ptr<Model>> Get(absl::string_view name) const;

  // Every available model, ordered by name.
  std::vector<std::shared_ptr<Model>> List() const;

  // Every name, available or not, ordered by name.
  std::vector<Listing> ListAll() const;

  // Get, through an alias too: the model `name` names, or the one the
  // alias `name` points to, looked up at once (an alias moving meanwhile
  // gives one model or the other, never a mix). NOT_FOUND names the alias's
  // model when that one is gone.
  absl::StatusOr<std::shared_ptr<Model>> Lookup(absl::string_view name) const;

  // Aliases: names such as `prod` that point to a model, so that callers
  // need not know which model serves. They share the models' namespace (a
  // name is a model's or an alias's) and are stored durably in the store.
  //
  // Points `alias` at model `model` and stores the change before it is
  // seen; with `expected`, only if the alias points to that model now (""
  // for an alias that must be new): a compare-and-set. Returns the model
  // it pointed to before ("" if none). INVALID_ARGUMENT for a bad name;
  // ALREADY_EXISTS when a model has the alias's name; NOT_FOUND for an
  // unknown model (an alias cannot point to an alias); FAILED_PRECONDITION
  // when `expected` does not hold; RESOURCE_EXHAUSTED for a new alias when
  // the server holds as many as max_models; the store's error, nothing
  // changed.
  absl::StatusOr<std::string> SetAlias(
      absl::string_view alias, absl::string_view model,
      const std::optional<std::string>& expected = std::nullopt);

  // Removes `alias`, stored before it is seen; returns the model it pointed
  // to. NOT_FOUND for an unknown alias.
  absl::StatusOr<std::string> DeleteAlias(absl::string_view alias);

  // The aliases that point to `model`, ordered.
  std::vector<std::string> AliasesOf(absl::string_view model) const;

  // FAILED_PRECONDITION, naming one, while an alias points to `model`.
  absl::Status CheckUnaliased(absl::string_view model) const;

  // Every alias and its model, shared ones among them.
  AliasMap Aliases() const;

  // Shared aliases: aliases of replicated models, kept in the replicated
  // log's catalog and known to every server that follows it (see
  // ReplicaSet), never stored here. The catalog decides them; the registry
  // only holds what it said. A shared alias replaces this server's own of
  // the name (the catalog is every server's); ALREADY_EXISTS, nothing
  // changed, when a model of this server has the name.
  absl::Status PutSharedAlias(absl::string_view alias, absl::string_view model);
  void DropSharedAlias(absl::string_view alias);
  AliasMap SharedAliases() const;
  // OK when `alias` may be made a new alias here (the same checks as
  // SetAlias's: its name, no model of the name, the limit on aliases).
  absl::Status CheckNewAlias(absl::string_view alias) const;

  // Removes the model (available or not) and its stored state; it stops
  // learning at once. Sets `lsn` to the record's. FAILED_PRECONDITION
  // while an alias points to it.
  absl::Status Delete(absl::string_view name, uint64_t* lsn = nullptr);

  // Replaces one class's weights (binary: `class_label` empty) and logs the
  // change, or (without a journal) stores the model; on error nothing
  // changed. Sets `lsn` to the record's.
  absl::Status SetWeights(absl::string_view name, absl::string_view class_label,
                          std::vector<double> w, double b,
                          uint64_t* lsn = nullptr);

  // Puts back the weights the model's drift reaction replaced at its last
  // switch, logged like SetWeights; FAILED_PRECONDITION as
  // Model::RollBack. Sets `lsn` to the record's.
  absl::Status RollBack(absl::string_view name, uint64_t* lsn = nullptr);

  // Sets the model's drift detector and reaction (Model::SetDrift), logged
  // like SetWeights. Sets `lsn` to the record's.
  absl::Status SetDrift(absl::string_view name, const DriftOptions& drift,
                        uint64_t* lsn = nullptr);

  // Rolls an unavailable model back to its previous snapshot, sets the
  // damaged one aside, and logs (or stores) the state; the changes after
  // that snapshot are lost. FAILED_PRECONDITION for a model that is
  // available or has no readable previous snapshot.
  absl::Status RestorePrevious(absl::string_view name, uint64_t* lsn = nullptr);

  // Replicated models (core/replication/): their changes come as records of
  // a replicated log's stream, in its order, each with its stream sequence
  // for LSN; the write-ahead log never holds them, and the calls above that
  // change a model refuse one (FAILED_PRECONDITION) but for Delete of an
  // unavailable copy. Their snapshots are stored like the others', so a
  // restarted server resumes each from its position.
  //
  // The record that creates replicated model `name` as `spec` (which names
  // its stream) with `classes`, checked as Create checks; nothing created.
  absl::StatusOr<std::string> CreationRecord(
      absl::string_view name, const ModelSpec& spec,
      const std::vector<std::string>& classes) const;

  // Applies record `sequence` of replicated model `name` (its payload as
  // the write-ahead log encodes records; training decoded by `train`), the
  // model of the name that `creation` drew (Replication::creation). Its
  // creation replaces an earlier replica of the name; another model's
  // creation (an earlier one's, left in the stream), a record at or below
  // the replica's position, or for a replica that is unavailable or does
  // not exist, is skipped. A change that every replica refuses alike, for
  // what the record and the model hold (an example id in use, weights of
  // the wrong width, a per-model limit), changes nothing and its error is
  // returned; the replica goes on. On another error (a record this server
  // cannot apply: the memory all its models share, damage) the replica
  // becomes unavailable with the reason, keeping its state, and the error
  // is returned. FAILED_PRECONDITION, and nothing changed, when a model of
  // this server alone has the name.
  absl::Status ApplyReplicated(uint64_t sequence, absl::string_view name,
                               absl::string_view creation,
                               absl::string_view payload,
                               const TrainReplay& train);

  // A replica's whole state as a model file, and the stream position it
  // holds: what a shared snapshot keeps. Errors as Get's;
  // FAILED_PRECONDITION for a model of this server alone.
  absl::StatusOr<std::pair<uint64_t, std::string>> ReplicaFile(
      absl::string_view name) const;

  // Makes `file` (a model file, as ReplicaFile gives) this server's replica
  // of `name` at stream `position`, following `replication`: a creation
  // carrying the whole state, applied as ApplyReplicated applies one (a
  // replica at `position` or later is kept as it is). DATA_LOSS for bytes
  // that are no model file; FAILED_PRECONDITION, nothing changed, for the
  // file of another model of the name (its creation is not
  // `replication`'s); a state the limits refuse makes the replica
  // unavailable.
  absl::Status InstallReplica(uint64_t position, absl::string_view name,
                              absl::string_view file,
                              const Replication& replication);

  // Removes the replica of `name` and its stored state, if any: its model
  // no longer exists, or it is to be built again from the stream.
  void DropReplica(absl::string_view name);

  // The replicas this server holds, available or not: each name, the
  // stream it follows and its position (0 for one that is unavailable
  // without a state).
  struct Replica {
    std::string name;
    Replication replication;
    uint64_t position = 0;
    bool available = false;
  };
  std::vector<Replica> Replicas() const;

  // Stores every model that changed since it was last stored. Returns the
  // first error, after trying them all.
  absl::Status SaveChanged();

  // The LSN up to which the log may be dropped once the snapshots taken
  // after reading `covered` (the log's last LSN) are stored: `covered`, or
  // less where a model's state since its last snapshot is only in the log
  // (its snapshot failed, or it is unavailable and its records are kept
  // for the operator).
  uint64_t DroppableLog(uint64_t covered) const;

 private:
  // What recovery found of an entry's damage and the snapshot it fell back
  // to: made when it finds some (most entries never have any).
  struct Recovery {
    // Log damage: the damaged record's LSN (0 if unknown), and the changes
    // of the model after it that replay skipped.
    bool log_damaged = false;
    uint64_t damaged_lsn = 0;
    uint64_t skipped_changes = 0;
    uint64_t skipped_examples = 0;
    // Recovery from the previous snapshot awaits StartReplay: the LSN the
    // log must start at or before; 0 if none.
    uint64_t fallback_from = 0;
  };

  // A model's entry, one per name: 80 bytes beside its model, for servers
  // of many small models.
  struct Entry {
    // A replicated model's stream; set for its whole life, also while it
    // is unavailable. Null for a local one (most: a pointer, not the 136
    // bytes of an empty Replication).
    std::unique_ptr<const Replication> replication;
    // If unavailable: its last good state, or its previous snapshot's if
    // `restorable`, or none.
    std::shared_ptr<Model> model;
    absl::Status unavailable;
    std::unique_ptr<Recovery> recovery;  // or none
    bool restorable = false;
    // guarded by io_mu_: what the stored snapshots hold
    bool stored = false;        // whether a current snapshot file exists
    bool has_previous = false;  // a previous snapshot file, of previous_lsn
    uint64_t saved_generation = 0;
    uint64_t saved_lsn = 0;
    uint64_t previous_lsn = 0;

    // The entry's recovery notes, made if it has none.
    Recovery& recovered() {
      if (recovery == nullptr) recovery = std::make_unique<Recovery>();
      return *recovery;
    }
  };

  // Registers a new model: logs `record` (without a journal, stores the
  // model) and inserts it; ALREADY_EXISTS for a taken name.
  absl::StatusOr<std::shared_ptr<Model>> Add(std::unique_ptr<Model> model,
                                             const std::string& record,
                                             uint64_t* lsn);
  absl::Status SaveLocked(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_);
  void Insert(const std::string& name, std::shared_ptr<Entry> entry);
  std::shared_ptr<Entry> Find(absl::string_view name) const;
  // Applies one decoded record. REQUIRES: recovery (no concurrent calls).
  absl::Status ApplyRecord(uint64_t lsn, absl::string_view name,
                           storage::v1::LogRecord& record,
                           const TrainReplay& train);
  // Applies a record that creates, imports or restores model `name` (whose
  // entry, if any, is `entry`): the model it holds replaces the entry.
  absl::Status ApplyState(uint64_t lsn, absl::string_view name,
                          const std::shared_ptr<Entry>& entry,
                          storage::v1::ModelFile& file, bool creates);
  // FAILED_PRECONDITION for a change to a replicated model made here
  // rather than through its stream.
  static absl::Status CheckLocal(const Entry& entry, absl::string_view name);
  // RESOURCE_EXHAUSTED naming --max_models when the server holds as many.
  absl::Status CheckRoomForModel() const;
  // A model from a log record's state (create, import, restore) as of `lsn`.
  absl::StatusOr<std::unique_ptr<Model>> ModelFromRecord(
      uint64_t lsn, absl::string_view name, storage::v1::ModelFile& file);
  // Loads model `name`'s previous snapshot into `entry` after its current
  // one failed to load for `reason`.
  void FallBack(const std::string& name, const absl::Status& reason,
                Entry& entry);

  ModelStore* const store_;
  Journal* journal_;
  const std::shared_ptr<ResourceBudget> budget_;

  // Held across store I/O; taken before mu_.
  mutable Mutex io_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable SharedMutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_
      ABSL_GUARDED_BY(mu_);
  // The model alias `name` points to (this server's alias, else a shared
  // one); null for a name that is no alias.
  const std::string* AliasTarget(absl::string_view name) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  AliasMap aliases_ ABSL_GUARDED_BY(mu_);  // alias -> model, this server's
  AliasMap shared_aliases_ ABSL_GUARDED_BY(mu_);  // the catalog's
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REGISTRY_MODEL_REGISTRY_H_
