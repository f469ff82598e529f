#include "core/registry/data_directory.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/files.h"
#include "core/storage/directory_lock.h"
#include "core/storage/file_model_store.h"
#include "core/storage/write_ahead_log.h"

namespace halfspace {

DataDirectory::DataDirectory(const std::string& dir,
                             std::unique_ptr<DirectoryLock> lock,
                             std::unique_ptr<FileModelStore> store)
    : dir_(dir), lock_(std::move(lock)), store_(std::move(store)) {}

DataDirectory::~DataDirectory() = default;

absl::StatusOr<std::unique_ptr<DataDirectory>> DataDirectory::Open(
    const std::string& dir) {
  // Lock the directory before touching anything in it.
  if (absl::Status s = CreateDirectory(dir); !s.ok()) return s;
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    // Typically a volume mounted from the host, owned by another user.
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory ", dir,
        " is not writable by this "
        "process (uid ",
        getuid(), "): ", std::strerror(errno),
        "; make that user its owner (a container's volume: chown it to the "
        "image's user), or give another --data_dir"));
  }
  absl::StatusOr<std::unique_ptr<DirectoryLock>> lock =
      DirectoryLock::Acquire(dir);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::unique_ptr<FileModelStore>> store =
      FileModelStore::Open(dir);
  if (!store.ok()) return store.status();
  return std::unique_ptr<DataDirectory>(
      new DataDirectory(dir, *std::move(lock), *std::move(store)));
}

ModelStore* DataDirectory::store() { return store_.get(); }

absl::StatusOr<DataDirectory::Recovery> DataDirectory::Recover(
    ModelRegistry& registry, const LogOptions& log,
    const ModelRegistry::TrainReplay& train,
    const ModelRegistry::ExamplesOf& examples) {
  Recovery recovery;
  absl::StatusOr<uint64_t> snapshot_lsn = registry.Load();
  if (!snapshot_lsn.ok()) return snapshot_lsn.status();
  if (!log.enabled) {
    recovery.set_aside = registry.StartReplay(0);  // no log to replay
    return recovery;
  }
  WriteAheadLog::Options log_options;
  log_options.dir = (std::filesystem::path(dir_) / "wal").string();
  log_options.sync = log.sync;
  log_options.segment_bytes = log.segment_bytes;
  log_options.on_sync = log.on_sync;
  WriteAheadLog::Visitor visitor;
  visitor.start = [&](uint64_t first_lsn) {
    recovery.set_aside = registry.StartReplay(first_lsn);
  };
  visitor.record = [&](uint64_t lsn, absl::string_view model,
                       absl::string_view payload) {
    registry.Replay(lsn, model, payload, train, examples);
    ++recovery.records;
    return absl::OkStatus();
  };
  visitor.damage = [&](const WriteAheadLog::Damage& damage) {
    const bool applies = registry.MarkUnavailable(
        damage.key,
        absl::DataLossError(
            absl::StrCat("its log is damaged (", damage.where,
                         "); changes from there on are not applied")),
        damage.lsn);
    recovery.damages.push_back(
        {damage.key, damage.where, damage.kept, applies});
  };
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> opened =
      WriteAheadLog::Open(log_options, *snapshot_lsn, visitor);
  if (!opened.ok()) return opened.status();
  log_ = *std::move(opened);
  registry.FinishReplay();
  registry.set_journal(log_.get());
  return recovery;
}

absl::Status DataDirectory::Checkpoint(ModelRegistry& registry) {
  MutexLock lock(checkpoint_mu_);
  // Every record up to `covered` is applied to its model before the
  // snapshots are taken (a record is appended under its model's lock, and
  // a snapshot takes that lock).
  const uint64_t covered = log_ != nullptr ? log_->last_lsn() : 0;
  absl::Status status = registry.SaveChanged();
  if (log_ == nullptr) return status;
  // Models whose snapshot failed, or that are unavailable, keep their
  // records.
  status.Update(log_->Truncate(registry.DroppableLog(covered)));
  return status;
}

Journal* DataDirectory::journal() const { return log_.get(); }

int64_t DataDirectory::log_bytes() const {
  return log_ != nullptr ? log_->bytes_appended() : 0;
}

}  // namespace halfspace
