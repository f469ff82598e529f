// Where model snapshots persist: an interface, so the file store used today
// can be replaced by an embedded engine without touching the registry or the
// server. (Changes between snapshots go to the write-ahead log.)
//
// Thread safety: implementations need not be thread-safe; ModelRegistry
// serializes every call.

#ifndef HALFSPACE_CORE_STORAGE_MODEL_STORE_H_
#define HALFSPACE_CORE_STORAGE_MODEL_STORE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model_state.h"

namespace halfspace {

// Aliases by name, each with the model it points to.
using AliasMap = std::map<std::string, std::string, std::less<>>;

struct StoredModel {
  std::string name;
  absl::StatusOr<ModelSnapshot> snapshot;
};

class ModelStore {
 public:
  virtual ~ModelStore() = default;

  // Durably replaces the stored state of `snapshot.name`: after OK returns,
  // a crash leaves either this snapshot or, if Save failed, the previous one;
  // never a mix. The state it replaces is kept as the model's previous
  // snapshot.
  virtual absl::Status Save(const ModelSnapshot& snapshot) = 0;

  // The model's previous snapshot: NOT_FOUND if there is none, DATA_LOSS if
  // it cannot be read.
  virtual absl::StatusOr<ModelSnapshot> LoadPrevious(
      absl::string_view name) = 0;

  // Sets the model's current snapshot aside (kept under another name, never
  // read again), so that a damaged one is neither loaded nor overwritten.
  // OK if there is none.
  virtual absl::Status SetAside(absl::string_view name) = 0;

  // Durably forgets the model, its previous snapshot too; OK if it was not
  // stored. Files set aside stay.
  virtual absl::Status Remove(absl::string_view name) = 0;

  // Every stored model by name, each with its snapshot or why it cannot be
  // read (DATA_LOSS naming the file). Fails only when the store itself
  // cannot be read.
  virtual absl::StatusOr<std::vector<StoredModel>> LoadAll() = 0;

  // Durably replaces the stored aliases (alias -> model), atomically as
  // Save does.
  virtual absl::Status SaveAliases(const AliasMap& aliases) = 0;

  // The stored aliases; none if never saved. DATA_LOSS if they cannot be
  // read.
  virtual absl::StatusOr<AliasMap> LoadAliases() = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_MODEL_STORE_H_
