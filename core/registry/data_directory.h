// A server's data directory: locked for one process, the models' snapshots
// (FileModelStore) at its top and their write-ahead log in wal/. Opens the
// directory, recovers a registry from it (the snapshots, then the log), and
// checkpoints: snapshots the models that changed and drops the log segments
// the snapshots cover.
//
// Thread safety: Open and Recover from one thread, before serving;
// Checkpoint, journal() and log_bytes() from any thread after.

#ifndef HALFSPACE_CORE_REGISTRY_DATA_DIRECTORY_H_
#define HALFSPACE_CORE_REGISTRY_DATA_DIRECTORY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/registry/model_registry.h"
#include "core/training/journal.h"

namespace halfspace {

class DirectoryLock;
class FileModelStore;
class WriteAheadLog;

class DataDirectory {
 public:
  struct LogOptions {
    // Whether changes are logged at all; if not, they last from one
    // checkpoint to the next.
    bool enabled = true;
    // Whether a logged change counts as durable only once synced; if not,
    // once written.
    bool sync = true;
    // A log segment is closed and a new one started once it holds this
    // much.
    int64_t segment_bytes = int64_t{64} << 20;
    // Told how long each sync of the log took; may be empty.
    std::function<void(absl::Duration)> on_sync;
  };

  // A log record recovery could not read back.
  struct Damage {
    std::string model;     // its model's name; empty if unknown (any model's)
    std::string where;     // file and offset, and what is wrong
    std::string kept;      // the copy of the damaged bytes kept beside the log
    bool applies = false;  // false if the model's snapshot holds the record
  };

  // What recovery did.
  struct Recovery {
    uint64_t records = 0;  // log records replayed
    // Models whose damaged snapshot was set aside: recovered from their
    // previous snapshot and the log, nothing lost.
    std::vector<std::string> set_aside;
    std::vector<Damage> damages;
  };

  // Creates the directory if missing and locks it. FAILED_PRECONDITION for
  // a directory this process cannot write, or one another process holds.
  static absl::StatusOr<std::unique_ptr<DataDirectory>> Open(
      const std::string& dir);

  DataDirectory(const DataDirectory&) = delete;
  DataDirectory& operator=(const DataDirectory&) = delete;
  ~DataDirectory();

  // Where the registry stores its models.
  ModelStore* store();

  // Loads `registry`'s models from their snapshots and replays the log
  // over them, training with `train` (the decoder of logged requests, which
  // are the server's business); then logs the registry's changes as `log`
  // says.
  absl::StatusOr<Recovery> Recover(ModelRegistry& registry,
                                   const LogOptions& log,
                                   const ModelRegistry::TrainReplay& train,
                                   const ModelRegistry::ExamplesOf& examples);

  // Stores every model of `registry` that changed and drops the log that
  // the stored snapshots cover. One checkpoint at a time.
  absl::Status Checkpoint(ModelRegistry& registry);

  // The log changes go to; null before Recover, or if changes are not
  // logged.
  Journal* journal() const;

  // Bytes logged since recovery.
  int64_t log_bytes() const;

 private:
  DataDirectory(const std::string& dir, std::unique_ptr<DirectoryLock> lock,
                std::unique_ptr<FileModelStore> store);

  const std::string dir_;
  const std::unique_ptr<DirectoryLock> lock_;
  const std::unique_ptr<FileModelStore> store_;
  std::unique_ptr<WriteAheadLog> log_;  // set by Recover
  Mutex checkpoint_mu_;                 // one checkpoint at a time
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REGISTRY_DATA_DIRECTORY_H_
