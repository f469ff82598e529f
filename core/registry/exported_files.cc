#include "core/registry/exported_files.h"

#include <algorithm>
#include <utility>

#include "core/storage/snapshot_codec.h"

namespace halfspace {

ExportedFiles::File ExportedFiles::Get(
    const std::shared_ptr<const Model>& model) {
  const uint64_t generation = model->generation();
  {
    MutexLock lock(mu_);
    ++calls_;
    for (Entry& e : entries_) {
      if (e.model.lock() == model && e.file.version == generation) {
        e.used = calls_;
        return e.file;
      }
    }
  }
  File file;
  ModelSnapshot snapshot = model->Snapshot(&file.version);
  snapshot.lsn = 0;
  file.bytes = std::make_shared<const std::string>(EncodeSnapshot(snapshot));

  MutexLock lock(mu_);
  ++encoded_;
  // Replace the model's older file, a file of a model freed, or the one
  // least recently asked for.
  auto slot = std::find_if(entries_.begin(), entries_.end(), [&](Entry& e) {
    const std::shared_ptr<const Model> held = e.model.lock();
    return held == nullptr || held == model;
  });
  if (slot == entries_.end() && entries_.size() < kMaxFiles) {
    slot = entries_.emplace(entries_.end());
  } else if (slot == entries_.end()) {
    slot = std::min_element(
        entries_.begin(), entries_.end(),
        [](const Entry& a, const Entry& b) { return a.used < b.used; });
  }
  *slot = Entry{model, file, ++calls_};
  return file;
}

uint64_t ExportedFiles::encoded() const {
  MutexLock lock(mu_);
  return encoded_;
}

}  // namespace halfspace
