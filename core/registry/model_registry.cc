#include "core/registry/model_registry.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/model/limits.h"
#include "core/storage/log_record.h"
#include "core/storage/snapshot_codec.h"

namespace halfspace {
namespace {

absl::Status NotFound(absl::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("model ", Quoted(name), " does not exist"));
}

absl::Status Unavailable(absl::string_view name, const absl::Status& reason) {
  return absl::DataLossError(absl::StrCat(
      "model ", Quoted(name), " is unavailable: ", reason.message(),
      "; delete it, or restore its files and restart"));
}

// Writes `record`, a change to model `name`, ahead to `journal` (none: not
// at all) and notes its LSN in `lsn`.
WriteAhead AppendTo(Journal* journal, absl::string_view name,
                    absl::string_view record, uint64_t* lsn) {
  if (journal == nullptr) return nullptr;
  return [journal, name, record, lsn]() -> absl::StatusOr<uint64_t> {
    absl::StatusOr<uint64_t> appended = journal->Append(name, record);
    if (appended.ok() && lsn != nullptr) *lsn = *appended;
    return appended;
  };
}

bool AllFinite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

// Whether every weight, bias and state value of `s` is finite.
bool Finite(const ModelSnapshot& s) {
  bool finite = AllFinite(s.weights.w) && std::isfinite(s.weights.b) &&
                AllFinite(s.state) && AllFinite(s.standardizer);
  for (const LinearWeights& row : s.class_weights) {
    finite = finite && AllFinite(row.w) && std::isfinite(row.b);
  }
  return finite;
}

// The record that creates `model`, just made: its spec and classes, the
// weights at zero.
std::string FreshRecord(const Model& model) {
  ModelSnapshot fresh;
  fresh.name = model.name();
  fresh.spec = model.spec();
  fresh.classes = model.classes();
  fresh.class_weights.resize(fresh.classes.size());
  fresh.incarnation = model.incarnation();
  return CreateRecord(fresh);
}

}  // namespace

absl::StatusOr<uint64_t> ModelRegistry::Load() {
  MutexLock io_lock(io_mu_);
  absl::StatusOr<std::vector<StoredModel>> stored = store_->LoadAll();
  if (!stored.ok()) return stored.status();
  uint64_t max_lsn = 0;
  for (StoredModel& s : *stored) {
    auto entry = std::make_shared<Entry>();
    entry->stored = true;
    if (s.snapshot.ok()) {
      max_lsn = std::max(max_lsn, s.snapshot->lsn);
      entry->saved_lsn = s.snapshot->lsn;
      absl::StatusOr<std::unique_ptr<Model>> model =
          Model::Restore(*std::move(s.snapshot), budget_);
      if (model.ok()) {
        entry->model = *std::move(model);
        if (IsReplicated(entry->model->spec())) {
          entry->replication = std::make_unique<const Replication>(
              entry->model->spec().replication);
        }
        entry->saved_generation = entry->model->generation();
      } else {
        FallBack(
            s.name,
            absl::DataLossError(absl::StrCat("its stored state is invalid: ",
                                             model.status().message())),
            *entry);
      }
    } else {
      FallBack(s.name, s.snapshot.status(), *entry);
    }
    if (entry->model != nullptr) max_lsn = std::max(max_lsn, entry->saved_lsn);
    Insert(s.name, std::move(entry));
  }
  absl::StatusOr<AliasMap> aliases = store_->LoadAliases();
  if (!aliases.ok()) return aliases.status();
  WriterMutexLock lock(mu_);
  aliases_ = *std::move(aliases);
  return max_lsn;
}

void ModelRegistry::FallBack(const std::string& name,
                             const absl::Status& reason, Entry& entry) {
  entry.unavailable = reason;
  entry.saved_lsn = 0;
  absl::StatusOr<ModelSnapshot> previous = store_->LoadPrevious(name);
  if (!previous.ok()) return;
  const uint64_t lsn = previous->lsn;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Restore(*std::move(previous), budget_);
  if (!model.ok()) return;
  entry.model = *std::move(model);
  entry.saved_lsn = entry.previous_lsn = lsn;
  entry.has_previous = true;
  entry.recovered().fallback_from = lsn + 1;
}

std::vector<std::string> ModelRegistry::StartReplay(uint64_t first_lsn) {
  std::vector<std::string> recovered;
  WriterMutexLock lock(mu_);
  for (auto& [name, entry] : entries_) {
    if (entry->recovery == nullptr || entry->recovery->fallback_from == 0) {
      continue;
    }
    const uint64_t fallback_from = entry->recovery->fallback_from;
    const bool complete = first_lsn != 0 && first_lsn <= fallback_from;
    absl::Status aside = complete ? store_->SetAside(name) : absl::OkStatus();
    if (complete && aside.ok()) {
      entry->unavailable = absl::OkStatus();
      entry->stored = false;
      recovered.push_back(name);
    } else {
      entry->restorable = true;
      entry->unavailable = absl::DataLossError(absl::StrCat(
          entry->unavailable.message(), "; its previous snapshot (LSN ",
          fallback_from - 1,
          ") lacks later changes the log no longer holds: RestoreModel "
          "rolls the model back to it"));
    }
    entry->recovery->fallback_from = 0;
  }
  return recovered;
}

