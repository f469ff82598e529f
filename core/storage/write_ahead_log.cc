#include "core/storage/write_ahead_log.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/files.h"
#include "core/storage/crc32c.h"

namespace halfspace {
namespace {

namespace fs = std::filesystem;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "log records are written with little-endian memcpy");

constexpr absl::string_view kSuffix = ".log";
// header_crc, payload_size, lsn, payload_crc, key_size.
constexpr size_t kHeaderSize = 4 + 4 + 8 + 4 + 2;
constexpr size_t kMaxKeySize = 0xFFFF;

struct Header {
  uint32_t header_crc = 0;
  uint32_t payload_size = 0;
  uint64_t lsn = 0;
  uint32_t payload_crc = 0;
  uint16_t key_size = 0;
};

void EncodeHeader(const Header& h, char* out) {
  std::memcpy(out, &h.header_crc, 4);
  std::memcpy(out + 4, &h.payload_size, 4);
  std::memcpy(out + 8, &h.lsn, 8);
  std::memcpy(out + 16, &h.payload_crc, 4);
  std::memcpy(out + 20, &h.key_size, 2);
}

Header DecodeHeader(const char* in) {
  Header h;
  std::memcpy(&h.header_crc, in, 4);
  std::memcpy(&h.payload_size, in + 4, 4);
  std::memcpy(&h.lsn, in + 8, 8);
  std::memcpy(&h.payload_crc, in + 16, 4);
  std::memcpy(&h.key_size, in + 20, 2);
  return h;
}

// The CRC that guards a header: over its fields after header_crc, and the
// key.
uint32_t HeaderCrc(const char* header, absl::string_view key) {
  return Crc32cExtend(Crc32c(absl::string_view(header + 4, kHeaderSize - 4)),
                      key);
}

// What ReadSegment finds at one offset.
enum class Parse { kWhole, kBadPayload, kShort, kBad };

// Parses the record at the start of `bytes`: kWhole (header, key and
// payload intact), kBadPayload (header and key intact, the payload whole in
// length but failing its checksum), kShort (header and key intact, the
// payload cut short by the end of `bytes`), or kBad (no intact header: cut
// short or garbled).
Parse ParseRecord(absl::string_view bytes, Header& h, absl::string_view& key,
                  absl::string_view& payload) {
  if (bytes.size() < kHeaderSize) return Parse::kBad;
  h = DecodeHeader(bytes.data());
  if (bytes.size() - kHeaderSize < h.key_size) return Parse::kBad;
  key = bytes.substr(kHeaderSize, h.key_size);
  if (HeaderCrc(bytes.data(), key) != h.header_crc) return Parse::kBad;
  const size_t rest = bytes.size() - kHeaderSize - h.key_size;
  if (rest < h.payload_size) return Parse::kShort;
  payload = bytes.substr(kHeaderSize + h.key_size, h.payload_size);
  return Crc32c(payload) == h.payload_crc ? Parse::kWhole : Parse::kBadPayload;
}

size_t RecordSize(const Header& h) {
  return kHeaderSize + h.key_size + h.payload_size;
}

// Keeps a copy of the damaged `bytes` at `offset` of segment `path` beside
// it, once, for the operator; returns the copy's path, or why there is none.
std::string KeepDamaged(const std::string& path, size_t offset,
                        absl::string_view bytes) {
  const std::string copy = absl::StrCat(path, ".damaged-at-", offset);
  std::error_code ec;
  if (fs::exists(copy, ec)) return copy;
  if (absl::Status s = WriteFileSynced(copy, bytes); !s.ok()) {
    return absl::StrCat("none: ", s.ToString());
  }
  return copy;
}

// The offset of the first whole record at or after `from`, or the end.
size_t NextWholeRecord(absl::string_view bytes, size_t from) {
  Header h;
  absl::string_view key, payload;
  while (from < bytes.size() &&
         ParseRecord(bytes.substr(from), h, key, payload) != Parse::kWhole) {
    ++from;
  }
  return std::min(from, bytes.size());
}

// One segment's bytes, as reading walks them.
struct SegmentBytes {
  const std::string& path;
  absl::string_view bytes;
  bool last;  // the log's last segment, which may end in a torn write
  const WriteAheadLog::Visitor& visitor;

