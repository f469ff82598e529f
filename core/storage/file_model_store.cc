#include "core/storage/file_model_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/storage/snapshot_codec.h"

namespace halfspace {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kSuffix = ".model";
constexpr absl::string_view kTempSuffix = ".tmp";

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int err = errno;
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(err));
  return err == ENOSPC || err == EDQUOT ? absl::ResourceExhaustedError(message)
                                        : absl::InternalError(message);
}

// Writes all of `data` to a new file at `path` and fsyncs it.
absl::Status WriteFileSynced(const std::string& path, absl::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        0644);
  if (fd < 0) return ErrnoError("cannot create", path);
  absl::Status status;
  while (!data.empty() && status.ok()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno != EINTR) status = ErrnoError("cannot write", path);
    if (n > 0) data.remove_prefix(n);
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoError("cannot sync", path);
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", path);
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

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InternalError(absl::StrCat("cannot read ", path.string()));
  }
  return std::move(contents).str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileModelStore>> FileModelStore::Open(
    std::string dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create data directory ", dir, ": ", ec.message()));
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (absl::StartsWith(file, ".") && absl::EndsWith(file, kTempSuffix)) {
      fs::remove(entry.path(), ec);
    }
  }
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot list data directory ", dir, ": ", ec.message()));
  }
  return std::unique_ptr<FileModelStore>(new FileModelStore(std::move(dir)));
}

std::string FileModelStore::PathFor(absl::string_view name) const {
  return (fs::path(dir_) / absl::StrCat(name, kSuffix)).string();
}

absl::Status FileModelStore::Save(const ModelSnapshot& snapshot) {
  const std::string path = PathFor(snapshot.name);
  const std::string temp =
      (fs::path(dir_) / absl::StrCat(".", snapshot.name, kSuffix, kTempSuffix))
          .string();
  absl::Status status = WriteFileSynced(temp, EncodeSnapshot(snapshot));
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot rename into", path);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  return SyncDirectory(dir_);
}

absl::Status FileModelStore::Remove(absl::string_view name) {
  const std::string path = PathFor(name);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove", path);
  }
  return SyncDirectory(dir_);
}

absl::StatusOr<std::vector<ModelSnapshot>> FileModelStore::LoadAll() {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
    const std::string file = entry.path().filename().string();
    if (entry.is_regular_file() && !absl::StartsWith(file, ".") &&
        absl::EndsWith(file, kSuffix)) {
      paths.push_back(entry.path());
    }
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot list ", dir_, ": ", ec.message()));
  }
  std::sort(paths.begin(), paths.end());
  std::vector<ModelSnapshot> snapshots;
  for (const fs::path& path : paths) {
    absl::StatusOr<std::string> bytes = ReadFile(path);
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<ModelSnapshot> snapshot = DecodeSnapshot(*bytes);
    if (!snapshot.ok()) {
      return absl::DataLossError(absl::StrCat(
          path.string(), ": ", snapshot.status().message(),
          "; move the file away to start without this model"));
    }
    const std::string expected = path.stem().string();
    if (snapshot->name != expected) {
      return absl::DataLossError(absl::StrCat(
          path.string(), " holds model '", snapshot->name,
          "'; a model file must be named after its model"));
    }
    snapshots.push_back(std::move(*snapshot));
  }
  return snapshots;
}

}  // namespace halfspace