void ModelRegistry::Replay(uint64_t lsn, absl::string_view model,
                           absl::string_view payload, const TrainReplay& train,
                           const ExamplesOf& examples) {
  absl::StatusOr<storage::v1::LogRecord> record = DecodeRecord(payload);
  std::shared_ptr<Entry> entry = Find(model);
  // The log holds no change of a replicated model: its records are of an
  // earlier model of the name, which the replica's creation ended.
  if (entry != nullptr && entry->replication != nullptr) return;
  if (entry != nullptr && !entry->unavailable.ok()) {
    // A deletion ends the model whatever it was, unless its state is of a
    // later model of the name (created after this record).
    if (record.ok() && record->has_delete_()) {
      if (entry->model == nullptr || entry->model->lsn() < lsn) {
        WriterMutexLock lock(mu_);
        entries_.erase(model);
      }
      return;
    }
    // Its other changes wait for the operator, but a roll-back replaces it.
    if (!(record.ok() && record->has_restore())) {
      Recovery& recovery = entry->recovered();
      recovery.skipped_changes += 1;
      if (record.ok() && record->has_train() && examples) {
        recovery.skipped_examples += examples(record->train().request());
      }
      if (record.ok() && record->has_feedback()) {
        recovery.skipped_examples += record->feedback().labels_size();
      }
      return;
    }
  }
  absl::Status s =
      record.ok() ? ApplyRecord(lsn, model, *record, train) : record.status();
  if (!s.ok()) {
    MarkUnavailable(model,
                    absl::DataLossError(
                        absl::StrCat("log record ", lsn, ": ", s.message())),
                    lsn);
  }
}

void ModelRegistry::FinishReplay() {
  WriterMutexLock lock(mu_);
  for (auto& [name, entry] : entries_) {
    if (entry->unavailable.ok() || !entry->restorable ||
        entry->recovery == nullptr || !entry->recovery->log_damaged) {
      continue;
    }
    const Recovery& recovery = *entry->recovery;
    const std::string damaged =
        recovery.damaged_lsn != 0
            ? absl::StrCat("the damaged record (LSN ", recovery.damaged_lsn,
                           "; what it held cannot be read, so neither can "
                           "its examples be counted)")
            : std::string("whatever the damaged bytes held");
    entry->unavailable = absl::Status(
        entry->unavailable.code(),
        absl::StrCat(entry->unavailable.message(),
                     ". RestoreModel rolls it back to its state before the "
                     "damage (LSN ",
                     entry->model->lsn(), "), giving up ", damaged, " and ",
                     recovery.skipped_changes,
                     " later change(s) of the model (",
                     recovery.skipped_examples, " example(s) trained)"));
  }
}

namespace {

// Replays a logged Train batch on `model`: the batch as it was first
// learned (source, refusals, ids, pending clock and limits, peers'
// outcomes), the examples decoded by `train`.
absl::Status ReplayTrain(Model& model, const storage::v1::TrainBatch& logged,
                         const Trainer& trainer,
                         const ModelRegistry::TrainReplay& train) {
  TrainBatch batch;
  batch.source = logged.source();
  batch.first_sequence = logged.first_sequence();
  batch.follows = logged.follows();
  batch.request = logged.request();
  const std::vector<std::string> ids(logged.example_ids().begin(),
                                     logged.example_ids().end());
  batch.example_ids = ids;
  batch.now_micros = logged.now_micros() != 0 ? logged.now_micros()
                                              : logged.pending().now_micros();
  batch.pending_limits = LimitsOf(logged.pending());
  std::vector<PeerOutcomes> peers;
  for (const storage::v1::PeerOutcomes& peer : logged.peers()) {
    peers.push_back({peer.model(),
                     peer.incarnation(),
                     {reinterpret_cast<const uint8_t*>(peer.outcomes().data()),
                      peer.outcomes().size()}});
  }
  batch.peers = peers;
  batch.refused.assign(logged.refused().begin(), logged.refused().end());
  return train(model, batch, trainer);
}

// Replays a logged batch of delayed feedback on `model`: its ids, labels,
// refusals and pending clock and limits; the examples made by `train` of
// the features the model remembers.
absl::Status ReplayFeedback(Model& model,
                            const storage::v1::FeedbackBatch& logged,
                            const Trainer& trainer,
                            const ModelRegistry::TrainReplay& train) {
  std::vector<Feedback> feedback;
  for (const storage::v1::FeedbackLabel& label : logged.labels()) {
    feedback.push_back({label.example_id(), label.label(), label.class_label(),
                        label.has_weight()
                            ? std::optional<double>(label.weight())
                            : std::nullopt});
  }
  TrainBatch batch;
  batch.feedback = feedback;
  batch.now_micros = logged.pending().now_micros();
  batch.pending_limits = LimitsOf(logged.pending());
  batch.refused.assign(logged.refused().begin(), logged.refused().end());
  return train(model, batch, trainer);
}

// Replays remembering examples for feedback, at the logged clock.
absl::Status ReplayRemember(Model& model, storage::v1::Remember& change,
                            const Trainer& trainer) {
  std::vector<PendingExamples::Entry> entries;
  for (storage::v1::PendingExample& e : *change.mutable_examples()) {
    entries.push_back(FromStored(e));
  }
  return trainer
      .Remember(model, std::move(entries), change.context().now_micros(),
                LimitsOf(change.context()))
      .status();
}

absl::Status ReplaySetWeights(Model& model,
                              const storage::v1::SetWeights& change,
                              Journal& journal) {
  return model.SetClassWeights(
      change.class_label(),
      {change.weights().w().begin(), change.weights().w().end()},
      change.weights().b(), AppendTo(&journal, model.name(), "", nullptr));
}

}  // namespace

