// The web console's files (server/console/), built into the server by
// server/console/embed.cmake: the console needs no file system and no
// network, only the HTTP port that serves it (http_gateway.h).

#ifndef HALFSPACE_SERVER_CONSOLE_FILES_H_
#define HALFSPACE_SERVER_CONSOLE_FILES_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace halfspace {

struct ConsoleFile {
  absl::string_view name;        // e.g. "console.js"
  absl::string_view media_type;  // its Content-Type
  absl::string_view bytes;
};

// Every file of the console, index.html first.
absl::Span<const ConsoleFile> ConsoleFiles();

// The file a path under /console/ names ("" and "index.html" name
// index.html); nullptr for any other.
inline const ConsoleFile* FindConsoleFile(absl::string_view name) {
  if (name.empty()) name = "index.html";
  for (const ConsoleFile& file : ConsoleFiles()) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CONSOLE_FILES_H_
