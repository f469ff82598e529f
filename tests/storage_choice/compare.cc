// Which engine should hold the write-ahead log? Appends of training batches
// made durable (synced) before they are acknowledged, from 1 and 4 writers,
// through halfspace's own log, RocksDB 7.8 and LevelDB 1.23 (Debian's).
// Prints appends per second; asserts nothing.
//
//   bash tests/storage_choice/run.sh

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/storage/write_ahead_log.h"
#include "leveldb/db.h"
#include "rocksdb/db.h"

namespace {

using Append = std::function<void(int writer, uint64_t i, const std::string&)>;

// Appends per second: `writers` threads, `each` appends of `record` apiece.
double Measure(int writers, int each, const std::string& record,
               const Append& append) {
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < each; ++i) append(w, i, record);
    });
  }
  for (std::thread& t : threads) t.join();
  return writers * each / absl::ToDoubleSeconds(absl::Now() - start);
}

std::string Key(int writer, uint64_t i) {
  return absl::StrCat(writer, "/", 1000000000 + i);
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  const std::string root = "build-storage-choice";
  std::printf(
      "| record | writers | halfspace log | RocksDB 7.8 | LevelDB 1.23 |\n"
      "|---|---|---|---|---|\n");
  for (size_t size : {200, 65536}) {
    const std::string record(size, 'x');
    for (int writers : {1, 4}) {
      const int each = size > 1000 ? 200 : 1000;
      fs::remove_all(root);
      fs::create_directories(root);

      auto log = *halfspace::WriteAheadLog::Open(
          {root + "/wal", true, 64 << 20}, 0, {});
      const double ours = Measure(writers, each, record,
                                  [&](int, uint64_t, const std::string& r) {
                                    log->WaitDurable(*log->Append("m", r));
                                  });
      log.reset();

      rocksdb::DB* rdb = nullptr;
      rocksdb::Options ro;
      ro.create_if_missing = true;
      rocksdb::DB::Open(ro, root + "/rocksdb", &rdb);
      rocksdb::WriteOptions rw;
      rw.sync = true;
      const double rocks = Measure(
          writers, each, record, [&](int w, uint64_t i, const std::string& r) {
            rdb->Put(rw, Key(w, i), r);
          });
      delete rdb;

      leveldb::DB* ldb = nullptr;
      leveldb::Options lo;
      lo.create_if_missing = true;
      leveldb::DB::Open(lo, root + "/leveldb", &ldb);
      leveldb::WriteOptions lw;
      lw.sync = true;
      const double level = Measure(
          writers, each, record, [&](int w, uint64_t i, const std::string& r) {
            ldb->Put(lw, Key(w, i), r);
          });
      delete ldb;
      std::printf("| %zu B | %d | %.0f/s | %.0f/s | %.0f/s |\n", size, writers,
                  ours, rocks, level);
    }
  }
  fs::remove_all(root);
  return 0;
}