absl::Status ModelRegistry::ApplyRecord(uint64_t lsn, absl::string_view name,
                                        storage::v1::LogRecord& record,
                                        const TrainReplay& train) {
  std::shared_ptr<Entry> entry = Find(name);
  if (record.has_create() || record.has_restore()) {
    return ApplyState(lsn, name, entry,
                      record.has_create() ? *record.mutable_create()
                                          : *record.mutable_restore(),
                      record.has_create());
  }
  // The model was deleted later, or its snapshot holds this record.
  if (entry == nullptr || entry->model->lsn() >= lsn) return absl::OkStatus();
  Model& model = *entry->model;
  ReplayJournal journal(lsn);
  const Trainer trainer(&journal);
  switch (record.change_case()) {
    case storage::v1::LogRecord::kTrain:
      return ReplayTrain(model, record.train(), trainer, train);
    case storage::v1::LogRecord::kFeedback:
      return ReplayFeedback(model, record.feedback(), trainer, train);
    case storage::v1::LogRecord::kRemember:
      return ReplayRemember(model, *record.mutable_remember(), trainer);
    case storage::v1::LogRecord::kSetWeights:
      return ReplaySetWeights(model, record.set_weights(), journal);
    case storage::v1::LogRecord::kRollBack: {
      // A replicated model's roll-back is checked before it is published,
      // but a second one may race it onto the stream: where nothing is
      // kept, every replica alike lets it pass as a no-op.
      absl::Status s =
          model.RollBack(AppendTo(&journal, model.name(), "", nullptr));
      return absl::IsFailedPrecondition(s) ? absl::OkStatus() : s;
    }
    case storage::v1::LogRecord::kSetDrift:
      return model.SetDrift(DriftOf(record.set_drift()),
                            AppendTo(&journal, model.name(), "", nullptr));
    case storage::v1::LogRecord::kDelete: {
      absl::Status s = model.MarkDeleted(AppendTo(&journal, name, "", nullptr));
      if (!s.ok()) return s;
      {
        WriterMutexLock lock(mu_);
        entries_.erase(name);
      }
      return store_->Remove(name);
    }
    default:
      return absl::DataLossError("an unknown change");
  }
}

