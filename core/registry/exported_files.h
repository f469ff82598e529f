// The model files ExportModel pages through, encoded once per version of a
// model: reading a model in pages then costs its size once, not once a
// page, and every page of one version is cut from the same bytes.
//
// Holds the files of the kMaxFiles models exported last (a file as large as
// its model: the memory is the price of linear paging). A file holds no
// LSN (an import does not use one), so that a log record that changed
// nothing — a refused batch, say — leaves the version's bytes as they were.
//
// Thread-safe; encoding runs outside the lock.

#ifndef HALFSPACE_CORE_REGISTRY_EXPORTED_FILES_H_
#define HALFSPACE_CORE_REGISTRY_EXPORTED_FILES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/model/model.h"

namespace halfspace {

class ExportedFiles {
 public:
  static constexpr size_t kMaxFiles = 4;

  struct File {
    uint64_t version = 0;  // the model's generation it was encoded at
    std::shared_ptr<const std::string> bytes;
  };

  // The file of `model` as it is now: the one encoded before if the model
  // has not changed since, else a new one.
  File Get(const std::shared_ptr<const Model>& model);

  // How many files were encoded so far.
  uint64_t encoded() const;

 private:
  struct Entry {
    std::weak_ptr<const Model> model;
    File file;
    uint64_t used = 0;  // when last asked for, in calls
  };

  mutable Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t encoded_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_REGISTRY_EXPORTED_FILES_H_