  void Report(WriteAheadLog::Damage damage) const {
    if (visitor.damage) visitor.damage(std::move(damage));
  }
  std::string Where(size_t offset) const {
    return absl::StrCat("log segment ", FileName(path), " at byte ", offset,
                        ": ");
  }
};

// Bytes at `offset` that are no whole record (`parse` says why; `h` and
// `key` are what of the record could be read): reports them, with a copy
// kept beside the log, and returns where reading goes on, past them. A torn
// tail of the last segment, an unacknowledged write, is cut off instead,
// and reading ends where it was: `offset` is returned. A record whole in
// length that fails its checksum is damage, not a tear.
absl::StatusOr<size_t> PassDamage(const SegmentBytes& s, size_t offset,
                                  Parse parse, const Header& h,
                                  absl::string_view key) {
  const size_t next = NextWholeRecord(s.bytes, offset + 1);
  if (s.last && next == s.bytes.size() && parse != Parse::kBadPayload) {
    if (::truncate(s.path.c_str(), static_cast<off_t>(offset)) != 0) {
      return ErrnoError("cannot cut the torn tail off", s.path);
    }
    return offset;
  }
  const std::string kept =
      KeepDamaged(s.path, offset, s.bytes.substr(offset, next - offset));
  if (parse == Parse::kBadPayload) {
    s.Report(
        {std::string(key), h.lsn,
         absl::StrCat(s.Where(offset), "record ", h.lsn, " has a bad checksum"),
         kept});
  } else {
    s.Report({"", 0,
              absl::StrCat(s.Where(offset), next - offset,
                           " bytes hold no whole record"),
              kept});
  }
  return next;
}

}  // namespace

std::string WriteAheadLog::SegmentPath(uint64_t ordinal) const {
  return (fs::path(options_.dir) / absl::StrFormat("%012d%s", ordinal, kSuffix))
      .string();
}

absl::StatusOr<std::unique_ptr<WriteAheadLog>> WriteAheadLog::Open(
    const Options& options, uint64_t after_lsn, const Visitor& visitor) {
  std::unique_ptr<WriteAheadLog> log(new WriteAheadLog(options));
  if (absl::Status s = CreateDirectory(options.dir); !s.ok()) return s;
  absl::StatusOr<std::vector<uint64_t>> listed = SegmentOrdinals(options.dir);
  if (!listed.ok()) return listed.status();
  const std::vector<uint64_t>& ordinals = *listed;

  // The visitor, told of the first record before it.
  bool started = false;
  Visitor reader = visitor;
  reader.record = [&](uint64_t lsn, absl::string_view key,
                      absl::string_view payload) {
    if (!started && visitor.start) visitor.start(lsn);
    started = true;
    return visitor.record(lsn, key, payload);
  };
  uint64_t last_lsn = 0;
  int64_t size = 0;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    Segment segment{ordinals[i], last_lsn + 1};
    const bool last = i + 1 == ordinals.size();
    if (i > 0 && ordinals[i] != ordinals[i - 1] + 1 && visitor.damage) {
      visitor.damage(
          {"", 0,
           absl::StrCat("log segment ", ordinals[i - 1] + 1, " is missing"),
           ""});
    }
    if (absl::Status s =
            log->ReadSegment(segment, last, reader, last_lsn, size);
        !s.ok()) {
      return s;
    }
    MutexLock lock(log->mu_);
    log->segments_.push_back(segment);
  }
  if (!started && visitor.start) visitor.start(0);
  {
    MutexLock lock(log->mu_);
    absl::Status s = log->OpenForAppend(after_lsn, last_lsn, size);
    if (!s.ok()) return s;
  }
  log->sync_thread_ = std::thread([l = log.get()] { l->SyncLoop(); });
  return log;
}

absl::StatusOr<std::vector<uint64_t>> WriteAheadLog::SegmentOrdinals(
    const std::string& dir) {
  std::error_code ec;
  std::vector<uint64_t> ordinals;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    uint64_t ordinal = 0;
    if (entry.path().extension().string() == kSuffix &&
        absl::SimpleAtoi(entry.path().stem().string(), &ordinal)) {
      ordinals.push_back(ordinal);
    }
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot list ", dir, ": ", ec.message()));
  }
  std::sort(ordinals.begin(), ordinals.end());
  return ordinals;
}

absl::Status WriteAheadLog::OpenForAppend(uint64_t after_lsn, uint64_t last_lsn,
                                          int64_t size) {
  if (segments_.empty() || (after_lsn > last_lsn && size > 0)) {
    // A new segment, so that a jump up to after_lsn + 1 (the log lost its
    // tail after snapshots were taken) falls where reading allows one.
    const uint64_t ordinal =
        segments_.empty() ? 1 : segments_.back().ordinal + 1;
    absl::StatusOr<int> fd = CreateSegment(ordinal);
    if (!fd.ok()) return fd.status();
    fd_ = *fd;
    segments_.push_back({ordinal, std::max(last_lsn, after_lsn) + 1});
    size = 0;
  } else {
    const std::string path = SegmentPath(segments_.back().ordinal);
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) return ErrnoError("cannot open", path);
  }
  segment_size_ = size;
  last_lsn_ = synced_lsn_ = std::max(last_lsn, after_lsn);
  return absl::OkStatus();
}

