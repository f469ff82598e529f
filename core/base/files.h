// Small file-system helpers for the stores and the server: errors from errno,
// whole-file reads and writes, and syncing what the stores depend on.
//
// An error about a file names it in its message by its name alone
// ("000000000002.log") and carries its whole path as the kFilePayload
// payload: a client that is answered with the error learns no path of the
// server's, while the server's own log (Status::ToString) shows it.

#ifndef HALFSPACE_CORE_BASE_FILES_H_
#define HALFSPACE_CORE_BASE_FILES_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace halfspace {

// The payload under which an error carries the path of its file.
inline constexpr absl::string_view kFilePayload = "halfspace/file";

// The last component of `path`, which names the file in messages.
std::string FileName(const std::string& path);

// `status` with `path` as its kFilePayload.
absl::Status WithFile(absl::Status status, const std::string& path);

// The path `status` carries as kFilePayload; empty if none.
std::string FileOf(const absl::Status& status);

// "<what> <file name>: <strerror(errno)>", with the path as payload:
// RESOURCE_EXHAUSTED for a full disk or quota (ENOSPC, EDQUOT), else
// INTERNAL.
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

#endif  // HALFSPACE_CORE_BASE_FILES_H_
