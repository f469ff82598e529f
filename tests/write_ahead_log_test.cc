#include "core/storage/write_ahead_log.h"

#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"

// fdatasync, counted (this test binary is linked with -Wl,--wrap=fdatasync).
namespace {
std::atomic<int> fdatasyncs{0};
}  // namespace

extern "C" {
int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd) {
  fdatasyncs.fetch_add(1);
  return __real_fdatasync(fd);
}
}

namespace halfspace {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// What Open read back.
struct Read {
  std::vector<std::string> records;  // "lsn key payload"
  std::vector<WriteAheadLog::Damage> damage;
};

std::unique_ptr<WriteAheadLog> OpenLog(const std::string& dir, Read& read,
                                       int64_t segment_bytes = 1 << 20,
                                       uint64_t after_lsn = 0,
                                       bool sync = true) {
  WriteAheadLog::Options options;
  options.dir = dir;
  options.segment_bytes = segment_bytes;
  options.sync = sync;
  WriteAheadLog::Visitor visitor;
  visitor.record = [&](uint64_t lsn, absl::string_view key,
                       absl::string_view payload) {
    read.records.push_back(absl::StrCat(lsn, " ", key, " ", payload));
    return absl::OkStatus();
  };
  visitor.damage = [&](const WriteAheadLog::Damage& d) {
    read.damage.push_back(d);
  };
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log =
      WriteAheadLog::Open(options, after_lsn, visitor);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(WriteAheadLogTest, ReplaysRecordsInOrderAndNumbersOnAfterReopening) {
  TempDir dir;
  {
    Read read;
    auto log = OpenLog(dir.path(), read);
    EXPECT_THAT(read.records, IsEmpty());
    EXPECT_EQ(*log->Append("a", "one"), 1u);
    EXPECT_EQ(*log->Append("b", ""), 2u);
    EXPECT_EQ(*log->Append("a", std::string(1000, 'x')), 3u);
    EXPECT_EQ(log->last_lsn(), 3u);
  }
  Read read;
  auto log = OpenLog(dir.path(), read);
  ASSERT_EQ(read.records.size(), 3u);
  EXPECT_EQ(read.records[0], "1 a one");
  EXPECT_EQ(read.records[1], "2 b ");
  EXPECT_EQ(read.records[2], "3 a " + std::string(1000, 'x'));
  EXPECT_THAT(read.damage, IsEmpty());
  EXPECT_EQ(*log->Append("c", "four"), 4u);
}

TEST(WriteAheadLogTest, NeverReusesAnLsnASnapshotHolds) {
  TempDir dir;
  Read read;
  auto log = OpenLog(dir.path(), read, 1 << 20, /*after_lsn=*/41);
  EXPECT_EQ(*log->Append("a", "x"), 42u);
}

// A crash can cut the last record anywhere: every cut is read as the torn
// tail of an unacknowledged write, cut off without complaint, and the next
// record follows the last whole one.
TEST(WriteAheadLogTest, CutsATornTailOffWhereverTheWriteStopped) {
  TempDir dir;
  {
    Read read;
    auto log = OpenLog(dir.path(), read);
    ASSERT_TRUE(log->Append("model", "first").ok());
    ASSERT_TRUE(log->Append("model", "second record").ok());
  }
  const std::string segment = dir.File(Segments(dir.path())[0]);
  const std::string whole = ReadAll(segment);
  const size_t first_size = whole.size() / 2 - 4;  // both share the framing
  for (size_t cut = first_size; cut < whole.size(); ++cut) {
    WriteAll(segment, whole.substr(0, cut));
    Read read;
    auto log = OpenLog(dir.path(), read);
    EXPECT_THAT(read.records, ElementsAre("1 model first")) << cut;
    EXPECT_THAT(read.damage, IsEmpty()) << cut;
    EXPECT_EQ(*log->Append("model", "again"), 2u);
    log.reset();
    Read again;
    OpenLog(dir.path(), again);
    EXPECT_THAT(again.records, ElementsAre("1 model first", "2 model again"));
  }
}

// A log of three records, a's, b's and a's; returns its segment's path.
std::string ThreeRecords(const TempDir& dir) {
  Read read;
  auto log = OpenLog(dir.path(), read);
  EXPECT_TRUE(log->Append("a", "first").ok());
  EXPECT_TRUE(log->Append("b", "second").ok());
  EXPECT_TRUE(log->Append("a", "third").ok());
  return dir.File(Segments(dir.path())[0]);
}

TEST(WriteAheadLogTest, ReportsAFlippedPayloadByteWithItsModelAndReadsOn) {
  TempDir dir;
  const std::string segment = ThreeRecords(dir);
  std::string bytes = ReadAll(segment);
  const size_t at = bytes.find("second");
  bytes[at] ^= 1;
  WriteAll(segment, bytes);
  Read read;
  OpenLog(dir.path(), read);
  EXPECT_THAT(read.records, ElementsAre("1 a first", "3 a third"));
  ASSERT_EQ(read.damage.size(), 1u);
  EXPECT_EQ(read.damage[0].key, "b");
  EXPECT_EQ(read.damage[0].lsn, 2u);
  EXPECT_THAT(read.damage[0].where, HasSubstr("bad checksum"));
}

// A last record whole in length whose checksum fails was written whole and
// then damaged: not a torn write, so it is reported, kept and never cut.
TEST(WriteAheadLogTest, ADamagedLastRecordIsReportedAndKeptNotCut) {
  TempDir dir;
  const std::string segment = ThreeRecords(dir);
  std::string bytes = ReadAll(segment);
  const size_t third = bytes.size() - (22 + 1 + 5);  // header, "a", "third"
  bytes[bytes.find("third")] ^= 1;
  WriteAll(segment, bytes);
  for (int reopening = 0; reopening < 2; ++reopening) {
    Read read;
    auto log = OpenLog(dir.path(), read);
    ASSERT_EQ(read.damage.size(), 1u) << reopening;
    const WriteAheadLog::Damage& d = read.damage[0];
    EXPECT_EQ(d.key, "a");
    EXPECT_EQ(d.lsn, 3u);
    EXPECT_THAT(d.where,
                HasSubstr(absl::StrCat(
                    "log segment ", fs::path(segment).filename().string(),
                    " at byte ", third, ": record 3 has a bad checksum")));
    EXPECT_EQ(d.kept, absl::StrCat(segment, ".damaged-at-", third));
    EXPECT_EQ(ReadAll(d.kept), bytes.substr(third));
    EXPECT_EQ(ReadAll(segment).substr(0, bytes.size()), bytes);  // not cut
    if (reopening == 0) {
      EXPECT_THAT(read.records, ElementsAre("1 a first", "2 b second"));
      EXPECT_EQ(*log->Append("b", "fourth"), 4u);
    } else {
      EXPECT_THAT(read.records,
                  ElementsAre("1 a first", "2 b second", "4 b fourth"));
    }
  }
}

TEST(WriteAheadLogTest, ReportsAFlippedHeaderByteAsAnyModelsAndReadsOn) {
  TempDir dir;
  const std::string segment = ThreeRecords(dir);
  const std::string good = ReadAll(segment);
  const size_t record = good.size() / 3;
  for (size_t i = 0; i < 22; ++i) {  // every header byte of record 2
    std::string bytes = good;
    bytes[record + i] ^= 0x10;
    WriteAll(segment, bytes);
    Read read;
    OpenLog(dir.path(), read);
    EXPECT_THAT(read.records, ElementsAre("1 a first", "3 a third")) << i;
    ASSERT_EQ(read.damage.size(), 1u) << i;
    EXPECT_EQ(read.damage[0].key, "") << i;
  }
}

// A log that lost its tail while snapshots newer than it survived (a
// machine crash without syncing) numbers on after the snapshots in a new
// segment, and reads back without a false alarm.
TEST(WriteAheadLogTest, JumpsPastSnapshotLsnsInANewSegment) {
  TempDir dir;
  {
    Read read;
    auto log = OpenLog(dir.path(), read);
    ASSERT_TRUE(log->Append("m", "one").ok());
  }
  {
    Read read;
    auto log = OpenLog(dir.path(), read, 1 << 20, /*after_lsn=*/9);
    EXPECT_EQ(*log->Append("m", "ten"), 10u);
  }
  EXPECT_EQ(Segments(dir.path()).size(), 2u);
  Read read;
  OpenLog(dir.path(), read);
  EXPECT_THAT(read.records, ElementsAre("1 m one", "10 m ten"));
  EXPECT_THAT(read.damage, IsEmpty());
}

TEST(WriteAheadLogTest, ReportsAMissingSegmentAndRecordsOutOfSequence) {
  TempDir dir;
  {
    Read read;
    auto log = OpenLog(dir.path(), read, /*segment_bytes=*/10);
    for (int i = 0; i < 3; ++i) {
      const uint64_t lsn = *log->Append("m", "x");
      log->WaitDurable(lsn);
      for (int k = 0; k < 200 && Segments(dir.path()).size() < size_t(i + 2);
           ++k) {
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
  }
  ASSERT_EQ(Segments(dir.path()).size(), 4u);
  fs::remove(dir.File(Segments(dir.path())[1]));
  Read read;
  OpenLog(dir.path(), read, 10);
  EXPECT_THAT(read.records, ElementsAre("1 m x", "3 m x"));
  ASSERT_FALSE(read.damage.empty());
  EXPECT_THAT(read.damage[0].where, HasSubstr("segment 2 is missing"));
  EXPECT_EQ(read.damage[0].key, "");
}

TEST(WriteAheadLogTest, RotatesSegmentsAndTruncatesOnlyCoveredClosedOnes) {
  TempDir dir;
  Read read;
  auto log = OpenLog(dir.path(), read, /*segment_bytes=*/100);
  const std::string payload(80, 'p');
  for (int i = 0; i < 5; ++i) {
    const uint64_t lsn = *log->Append("m", payload);
    log->WaitDurable(lsn);
    // Rotation happens on the sync thread; wait for it.
    for (int k = 0; k < 200 && Segments(dir.path()).size() < size_t(i + 2);
         ++k) {
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
  EXPECT_EQ(Segments(dir.path()).size(), 6u);  // one record each, and a new one
  ASSERT_TRUE(log->Truncate(2).ok());          // records 1 and 2 are covered
  EXPECT_EQ(Segments(dir.path()).size(), 4u);
  ASSERT_TRUE(log->Truncate(100).ok());  // the open segment stays
  EXPECT_EQ(Segments(dir.path()).size(), 1u);
  EXPECT_EQ(*log->Append("m", "after"), 6u);
  log.reset();
  Read again;
  OpenLog(dir.path(), again, 100);
  EXPECT_THAT(again.records, ElementsAre("6 m after"));
}

// Many threads appending at once share syncs (group commit), and every
// callback runs once its record is durable.
TEST(WriteAheadLogTest, GroupCommitSharesSyncsAndRunsEveryCallback) {
  TempDir dir;
  Read read;
  auto log = OpenLog(dir.path(), read);
  const int before = fdatasyncs.load();
  constexpr int kThreads = 8, kEach = 200;
  std::atomic<int> durable{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t lsn = *log->Append("m", "x");
        std::atomic<bool> done{false};
        log->WhenDurable(lsn, [&] {
          durable.fetch_add(1);
          done = true;
        });
        while (!done) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(durable.load(), kThreads * kEach);
  const int syncs = fdatasyncs.load() - before;
  EXPECT_GT(syncs, 0);
  EXPECT_LT(syncs, kThreads * kEach);
}

TEST(WriteAheadLogTest, WithoutSyncRecordsAreDurableOnceWritten) {
  TempDir dir;
  Read read;
  auto log = OpenLog(dir.path(), read, 1 << 20, 0, /*sync=*/false);
  const int before = fdatasyncs.load();
  const uint64_t lsn = *log->Append("m", "x");
  bool ran = false;
  log->WhenDurable(lsn, [&] { ran = true; });
  EXPECT_TRUE(ran);  // at once, on this thread
  EXPECT_EQ(fdatasyncs.load(), before);
}

// A full disk fails the append with RESOURCE_EXHAUSTED and leaves the log
// as it was; appends work again once there is room.
TEST(WriteAheadLogTest, AFullDiskFailsTheAppendAndLeavesTheLogWhole) {
  TempDir dir;
  const std::string mount = dir.File("small");
  fs::create_directories(mount);
  if (::mount("tmpfs", mount.c_str(), "tmpfs", 0, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  }
  {
    Read read;
    auto log = OpenLog(mount + "/wal", read);
    const std::string big(8 << 10, 'x');
    int appended = 0;
    absl::Status full;
    while (full.ok()) {
      absl::StatusOr<uint64_t> lsn = log->Append("m", big);
      full = lsn.status();
      if (lsn.ok()) ++appended;
    }
    EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
    EXPECT_THAT(full.message(), HasSubstr("No space left"));
    EXPECT_GT(appended, 0);
    // Small records still fit in what is left; the lsn follows on.
    EXPECT_EQ(*log->Append("m", "small"), static_cast<uint64_t>(appended) + 1);
    log.reset();
    Read again;
    OpenLog(mount + "/wal", again);
    EXPECT_EQ(again.records.size(), static_cast<size_t>(appended) + 1);
    EXPECT_THAT(again.damage, IsEmpty());
  }
  ::umount(mount.c_str());
}

}  // namespace
}  // namespace halfspace