absl::Status WriteAheadLog::ReadSegment(Segment& segment, bool last,
                                        const Visitor& visitor,
                                        uint64_t& last_lsn, int64_t& size) {
  const std::string path = SegmentPath(segment.ordinal);
  absl::StatusOr<std::string> contents = ReadFile(path);
  if (!contents.ok()) return contents.status();
  const SegmentBytes s{path, *contents, last, visitor};
  size_t offset = 0;
  bool resync = true;  // after damage, whatever LSN comes next
  while (offset < s.bytes.size()) {
    Header h;
    absl::string_view key, payload;
    const Parse parse = ParseRecord(s.bytes.substr(offset), h, key, payload);
    // A segment's first record may skip LSNs (see Open), and so may the
    // first after damage (already reported); each other record follows the
    // one before.
    const bool in_sequence = resync ? h.lsn > last_lsn : h.lsn == last_lsn + 1;
    if (parse == Parse::kWhole && in_sequence) {
      if (offset == 0) segment.first_lsn = h.lsn;
      resync = false;
      last_lsn = h.lsn;
      if (absl::Status st = visitor.record(h.lsn, key, payload); !st.ok()) {
        return st;
      }
      offset += RecordSize(h);
    } else if (parse == Parse::kWhole) {
      s.Report({"", 0,
                absl::StrCat(s.Where(offset), "record ", h.lsn,
                             " follows record ", last_lsn),
                ""});
      // Read on from a later record; skip an earlier one.
      if (h.lsn > last_lsn) {
        last_lsn = h.lsn - 1;
      } else {
        offset += RecordSize(h);
      }
    } else {
      absl::StatusOr<size_t> next = PassDamage(s, offset, parse, h, key);
      if (!next.ok()) return next.status();
      if (*next == offset) break;  // a torn tail, cut off
      if (parse == Parse::kBadPayload) last_lsn = std::max(last_lsn, h.lsn);
      offset = *next;
      resync = true;
    }
  }
  size = static_cast<int64_t>(std::min(offset, s.bytes.size()));
  return absl::OkStatus();
}

absl::StatusOr<int> WriteAheadLog::CreateSegment(uint64_t ordinal) {
  const std::string path = SegmentPath(ordinal);
  const int fd = ::open(
      path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", path);
  if (absl::Status s = SyncDirectory(options_.dir); !s.ok()) {
    ::close(fd);
    return s;
  }
  return fd;
}

WriteAheadLog::~WriteAheadLog() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (sync_thread_.joinable()) sync_thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<uint64_t> WriteAheadLog::Append(absl::string_view key,
                                               absl::string_view payload) {
  if (key.size() > kMaxKeySize || payload.size() > UINT32_MAX) {
    return absl::InvalidArgumentError("log record too large");
  }
  Header h;
  h.payload_size = static_cast<uint32_t>(payload.size());
  h.payload_crc = Crc32c(payload);
  h.key_size = static_cast<uint16_t>(key.size());
  char header[kHeaderSize];

  MutexLock lock(mu_);
  if (broken_) {
    return absl::InternalError(
        "the log could not be repaired after a failed write; restart the "
        "server");
  }
  h.lsn = last_lsn_ + 1;
  EncodeHeader(h, header);
  h.header_crc = HeaderCrc(header, key);
  EncodeHeader(h, header);
  iovec parts[3] = {{header, kHeaderSize},
                    {const_cast<char*>(key.data()), key.size()},
                    {const_cast<char*>(payload.data()), payload.size()}};
  const size_t total = RecordSize(h);
  size_t written = 0;
  absl::Status status;
  while (written < total) {
    const ssize_t n = ::writev(fd_, parts, 3);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoError("cannot write the log",
                          SegmentPath(segments_.back().ordinal));
      break;
    }
    written += static_cast<size_t>(n);
    // Skip what was written (short writes are rare: full disks, signals).
    size_t skip = static_cast<size_t>(n);
    for (iovec& part : parts) {
      const size_t take = std::min(skip, part.iov_len);
      part.iov_base = static_cast<char*>(part.iov_base) + take;
      part.iov_len -= take;
      skip -= take;
    }
  }
  if (!status.ok()) {
    // Undo a partial record, so the next one follows the last whole one.
    if (written > 0 && ::ftruncate(fd_, segment_size_) != 0) broken_ = true;
    return status;
  }
  last_lsn_ = h.lsn;
  segment_size_ += static_cast<int64_t>(total);
  bytes_appended_ += static_cast<int64_t>(total);
  if (options_.sync) {
    wake_.Signal();
  } else {
    synced_lsn_ = last_lsn_;
    if (segment_size_ >= options_.segment_bytes) wake_.Signal();
  }
  return h.lsn;
}

