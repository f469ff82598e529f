// A ModelStore that keeps snapshot files in a directory, in the format of
// snapshot_codec.h: <dir>/<name>.model, the model's current snapshot;
// <name>.model.prev, the one before; <name>.model.set-aside-<time>, damaged
// ones an operator set aside; <dir>/aliases, the aliases (a CRC-32C of the
// rest, then a halfspace.storage.v1.Aliases), saved the same way.
//
// Saves are atomic: write <dir>/.<name>.model.tmp and fsync it, link the
// current file as the previous one, rename the new one over the current,
// fsync the directory. A crash mid-save leaves the old file and a stray
// temporary file, which Open removes.
//
// Not thread-safe (see ModelStore).

#ifndef HALFSPACE_CORE_STORAGE_FILE_MODEL_STORE_H_
#define HALFSPACE_CORE_STORAGE_FILE_MODEL_STORE_H_

#include <memory>
#include <string>

#include "core/storage/model_store.h"

namespace halfspace {

class FileModelStore final : public ModelStore {
 public:
  // Creates `dir` if missing and removes temporary files left by a crash.
  static absl::StatusOr<std::unique_ptr<FileModelStore>> Open(std::string dir);

  absl::Status Save(const ModelSnapshot& snapshot) override;
  absl::StatusOr<ModelSnapshot> LoadPrevious(absl::string_view name) override;
  absl::Status SetAside(absl::string_view name) override;
  absl::Status Remove(absl::string_view name) override;
  absl::StatusOr<std::vector<StoredModel>> LoadAll() override;
  absl::Status SaveAliases(const AliasMap& aliases) override;
  absl::StatusOr<AliasMap> LoadAliases() override;

  const std::string& dir() const { return dir_; }

 private:
  explicit FileModelStore(std::string dir) : dir_(std::move(dir)) {}

  std::string PathFor(absl::string_view name) const;
  // Links the current snapshot at `path`, if any, as the previous one.
  absl::Status KeepAsPrevious(const std::string& path);

  const std::string dir_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_FILE_MODEL_STORE_H_
