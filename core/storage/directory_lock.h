// One owner per data directory: an exclusive lock (flock) on <dir>/LOCK,
// held for as long as the DirectoryLock lives, and released by the kernel if
// the process dies. The file names the owner's pid for the error message.

#ifndef HALFSPACE_CORE_STORAGE_DIRECTORY_LOCK_H_
#define HALFSPACE_CORE_STORAGE_DIRECTORY_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace halfspace {

class DirectoryLock {
 public:
  // Locks `dir` (which must exist). FAILED_PRECONDITION, naming the owner's
  // pid, when another process holds it.
  static absl::StatusOr<std::unique_ptr<DirectoryLock>> Acquire(
      const std::string& dir);

  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_DIRECTORY_LOCK_H_
