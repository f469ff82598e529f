// A log segment as recovery finds it on disk, torn or damaged anywhere:
// opened, every whole record visited, damage reported, never a crash.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/storage/write_ahead_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  namespace fs = std::filesystem;
  static const std::string dir = [] {
    std::string pattern =
        (fs::temp_directory_path() / "halfspace-fuzz-XXXXXX").string();
    return std::string(mkdtemp(pattern.data()));
  }();
  fs::remove_all(dir + "/wal");
  fs::create_directories(dir + "/wal");
  std::ofstream(dir + "/wal/000000000001.log", std::ios::binary)
      .write(reinterpret_cast<const char*>(data), size);
  WriteAheadLog::Options options;
  options.dir = dir + "/wal";
  options.sync = false;
  uint64_t last = 0;
  WriteAheadLog::Visitor visitor;
  visitor.start = [](uint64_t) {};
  visitor.record = [&](uint64_t lsn, absl::string_view, absl::string_view) {
    if (lsn <= last) __builtin_trap();  // records come in LSN order
    last = lsn;
    return absl::OkStatus();
  };
  visitor.damage = [](const WriteAheadLog::Damage&) {};
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log =
      WriteAheadLog::Open(options, 0, visitor);
  if (log.ok() && (*log)->last_lsn() < last) __builtin_trap();
  return 0;
}
