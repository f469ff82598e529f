// The named models of one server, and their persistence.
//
// Thread safety: every method may be called concurrently. Lookups take a
// short lock on the name map only. Create, Delete, Save and SaveChanged are
// serialized with each other by a second lock held across store I/O, so a
// model's file is never written after it was deleted; lookups, training and
// predictions never wait for that I/O.
//
// Ownership: the registry shares each model with the callers that looked it
// up; a deleted model lives on until its last user lets go, but refuses to
// learn. The store must outlive the registry.

#ifndef HALFSPACE_CORE_MODEL_REGISTRY_H_
#define HALFSPACE_CORE_MODEL_REGISTRY_H_

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"
#include "core/storage/model_store.h"

namespace halfspace {

class ModelRegistry {
 public:
  explicit ModelRegistry(ModelStore* store) : store_(store) {}

  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Loads every stored model. Call once, before serving.
  absl::Status Load();

  // Creates and stores a fresh model (a multiclass one starting with
  // `classes`). INVALID_ARGUMENT for a bad name, spec or class,
  // ALREADY_EXISTS for a taken name.
  absl::StatusOr<std::shared_ptr<Model>> Create(
      absl::string_view name, const ModelSpec& spec,
      const std::vector<std::string>& classes = {});

  // NOT_FOUND for an unknown name.
  absl::StatusOr<std::shared_ptr<Model>> Get(absl::string_view name) const;

  // Every model, ordered by name.
  std::vector<std::shared_ptr<Model>> List() const;

  // Removes the model and its stored state; it stops learning at once.
  absl::Status Delete(absl::string_view name);

  // Stores one model now (e.g. after its weights were replaced).
  absl::Status Save(absl::string_view name);

  // Stores every model that changed since it was last stored. Returns the
  // first error, after trying them all.
  absl::Status SaveChanged();

 private:
  struct Entry {
    std::shared_ptr<Model> model;
    uint64_t saved_generation = 0;  // guarded by io_mu_
  };

  // REQUIRES: io_mu_ held.
  absl::Status SaveLocked(Entry& entry);
  std::shared_ptr<Entry> Find(absl::string_view name) const;

  ModelStore* const store_;

  // Held across store I/O; taken before mu_. (std mutexes, not absl::Mutex,
  // so ThreadSanitizer models them; see model.h.)
  std::mutex io_mu_;
  mutable std::shared_mutex mu_;
  // guarded by mu_
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_REGISTRY_H_
