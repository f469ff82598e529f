#include "core/model_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/quoted.h"

namespace halfspace {
namespace {

absl::Status NotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("model ", Quoted(name), " does not exist"));
}

}  // namespace

absl::Status ModelRegistry::Load() {
  std::lock_guard io_lock(io_mu_);
  absl::StatusOr<std::vector<ModelSnapshot>> snapshots = store_->LoadAll();
  if (!snapshots.ok()) return snapshots.status();
  for (ModelSnapshot& snapshot : *snapshots) {
    const std::string name = snapshot.name;
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Restore(std::move(snapshot));
    if (!model.ok()) {
      return absl::DataLossError(absl::StrCat(
          "stored model '", name, "' is invalid: ", model.status().message()));
    }
    auto entry = std::make_shared<Entry>();
    entry->model = std::move(*model);
    entry->saved_generation = entry->model->generation();
    std::unique_lock lock(mu_);
    entries_[name] = std::move(entry);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Create(
    absl::string_view name, const ModelSpec& spec,
    const std::vector<std::string>& classes) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(std::string(name), spec, classes);
  if (!model.ok()) return model.status();

  std::lock_guard io_lock(io_mu_);
  if (Find(name) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("model ", Quoted(name), " already exists"));
  }
  auto entry = std::make_shared<Entry>();
  entry->model = std::move(*model);
  if (absl::Status s = SaveLocked(*entry); !s.ok()) return s;
  std::unique_lock lock(mu_);
  entries_[name] = entry;
  return entry->model;
}

absl::StatusOr<std::shared_ptr<Model>> ModelRegistry::Get(
    absl::string_view name) const {
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  return entry->model;
}

std::vector<std::shared_ptr<Model>> ModelRegistry::List() const {
  std::vector<std::shared_ptr<Model>> models;
  {
    std::shared_lock lock(mu_);
    models.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) models.push_back(entry->model);
  }
  std::sort(models.begin(), models.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return models;
}

absl::Status ModelRegistry::Delete(absl::string_view name) {
  std::lock_guard io_lock(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  if (absl::Status s = store_->Remove(name); !s.ok()) return s;
  entry->model->MarkDeleted();
  std::unique_lock lock(mu_);
  entries_.erase(name);
  return absl::OkStatus();
}

absl::Status ModelRegistry::Save(absl::string_view name) {
  std::lock_guard io_lock(io_mu_);
  std::shared_ptr<Entry> entry = Find(name);
  if (entry == nullptr) return NotFound(name);
  return SaveLocked(*entry);
}

absl::Status ModelRegistry::SaveChanged() {
  std::lock_guard io_lock(io_mu_);
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::shared_lock lock(mu_);
    for (const auto& [name, entry] : entries_) entries.push_back(entry);
  }
  absl::Status first_error;
  for (const std::shared_ptr<Entry>& entry : entries) {
    if (entry->model->generation() == entry->saved_generation) continue;
    first_error.Update(SaveLocked(*entry));
  }
  return first_error;
}

absl::Status ModelRegistry::SaveLocked(Entry& entry) {
  // Read the generation first: a change racing with the snapshot leaves the
  // entry marked changed, so the next SaveChanged stores it again.
  const uint64_t generation = entry.model->generation();
  absl::Status s = store_->Save(entry.model->Snapshot());
  if (s.ok()) entry.saved_generation = generation;
  return s;
}

std::shared_ptr<ModelRegistry::Entry> ModelRegistry::Find(
    absl::string_view name) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second;
}

}  // namespace halfspace