absl::Status ModelRegistry::ApplyState(uint64_t lsn, absl::string_view name,
                                       const std::shared_ptr<Entry>& entry,
                                       storage::v1::ModelFile& file,
                                       bool creates) {
  const bool available = entry != nullptr && entry->unavailable.ok();
  if (available && entry->model->lsn() >= lsn) return absl::OkStatus();
  if (entry != nullptr && creates) {
    return absl::DataLossError("creates a model that already exists");
  }
  absl::StatusOr<std::unique_ptr<Model>> model =
      ModelFromRecord(lsn, name, file);
  if (!model.ok()) return model.status();
  auto replaced = std::make_shared<Entry>();
  replaced->model = *std::move(model);
  if (entry != nullptr) {  // a roll-back: the files stay as they are
    replaced->stored = entry->stored;
    replaced->has_previous = entry->has_previous;
    replaced->previous_lsn = entry->previous_lsn;
  }
  Insert(std::string(name), std::move(replaced));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> ModelRegistry::ModelFromRecord(
    uint64_t lsn, absl::string_view name, storage::v1::ModelFile& file) {
  absl::StatusOr<ModelSnapshot> snapshot = FromModelFile(std::move(file));
  if (!snapshot.ok()) return snapshot.status();
  snapshot->name = std::string(name);
  snapshot->lsn = lsn;
  // A record that creates a fresh model holds no weights (see Create).
  const bool fresh =
      snapshot->weights.w.empty() &&
      std::all_of(snapshot->class_weights.begin(),
                  snapshot->class_weights.end(),
                  [](const LinearWeights& w) { return w.w.empty(); });
  if (!fresh) return Model::Restore(*std::move(snapshot), budget_);
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(snapshot->name, snapshot->spec, snapshot->classes, budget_,
                    snapshot->incarnation);
  if (!model.ok()) return model.status();
  ReplayJournal journal(lsn);
  absl::Status s =
      (*model)->RecordCreation(AppendTo(&journal, name, "", nullptr));
  if (!s.ok()) return s;
  return model;
}

bool ModelRegistry::MarkUnavailable(absl::string_view model,
                                    const absl::Status& reason, uint64_t lsn) {
  WriterMutexLock lock(mu_);
  auto mark = [&](Entry& entry) {
    if (!entry.unavailable.ok()) return;
    entry.unavailable = reason;
    entry.recovered().log_damaged = true;
    entry.recovered().damaged_lsn = lsn;
    // What the model holds is its state before the damage.
    entry.restorable = entry.model != nullptr;
  };
  if (model.empty()) {
    for (auto& [name, entry] : entries_) mark(*entry);
    return true;
  }
  std::shared_ptr<Entry>& entry = entries_[model];
  if (entry == nullptr) {
    entry = std::make_shared<Entry>();
  } else if (lsn != 0 && entry->model != nullptr && entry->unavailable.ok() &&
             entry->model->lsn() >= lsn) {
    return false;  // its snapshot holds the record (or it is a later model)
  }
  mark(*entry);
  return true;
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Create(
    absl::string_view name, const ModelSpec& spec,
    const std::vector<std::string>& classes, uint64_t* lsn) {
  if (absl::Status s = CheckRoomForModel(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(std::string(name), spec, classes, budget_);
  if (!model.ok()) return model.status();
  const std::string record = FreshRecord(**model);
  return Add(*std::move(model), record, lsn);
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Import(
    absl::string_view name, absl::string_view file, uint64_t* lsn) {
  absl::StatusOr<ModelSnapshot> decoded = DecodeSnapshot(file);
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_file is not a model file this server reads: ",
                     decoded.status().message()));
  }
  ModelSnapshot snapshot = *std::move(decoded);
  snapshot.name = std::string(name);
  if (absl::Status s = ValidateModelName(snapshot.name); !s.ok()) return s;
  snapshot.lsn = 0;
  snapshot.spec.replication =
      Replication();  // an import is this server's alone
  if (absl::Status s = CheckRoomForModel(); !s.ok()) return s;
  const std::string record = CreateRecord(snapshot);
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Restore(std::move(snapshot), budget_);
  if (absl::IsResourceExhausted(model.status())) return model.status();
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model file's state does not fit its spec: ",
                     model.status().message()));
  }
  return Add(*std::move(model), record, lsn);
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Add(
    std::unique_ptr<Model> model, const std::string& record, uint64_t* lsn) {
  const std::string name = model->name();
  MutexLock io_lock(io_mu_);
  if (Find(name) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("model ", Quoted(name), " already exists"));
  }
  if (ReaderMutexLock lock(mu_);
      const std::string* target = AliasTarget(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat(Quoted(name), " is an alias (of model ", Quoted(*target),
                     "); choose another name"));
  }
  if (absl::Status s = CheckRoomForModel(); !s.ok()) return s;
  auto entry = std::make_shared<Entry>();
  entry->model = std::move(model);
  if (journal_ != nullptr) {
    absl::Status s =
        entry->model->RecordCreation(AppendTo(journal_, name, record, lsn));
    if (!s.ok()) return s;
  } else if (absl::Status s = SaveLocked(*entry); !s.ok()) {
    return s;
  }
  Insert(name, entry);
  return entry->model;
}

absl::Status ModelRegistry::CheckRoomForModel() const {
  const int64_t limit = budget_->limits().max_models;
  ReaderMutexLock lock(mu_);
  const int64_t models = entries_.size();
  if (!budget_->enforcing() || models < limit) return absl::OkStatus();
  return LimitExceeded(
      absl::StrCat("the server holds ", models, " models; delete one first"),
      limit, "max_models");
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Get(
    absl::string_view name) const {
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  if (!entry->unavailable.ok()) return Unavailable(name, entry->unavailable);
  return entry->model;
}

std::vector<std::shared_ptr<Model>> ModelRegistry::List() const {
  std::vector<std::shared_ptr<Model>> models;
  for (Listing& listing : ListAll()) {
    if (listing.unavailable.ok()) models.push_back(std::move(listing.model));
  }
  return models;
}

std::vector<Listing> ModelRegistry::ListAll() const {
  std::vector<Listing> listings;
  {
    ReaderMutexLock lock(mu_);
    listings.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) {
      if (entry->unavailable.ok()) {
        listings.push_back({name, entry->model, absl::OkStatus()});
      } else {
        listings.push_back({name, nullptr, entry->unavailable});
      }
    }
  }
  std::sort(listings.begin(), listings.end(),
            [](const Listing& a, const Listing& b) { return a.name < b.name; });
  return listings;
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Lookup(
    absl::string_view name) const {
  std::shared_ptr<Entry> entry;
  absl::string_view model = name;
  {
    ReaderMutexLock lock(mu_);
    const std::string* target = AliasTarget(name);
    if (target != nullptr) model = *target;
    auto it = entries_.find(model);
    if (it != entries_.end()) entry = it->second;
    if (entry == nullptr && target != nullptr) {
      return absl::NotFoundError(
          absl::StrCat("alias ", Quoted(name), " points to model ",
                       Quoted(model), ", which does not exist"));
    }
  }
  if (entry == nullptr) return NotFound(name);
  if (!entry->unavailable.ok()) return Unavailable(model, entry->unavailable);
  return entry->model;
}

const std::string* ModelRegistry::AliasTarget(absl::string_view name) const {
  if (auto it = aliases_.find(name); it != aliases_.end()) return &it->second;
  if (auto it = shared_aliases_.find(name); it != shared_aliases_.end()) {
    return &it->second;
  }
  return nullptr;
}

absl::Status CheckExpectedAlias(absl::string_view alias,
                                absl::string_view previous,
                                const std::optional<std::string>& expected) {
  if (!expected.has_value() || *expected == previous) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "alias ", Quoted(alias),
      previous.empty() ? " does not exist"
                       : absl::StrCat(" points to ", Quoted(previous)),
      ", not to ", expected->empty() ? "nothing" : Quoted(*expected),
      "; nothing changed"));
}

