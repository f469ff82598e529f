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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/files.h"
#include "core/storage/crc32c.h"
#include "core/storage/snapshot_codec.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kSuffix = ".model";
constexpr absl::string_view kTempSuffix = ".tmp";
constexpr absl::string_view kPreviousSuffix = ".prev";
constexpr absl::string_view kAliasesFile = "aliases";

// Writes `data` to `path` atomically: a synced temporary file renamed over
// it, then the directory synced.
absl::Status ReplaceFile(const std::string& dir, const std::string& path,
                         const std::string& temp, absl::string_view data) {
  absl::Status status = WriteFileSynced(temp, data);
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot rename into", path);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  return SyncDirectory(dir);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileModelStore>> FileModelStore::Open(
    std::string dir) {
  if (absl::Status s = CreateDirectory(dir); !s.ok()) return s;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (absl::StartsWith(file, ".") && absl::EndsWith(file, kTempSuffix)) {
      fs::remove(entry.path(), ec);
    }
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot list data directory ", dir, ": ", ec.message()));
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
  if (status.ok()) status = KeepAsPrevious(path);
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
  for (const std::string& path :
       {PathFor(name), absl::StrCat(PathFor(name), kPreviousSuffix)}) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("cannot remove", path);
    }
  }
  return SyncDirectory(dir_);
}

absl::StatusOr<ModelSnapshot> FileModelStore::LoadPrevious(
    absl::string_view name) {
  const std::string path = absl::StrCat(PathFor(name), kPreviousSuffix);
  if (!fs::exists(path)) {
    return WithFile(absl::NotFoundError(
                        absl::StrCat("no previous snapshot ", FileName(path))),
                    path);
  }
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<ModelSnapshot> snapshot = DecodeSnapshot(*bytes);
  if (!snapshot.ok()) {
    return WithFile(absl::DataLossError(absl::StrCat(
                        FileName(path), ": ", snapshot.status().message())),
                    path);
  }
  return snapshot;
}

absl::Status FileModelStore::SetAside(absl::string_view name) {
  const std::string path = PathFor(name);
  const std::string aside = absl::StrCat(
      path, ".set-aside-",
      absl::FormatTime("%Y%m%dT%H%M%E3S", absl::Now(), absl::UTCTimeZone()));
  if (::rename(path.c_str(), aside.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot set aside", path);
  }
  return SyncDirectory(dir_);
}

absl::Status FileModelStore::KeepAsPrevious(const std::string& path) {
  const std::string previous = absl::StrCat(path, kPreviousSuffix);
  if (::unlink(previous.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove", previous);
  }
  if (::link(path.c_str(), previous.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot keep the previous snapshot as", previous);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredModel>> FileModelStore::LoadAll() {
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
  std::vector<StoredModel> models;
  for (const fs::path& path : paths) {
    StoredModel& stored = models.emplace_back();
    stored.name = path.stem().string();
    absl::StatusOr<std::string> bytes = ReadFile(path);
    if (!bytes.ok()) {
      stored.snapshot = bytes.status();
      continue;
    }
    stored.snapshot = DecodeSnapshot(*bytes);
    if (!stored.snapshot.ok()) {
      stored.snapshot = WithFile(
          absl::DataLossError(absl::StrCat(FileName(path.string()), ": ",
                                           stored.snapshot.status().message())),
          path.string());
    } else if (stored.snapshot->name != stored.name) {
      stored.snapshot = WithFile(
          absl::DataLossError(absl::StrCat(
              FileName(path.string()), " holds model '", stored.snapshot->name,
              "'; a model file must be named after its model")),
          path.string());
    }
  }
  return models;
}

absl::Status FileModelStore::SaveAliases(const AliasMap& aliases) {
  storage::v1::Aliases file;
  for (const auto& [alias, model] : aliases) {
    (*file.mutable_aliases())[alias] = model;
  }
  std::string payload;
  file.SerializeToString(&payload);
  const uint32_t crc = Crc32c(payload);
  std::string data(reinterpret_cast<const char*>(&crc), sizeof(crc));
  data += payload;
  const fs::path path = fs::path(dir_) / std::string(kAliasesFile);
  const fs::path temp =
      fs::path(dir_) / absl::StrCat(".", kAliasesFile, kTempSuffix);
  return ReplaceFile(dir_, path.string(), temp.string(), data);
}

absl::StatusOr<AliasMap> FileModelStore::LoadAliases() {
  const fs::path path = fs::path(dir_) / std::string(kAliasesFile);
  if (!fs::exists(path)) return AliasMap();
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  uint32_t crc = 0;
  storage::v1::Aliases file;
  if (bytes->size() < sizeof(crc) ||
      (std::memcpy(&crc, bytes->data(), sizeof(crc)),
       crc != Crc32c(absl::string_view(*bytes).substr(sizeof(crc)))) ||
      !file.ParseFromArray(bytes->data() + sizeof(crc),
                           bytes->size() - sizeof(crc))) {
    return absl::DataLossError(absl::StrCat(
        path.string(),
        " is damaged; restore it from a backup, or remove it to start "
        "without aliases"));
  }
  return AliasMap(file.aliases().begin(), file.aliases().end());
}

}  // namespace halfspace
