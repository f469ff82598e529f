// Small file-system helpers for the stores: errors from errno, whole-file
// reads and writes, and syncing what the stores depend on.

#ifndef HALFSPACE_CORE_STORAGE_FILES_H_
#define HALFSPACE_CORE_STORAGE_FILES_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace halfspace {

// "<what> <path>: <strerror(errno)>": RESOURCE_EXHAUSTED for a full disk or
// quota (ENOSPC, EDQUOT), else INTERNAL.
absl::Status ErrnoError(absl::string_view what, const std::string& path);

// Writes all of `data` to `fd` (EINTR and short writes retried).
absl::Status WriteAll(int fd, absl::string_view data, const std::string& path);

// Writes all of `data` to a new file at `path` and fsyncs it.
absl::Status WriteFileSynced(const std::string& path, absl::string_view data);

// fsyncs directory `dir`, so that entries created or removed in it last.
absl::Status SyncDirectory(const std::string& dir);

// Creates directory `dir` and any missing parents, each made durable in its
// own parent; OK if it exists.
absl::Status CreateDirectory(const std::string& dir);

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_FILES_H_