void WriteAheadLog::WhenDurable(uint64_t lsn,
                                absl::AnyInvocable<void() &&> done) {
  {
    MutexLock lock(mu_);
    if (lsn > synced_lsn_) {
      waiting_.emplace(lsn, std::move(done));
      return;
    }
  }
  std::move(done)();
}

void WriteAheadLog::WaitDurable(uint64_t lsn) {
  MutexLock lock(mu_);
  while (synced_lsn_ < lsn) durable_.Wait(mu_);
}

uint64_t WriteAheadLog::last_lsn() const {
  MutexLock lock(mu_);
  return last_lsn_;
}

int64_t WriteAheadLog::bytes_appended() const {
  MutexLock lock(mu_);
  return bytes_appended_;
}

absl::Status WriteAheadLog::Truncate(uint64_t lsn) {
  std::vector<uint64_t> doomed;
  {
    MutexLock lock(mu_);
    // Segment i holds LSNs [first_lsn(i), first_lsn(i + 1)).
    while (segments_.size() > 1 && segments_[1].first_lsn <= lsn + 1) {
      doomed.push_back(segments_.front().ordinal);
      segments_.erase(segments_.begin());
    }
  }
  for (uint64_t ordinal : doomed) {
    const std::string path = SegmentPath(ordinal);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("cannot remove", path);
    }
  }
  return doomed.empty() ? absl::OkStatus() : SyncDirectory(options_.dir);
}

void WriteAheadLog::SyncLoop() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point retry_rotation;  // after a failed rotation
  mu_.Lock();
  while (true) {
    // Wakes for work, or once a second.
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(1);
    bool rotation_due = false;
    while (true) {
      rotation_due = segment_size_ >= options_.segment_bytes &&
                     Clock::now() >= retry_rotation;
      if (stopping_ || last_lsn_ > synced_lsn_ || rotation_due) break;
      if (!wake_.WaitUntil(mu_, deadline)) break;
    }
    const bool stop = stopping_;
    if (!stop && rotation_due && !Rotate()) {
      // Keep appending to the current segment; retry in a second.
      retry_rotation = Clock::now() + std::chrono::seconds(1);
    }
    if (last_lsn_ > synced_lsn_) {
      const uint64_t target = last_lsn_;
      const int fd = fd_;
      mu_.Unlock();
      SyncOrDie(fd);
      mu_.Lock();
      synced_lsn_ = std::max(synced_lsn_, target);
    }
    RunDurableCallbacks();
    if (stop && last_lsn_ == synced_lsn_) break;
  }
  mu_.Unlock();
}

bool WriteAheadLog::Rotate() {
  const uint64_t ordinal = segments_.back().ordinal + 1;
  mu_.Unlock();
  absl::StatusOr<int> fd = CreateSegment(ordinal);
  mu_.Lock();
  if (!fd.ok()) {
    std::fprintf(stderr, "cannot start a new log segment: %s\n",
                 fd.status().ToString().c_str());
    return false;
  }
  const int old_fd = std::exchange(fd_, *fd);
  segments_.push_back({ordinal, last_lsn_ + 1});
  segment_size_ = 0;
  const uint64_t target = last_lsn_;  // every record of the old segment
  mu_.Unlock();
  SyncOrDie(old_fd);
  ::close(old_fd);
  mu_.Lock();
  synced_lsn_ = std::max(synced_lsn_, target);
  return true;
}

void WriteAheadLog::SyncOrDie(int fd) const {
  if (!options_.sync) return;
  const absl::Time start = absl::Now();
  const int synced = ::fdatasync(fd);
  if (synced == 0) {
    if (options_.on_sync) options_.on_sync(absl::Now() - start);
    return;
  }
  std::fprintf(stderr, "fatal: cannot sync the log: %s\n",
               std::strerror(errno));
  std::abort();
}

void WriteAheadLog::RunDurableCallbacks() {
  durable_.SignalAll();
  std::vector<absl::AnyInvocable<void() &&>> ready;
  while (!waiting_.empty() && waiting_.begin()->first <= synced_lsn_) {
    ready.push_back(std::move(waiting_.begin()->second));
    waiting_.erase(waiting_.begin());
  }
  if (ready.empty()) return;
  mu_.Unlock();
  for (auto& done : ready) std::move(done)();
  mu_.Lock();
}

}  // namespace halfspace
