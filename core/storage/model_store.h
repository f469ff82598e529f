// Where models persist: an interface, so the file store used today can be
// replaced by a log-plus-snapshot store or an embedded engine without
// touching the registry or the server.
//
// Thread safety: implementations need not be thread-safe; ModelRegistry
// serializes every call.

#ifndef HALFSPACE_CORE_STORAGE_MODEL_STORE_H_
#define HALFSPACE_CORE_STORAGE_MODEL_STORE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"

namespace halfspace {

class ModelStore {
 public:
  virtual ~ModelStore() = default;

  // Durably replaces the stored state of `snapshot.name`: after OK returns,
  // a crash leaves either this snapshot or, if Save failed, the previous one;
  // never a mix.
  virtual absl::Status Save(const ModelSnapshot& snapshot) = 0;

  // Durably forgets the model; OK if it was not stored.
  virtual absl::Status Remove(absl::string_view name) = 0;

  // Every stored model. Fails, naming the culprit, if any is unreadable.
  virtual absl::StatusOr<std::vector<ModelSnapshot>> LoadAll() = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_MODEL_STORE_H_