absl::Status ModelRegistry::CheckNewAlias(absl::string_view alias) const {
  if (absl::Status s = ValidateModelName(alias); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("alias: ", s.message()));
  }
  size_t held;
  {
    ReaderMutexLock lock(mu_);
    if (entries_.contains(alias)) {
      return absl::AlreadyExistsError(absl::StrCat("a model is named ",
                                                   Quoted(alias),
                                                   "; an alias needs a name of "
                                                   "its own"));
    }
    held = aliases_.size() + shared_aliases_.size();
  }
  const int64_t limit = budget_->limits().max_models;
  if (budget_->enforcing() && static_cast<int64_t>(held) >= limit) {
    return LimitExceeded(
        absl::StrCat("the server holds ", held, " aliases; delete one first"),
        limit, "max_models");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ModelRegistry::SetAlias(
    absl::string_view alias, absl::string_view model,
    const std::optional<std::string>& expected) {
  if (absl::Status s = ValidateModelName(alias); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("alias: ", s.message()));
  }
  MutexLock io_lock(io_mu_);
  AliasMap aliases;
  {
    ReaderMutexLock lock(mu_);
    if (auto shared = shared_aliases_.find(alias);
        shared != shared_aliases_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "alias ", Quoted(alias),
          " is shared by every server (it points to replicated model ",
          Quoted(shared->second),
          "): point it at a replicated model, or delete it first"));
    }
    if (entries_.contains(alias)) {
      return absl::AlreadyExistsError(absl::StrCat("a model is named ",
                                                   Quoted(alias),
                                                   "; an alias needs a name of "
                                                   "its own"));
    }
    auto target = entries_.find(model);
    if (target == entries_.end()) {
      const std::string* chained = AliasTarget(model);
      if (chained == nullptr) return NotFound(model);
      return absl::InvalidArgumentError(
          absl::StrCat(Quoted(model),
                       " is an alias, and an alias points to a model, never "
                       "to another alias (one name, one lookup); point ",
                       Quoted(alias), " at model ", Quoted(*chained)));
    }
    aliases = aliases_;
  }
  auto it = aliases.find(alias);
  std::string previous = it == aliases.end() ? "" : it->second;
  if (absl::Status s = CheckExpectedAlias(alias, previous, expected); !s.ok()) {
    return s;
  }
  if (previous.empty()) {
    if (absl::Status s = CheckNewAlias(alias); !s.ok()) return s;
  }
  aliases[std::string(alias)] = std::string(model);
  // The model's creation is durable before anything points to it.
  if (journal_ != nullptr) {
    if (std::shared_ptr<Entry> entry = Find(model);
        entry != nullptr && entry->model != nullptr) {
      journal_->WaitDurable(entry->model->lsn());
    }
  }
  if (absl::Status s = store_->SaveAliases(aliases); !s.ok()) return s;
  WriterMutexLock lock(mu_);
  aliases_ = std::move(aliases);
  return previous;
}

absl::StatusOr<std::string> ModelRegistry::DeleteAlias(
    absl::string_view alias) {
  MutexLock io_lock(io_mu_);
  AliasMap aliases;
  {
    ReaderMutexLock lock(mu_);
    aliases = aliases_;
  }
  auto it = aliases.find(alias);
  if (it == aliases.end()) {
    return absl::NotFoundError(
        absl::StrCat("alias ", Quoted(alias), " does not exist"));
  }
  std::string model = std::move(it->second);
  aliases.erase(it);
  if (absl::Status s = store_->SaveAliases(aliases); !s.ok()) return s;
  WriterMutexLock lock(mu_);
  aliases_ = std::move(aliases);
  return model;
}

