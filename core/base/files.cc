#include "core/base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace halfspace {

namespace fs = std::filesystem;

std::string FileName(const std::string& path) {
  const fs::path name = fs::path(path).lexically_normal().filename();
  return name.empty() ? fs::path(path)
                            .lexically_normal()
                            .parent_path()
                            .filename()
                            .string()
                      : name.string();
}

absl::Status WithFile(absl::Status status, const std::string& path) {
  status.SetPayload(kFilePayload, absl::Cord(path));
  return status;
}

std::string FileOf(const absl::Status& status) {
  const auto path = status.GetPayload(kFilePayload);
  return path.has_value() ? std::string(*path) : std::string();
}

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int err = errno;
  const std::string message =
      absl::StrCat(what, " ", FileName(path), ": ", std::strerror(err));
  return WithFile(err == ENOSPC || err == EDQUOT
                      ? absl::ResourceExhaustedError(message)
                      : absl::InternalError(message),
                  path);
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno != EINTR) return ErrnoError("cannot write", path);
    if (n > 0) data.remove_prefix(n);
  }
  return absl::OkStatus();
}

absl::Status WriteFileSynced(const std::string& path, absl::string_view data) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", path);
  absl::Status status = WriteAll(fd, data, path);
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoError("cannot sync", path);
  if (::close(fd) != 0 && status.ok())
    status = ErrnoError("cannot close", path);
  return status;
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open directory", dir);
  const bool ok = ::fsync(fd) == 0;
  absl::Status status = ok ? absl::OkStatus() : ErrnoError("cannot sync", dir);
  ::close(fd);
  return status;
}

absl::Status CreateDirectory(const std::string& dir) {
  const fs::path path = fs::absolute(dir).lexically_normal();
  std::error_code ec;
  if (fs::is_directory(path, ec)) return absl::OkStatus();
  if (path.has_parent_path() && path.parent_path() != path) {
    if (absl::Status s = CreateDirectory(path.parent_path().string());
        !s.ok()) {
      return s;
    }
  }
  if (!fs::create_directory(path, ec) && ec) {
    return WithFile(
        absl::FailedPreconditionError(absl::StrCat(
            "cannot create directory ", FileName(dir), ": ", ec.message())),
        dir);
  }
  return SyncDirectory(path.parent_path().string());
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return WithFile(absl::InternalError(
                        absl::StrCat("cannot read ", FileName(path.string()))),
                    path.string());
  }
  return std::move(contents).str();
}

}  // namespace halfspace
