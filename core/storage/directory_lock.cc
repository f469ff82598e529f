#include "core/storage/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/files.h"

namespace halfspace {

absl::StatusOr<std::unique_ptr<DirectoryLock>> DirectoryLock::Acquire(
    const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "LOCK").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot open", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool held = errno == EWOULDBLOCK;
    absl::Status error =
        held ? absl::OkStatus() : ErrnoError("cannot lock", path);
    ::close(fd);
    if (!held) return error;
    absl::StatusOr<std::string> owner = ReadFile(path);
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory ", dir, " is in use by another halfspace-server (pid ",
        owner.ok() ? absl::StripAsciiWhitespace(*owner) : "unknown",
        "); stop it, or give this one another --data_dir"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  // The pid only improves another server's message; the lock is what counts.
  if (::ftruncate(fd, 0) == 0) WriteAll(fd, pid, path).IgnoreError();
  return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
}

DirectoryLock::~DirectoryLock() { ::close(fd_); }

}  // namespace halfspace