absl::Status ModelRegistry::PutSharedAlias(absl::string_view alias,
                                           absl::string_view model) {
  MutexLock io_lock(io_mu_);
  AliasMap aliases;
  {
    ReaderMutexLock lock(mu_);
    if (entries_.contains(alias)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a model of this server is named ", Quoted(alias),
          ", so the shared alias of the name (of replicated model ",
          Quoted(model), ") does not hold here"));
    }
    aliases = aliases_;
  }
  // This server's alias of the name gives way.
  if (auto own = aliases.find(alias); own != aliases.end()) {
    aliases.erase(own);
    if (absl::Status s = store_->SaveAliases(aliases); !s.ok()) return s;
  }
  WriterMutexLock lock(mu_);
  aliases_ = std::move(aliases);
  shared_aliases_[std::string(alias)] = std::string(model);
  return absl::OkStatus();
}

void ModelRegistry::DropSharedAlias(absl::string_view alias) {
  WriterMutexLock lock(mu_);
  if (auto it = shared_aliases_.find(alias); it != shared_aliases_.end()) {
    shared_aliases_.erase(it);
  }
}

AliasMap ModelRegistry::SharedAliases() const {
  ReaderMutexLock lock(mu_);
  return shared_aliases_;
}

std::vector<std::string> ModelRegistry::AliasesOf(
    absl::string_view model) const {
  std::vector<std::string> out;
  for (const auto& [alias, target] : Aliases()) {
    if (target == model) out.push_back(alias);
  }
  return out;
}

absl::Status ModelRegistry::CheckUnaliased(absl::string_view model) const {
  const std::vector<std::string> aliases = AliasesOf(model);
  if (aliases.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("alias ", Quoted(aliases.front()), " points to model ",
                   Quoted(model), "; move or delete the alias first"));
}

AliasMap ModelRegistry::Aliases() const {
  ReaderMutexLock lock(mu_);
  AliasMap all = aliases_;
  for (const auto& [alias, model] : shared_aliases_) all[alias] = model;
  return all;
}

absl::Status ModelRegistry::Delete(absl::string_view name, uint64_t* lsn) {
  MutexLock io_lock(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  if (entry->unavailable.ok()) {
    if (absl::Status s = CheckLocal(*entry, name); !s.ok()) return s;
  }
  if (absl::Status s = CheckUnaliased(name); !s.ok()) return s;
  const std::string record = DeleteRecord();
  if (entry->model != nullptr) {
    absl::Status s =
        entry->model->MarkDeleted(AppendTo(journal_, name, record, lsn));
    if (!s.ok()) return s;
  } else if (journal_ != nullptr) {
    // An unavailable model with no state still had records: the deletion
    // is logged, so that recovery never applies them again.
    absl::StatusOr<uint64_t> logged = journal_->Append(name, record);
    if (!logged.ok()) return logged.status();
    if (lsn != nullptr) *lsn = *logged;
  }
  {
    WriterMutexLock lock(mu_);
    entries_.erase(name);
  }
  return store_->Remove(name);
}

absl::Status ModelRegistry::SetWeights(absl::string_view name,
                                       absl::string_view class_label,
                                       std::vector<double> w, double b,
                                       uint64_t* lsn) {
  absl::StatusOr<std::shared_ptr<Model>> model = Get(name);
  if (!model.ok()) return model.status();
  if (IsReplicated((*model)->spec())) {
    return CheckLocal(*Find(name), name);
  }
  const std::string record =
      journal_ != nullptr ? SetWeightsRecord(class_label, w, b) : "";
  return (*model)->SetClassWeights(class_label, std::move(w), b,
                                   AppendTo(journal_, name, record, lsn));
}

absl::Status ModelRegistry::RollBack(absl::string_view name, uint64_t* lsn) {
  absl::StatusOr<std::shared_ptr<Model>> model = Get(name);
  if (!model.ok()) return model.status();
  if (IsReplicated((*model)->spec())) {
    return CheckLocal(*Find(name), name);
  }
  const std::string record = journal_ != nullptr ? RollBackRecord() : "";
  return (*model)->RollBack(AppendTo(journal_, name, record, lsn));
}

absl::Status ModelRegistry::SetDrift(absl::string_view name,
                                     const DriftOptions& drift, uint64_t* lsn) {
  absl::StatusOr<std::shared_ptr<Model>> model = Get(name);
  if (!model.ok()) return model.status();
  if (IsReplicated((*model)->spec())) {
    return CheckLocal(*Find(name), name);
  }
  const std::string record = journal_ != nullptr ? SetDriftRecord(drift) : "";
  return (*model)->SetDrift(drift, AppendTo(journal_, name, record, lsn));
}

absl::Status ModelRegistry::RestorePrevious(absl::string_view name,
                                            uint64_t* lsn) {
  MutexLock io_lock(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  if (entry->unavailable.ok() || !entry->restorable) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", Quoted(name),
        entry->unavailable.ok()
            ? " is available; only an unavailable model is rolled back"
            : " has no state to roll back to: no snapshot of it reads back, "
              "and its log is damaged from its first change on; delete it, "
              "then import a backup under its name"));
  }
  if (absl::Status s = store_->SetAside(name); !s.ok()) return s;
  entry->stored = false;
  if (journal_ != nullptr) {
    const std::string record = RestoreRecord(entry->model->Snapshot());
    absl::Status s =
        entry->model->RecordCreation(AppendTo(journal_, name, record, lsn));
    if (!s.ok()) return s;
  } else if (absl::Status s = SaveLocked(*entry); !s.ok()) {
    return s;
  }
  WriterMutexLock lock(mu_);
  entry->unavailable = absl::OkStatus();
  entry->restorable = false;
  return absl::OkStatus();
}

absl::Status ModelRegistry::SaveChanged() {
  MutexLock io_lock(io_mu_);
  std::vector<std::shared_ptr<Entry>> entries;
  {
    ReaderMutexLock lock(mu_);
    for (const auto& [name, entry] : entries_) {
      if (entry->unavailable.ok()) entries.push_back(entry);
    }
  }
  absl::Status first_error;
  for (const std::shared_ptr<Entry>& entry : entries) {
    // lsn() waits for a change in progress, so a change logged before this
    // call is in the snapshot, or the model counts as changed next time.
    if (entry->model->lsn() == entry->saved_lsn &&
        entry->model->generation() == entry->saved_generation) {
      continue;
    }
    first_error.Update(SaveLocked(*entry));
  }
  return first_error;
}

uint64_t ModelRegistry::DroppableLog(uint64_t covered) const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    ReaderMutexLock lock(mu_);
    for (const auto& [name, entry] : entries_) entries.push_back(entry);
  }
  MutexLock io_lock(io_mu_);
  uint64_t droppable = covered;
  for (const std::shared_ptr<Entry>& entry : entries) {
    if (entry->replication != nullptr) continue;  // not in the log
    const bool log_only =
        !entry->unavailable.ok() || entry->model->lsn() > entry->saved_lsn;
    if (log_only) droppable = std::min(droppable, entry->saved_lsn);
    // Keep what a fall-back to the previous snapshot would replay.
    if (entry->has_previous) {
      droppable = std::min(droppable, entry->previous_lsn);
    }
  }
  return droppable;
}

absl::Status ModelRegistry::SaveLocked(Entry& entry) {
  // Read the generation first: a change racing with the snapshot leaves the
  // entry marked changed, so the next SaveChanged stores it again.
  const uint64_t generation = entry.model->generation();
  const ModelSnapshot snapshot = entry.model->Snapshot();
  // A replica's records are durable in its stream before they apply.
  if (journal_ != nullptr && entry.replication == nullptr) {
    journal_->WaitDurable(snapshot.lsn);
  }
  if (!Finite(snapshot)) {
    return absl::DataLossError(absl::StrCat(
        "model ", Quoted(snapshot.name),
        " has weights that are not finite; its stored state is kept as it "
        "was"));
  }
  absl::Status s = store_->Save(snapshot);
  if (s.ok()) {
    if (entry.stored) {  // the replaced file became the previous snapshot
      entry.has_previous = true;
      entry.previous_lsn = entry.saved_lsn;
    }
    entry.stored = true;
    entry.saved_generation = generation;
    entry.saved_lsn = snapshot.lsn;
  }
  return s;
}

absl::Status ModelRegistry::CheckLocal(const Entry& entry,
                                       absl::string_view name) {
  if (entry.replication == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("model ", Quoted(name), " is replicated (stream ",
                   Quoted(entry.replication->stream),
                   "); its changes go through the stream"));
}

absl::StatusOr<std::string> ModelRegistry::CreationRecord(
    absl::string_view name, const ModelSpec& spec,
    const std::vector<std::string>& classes) const {
  if (absl::Status s = CheckRoomForModel(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(std::string(name), spec, classes, budget_);
  if (!model.ok()) return model.status();
  return FreshRecord(**model);
}

absl::StatusOr<std::pair<uint64_t, std::string>> ModelRegistry::ReplicaFile(
    absl::string_view name) const {
  absl::StatusOr<std::shared_ptr<Model>> model = Get(name);
  if (!model.ok()) return model.status();
  if (!IsReplicated((*model)->spec())) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", Quoted(name), " is not replicated"));
  }
  const ModelSnapshot snapshot = (*model)->Snapshot();
  return std::make_pair(snapshot.lsn, EncodeSnapshot(snapshot));
}

absl::Status ModelRegistry::InstallReplica(uint64_t position,
                                           absl::string_view name,
                                           absl::string_view file,
                                           const Replication& replication) {
  absl::StatusOr<ModelSnapshot> snapshot = DecodeSnapshot(file);
  if (!snapshot.ok()) return snapshot.status();
  if (snapshot->spec.replication.creation != replication.creation) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the snapshot is of an earlier model named ", Quoted(name)));
  }
  snapshot->name = std::string(name);
  snapshot->spec.replication = replication;
  // A creation that carries the whole state: applied as the stream's
  // creations are, it replaces what this server holds of the model.
  return ApplyReplicated(
      position, name, replication.creation, CreateRecord(*snapshot),
      [](Model&, TrainBatch&, const Trainer&) {
        return absl::InternalError("a snapshot holds no training");
      });
}

namespace {

// Whether a change refused with `status` changed nothing and is refused
// wherever it applies to the same state: not for want of what only this
// server lacks (the memory all its models share), nor for damage.
bool RefusedAlike(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAborted:
      return true;
    case absl::StatusCode::kResourceExhausted:
      return LimitOf(status) != "max_total_model_bytes";
    default:
      return false;
  }
}

}  // namespace

absl::Status ModelRegistry::ApplyReplicated(uint64_t sequence,
                                            absl::string_view name,
                                            absl::string_view creation,
                                            absl::string_view payload,
                                            const TrainReplay& train) {
  absl::StatusOr<storage::v1::LogRecord> record = DecodeRecord(payload);
  if (record.ok() && record->has_create() &&
      record->create().replication().creation() != creation) {
    return absl::OkStatus();  // an earlier model's, left in the stream
  }
  const bool state =
      record.ok() &&
      (record->has_create() || record->has_restore() || record->has_delete_());
  // Creations and deletions are serialized with snapshots and other
  // servers' calls; training only takes the model's lock.
  std::optional<MutexLock> io_lock;
  if (state) io_lock.emplace(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry != nullptr && entry->replication == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("a model of this server alone is named ", Quoted(name)));
  }
  const bool creates = record.ok() && record->has_create();
  if (entry != nullptr && !creates &&
      (!entry->unavailable.ok() || entry->model->lsn() >= sequence)) {
    return absl::OkStatus();
  }
  if (entry == nullptr && !creates) return absl::OkStatus();
  absl::Status s = record.status();
  if (s.ok() && creates && entry != nullptr) {
    if (entry->model != nullptr && entry->model->lsn() >= sequence) {
      return absl::OkStatus();
    }
    // A later model of the name: the earlier one ends here.
    if (entry->model != nullptr) entry->model->MarkDeleted().IgnoreError();
    WriterMutexLock lock(mu_);
    entries_.erase(name);
  }
  std::optional<Replication> created;  // read before the record is taken
  if (s.ok() && creates) {
    created = ReplicationOf(record->create().replication());
  }
  if (s.ok()) s = ApplyRecord(sequence, name, *record, train);
  // A change refused as a whole for what the record and the model hold is
  // refused by every replica alike: the replica goes on without it.
  if (!s.ok() && record.ok() && !state && RefusedAlike(s)) return s;
  if (s.ok()) {
    if (std::shared_ptr<Entry> applied = Find(name); applied != nullptr) {
      if (IsReplicated(applied->model->spec())) {
        applied->replication = std::make_unique<const Replication>(
            applied->model->spec().replication);
      }
    }
    return absl::OkStatus();
  }
  s = absl::Status(s.code(),
                   absl::StrCat("stream record ", sequence, ": ", s.message()));
  WriterMutexLock lock(mu_);
  std::shared_ptr<Entry>& marked = entries_[name];
  if (marked == nullptr) marked = std::make_shared<Entry>();
  if (marked->replication == nullptr && created.has_value()) {
    marked->replication = std::make_unique<const Replication>(*created);
  }
  if (marked->unavailable.ok()) marked->unavailable = s;
  return s;
}

void ModelRegistry::DropReplica(absl::string_view name) {
  MutexLock io_lock(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr || entry->replication == nullptr) return;
  if (entry->model != nullptr) entry->model->MarkDeleted().IgnoreError();
  {
    WriterMutexLock lock(mu_);
    entries_.erase(name);
  }
  store_->Remove(name).IgnoreError();
}

std::vector<ModelRegistry::Replica> ModelRegistry::Replicas() const {
  std::vector<Replica> replicas;
  ReaderMutexLock lock(mu_);
  for (const auto& [name, entry] : entries_) {
    if (entry->replication == nullptr) continue;
    const bool has_state = entry->model != nullptr;
    replicas.push_back({name, *entry->replication,
                        has_state ? entry->model->lsn() : 0,
                        entry->unavailable.ok()});
  }
  std::sort(replicas.begin(), replicas.end(),
            [](const Replica& a, const Replica& b) { return a.name < b.name; });
  return replicas;
}

void ModelRegistry::Insert(const std::string& name,
                           std::shared_ptr<Entry> entry) {
  const Model* const model = entry->model.get();
  std::shared_ptr<Entry> replaced;
  {
    WriterMutexLock lock(mu_);
    replaced = std::exchange(entries_[name], std::move(entry));
  }
  // Whoever watches the model it replaces must watch this one instead.
  if (replaced != nullptr && replaced->model != nullptr &&
      replaced->model.get() != model) {
    replaced->model->events().Close(absl::AbortedError(absl::StrCat(
        "model ", Quoted(name),
        " was replaced (restored, imported or rebuilt from its replicas); "
        "watch it again from the last position seen")));
  }
}

std::shared_ptr<ModelRegistry::Entry> ModelRegistry::Find(
    absl::string_view name) const {
  ReaderMutexLock lock(mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second;
}

}  // namespace halfspace
