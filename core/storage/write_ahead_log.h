// The write-ahead log: every change to every model, in the order applied,
// each under a log sequence number (LSN), in segment files
// <dir>/<ordinal, 12 digits>.log of about `segment_bytes` each.
//
// Record framing, integers little-endian:
//
//   u32 header_crc   crc32c of the rest of the header and the key
//   u32 payload_size
//   u64 lsn
//   u32 payload_crc  crc32c of the payload
//   u16 key_size
//   key              the model the record changes
//   payload
//
// Durability: Append writes the record to the segment before it returns (the
// OS holds it: the record survives the process being killed). With `sync`, a
// sync thread then makes written records durable with fdatasync, every
// record written meanwhile sharing one sync (group commit), and runs the
// callbacks that wait for them (WhenDurable). A failed fdatasync stops the
// process: after one, the kernel may have dropped the data, and only a
// restart from what is on disk is sound.
//
// Recovery (Open) reads every segment in order. A record cut short at the
// end of the last segment (or a header garbled there), with nothing whole
// after it, is the torn tail of a write that was never acknowledged: it is
// cut off. Anything else that does not read back — a record whole in length
// whose checksum fails, at the tail too, or bytes holding no record — is
// damage: reported (Damage), its bytes copied once beside the segment as
// <segment>.damaged-at-<offset> (never deleted by the log), and reading goes
// on from the next whole record; the damaged bytes stay where they are, so
// every later recovery reports them again.
//
// Thread safety: every method may be called concurrently.

#ifndef HALFSPACE_CORE_STORAGE_WRITE_AHEAD_LOG_H_
#define HALFSPACE_CORE_STORAGE_WRITE_AHEAD_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/storage/log_record.h"

namespace halfspace {

class WriteAheadLog final : public RecordJournal {
 public:
  struct Options {
    std::string dir;
    // Whether records count as durable only once synced (fdatasync); if not,
    // once written.
    bool sync = true;
    // A segment is closed and a new one started once it holds this much.
    int64_t segment_bytes = int64_t{64} << 20;
    // Told how long each sync took (on the sync thread); may be empty.
    std::function<void(absl::Duration)> on_sync;
  };

  // Records that could not be read back.
  struct Damage {
    // The damaged record's model, if its header is whole; else empty: any
    // model may have lost a record.
    std::string key;
    uint64_t lsn = 0;   // the damaged record's LSN, if its header is whole
    std::string where;  // file and offset, and what is wrong
    // The copy of the damaged bytes kept beside the segment (see Open).
    std::string kept;
  };

  struct Visitor {
    // Called once before the first record, with its LSN; with 0 if there is
    // none.
    std::function<void(uint64_t first_lsn)> start;
    // Called for each whole record in LSN order; an error stops Open.
    std::function<absl::Status(uint64_t lsn, absl::string_view key,
                               absl::string_view payload)>
        record;
    std::function<void(const Damage&)> damage;
  };

  // Opens the log in `options.dir` (created if missing), reads every record
  // through `visitor`, and continues numbering after the last record or
  // `after_lsn`, whichever is larger (so a log whose records were all
  // truncated away never reuses an LSN a snapshot holds).
  static absl::StatusOr<std::unique_ptr<WriteAheadLog>> Open(
      const Options& options, uint64_t after_lsn, const Visitor& visitor);

  WriteAheadLog(const WriteAheadLog&) = delete;
  WriteAheadLog& operator=(const WriteAheadLog&) = delete;
  // Syncs what was written, runs the remaining callbacks and stops.
  ~WriteAheadLog() override;

  // Writes one record. RESOURCE_EXHAUSTED when the disk is full, other
  // errors as INTERNAL; either way the log is as it was.
  absl::StatusOr<uint64_t> Append(absl::string_view key,
                                  absl::string_view payload) override;
  using RecordJournal::Append;  // a batch, encoded as a record

  // Runs `done` once every record up to `lsn` is durable: at once (on the
  // caller's thread) if it is, else on the sync thread, which it must not
  // block.
  void WhenDurable(uint64_t lsn, absl::AnyInvocable<void() &&> done) override;

  // Blocks until every record up to `lsn` is durable.
  void WaitDurable(uint64_t lsn) override;

  // The LSN of the last record appended.
  uint64_t last_lsn() const;

  // Bytes appended since this log was opened.
  int64_t bytes_appended() const;

  // Deletes the closed segments whose records all have LSN <= `lsn`.
  absl::Status Truncate(uint64_t lsn);

  const std::string& dir() const { return options_.dir; }

 private:
  struct Segment {
    uint64_t ordinal = 0;
    uint64_t first_lsn = 0;  // of its first record, or the next LSN if none
  };

  explicit WriteAheadLog(const Options& options) : options_(options) {}
  std::string SegmentPath(uint64_t ordinal) const;
  absl::Status ReadSegment(Segment& segment, bool last, const Visitor& visitor,
                           uint64_t& last_lsn, int64_t& size);
  // Creates segment `ordinal`'s file and makes its directory entry durable.
  absl::StatusOr<int> CreateSegment(uint64_t ordinal);
  // The ordinals of the segments in `dir`, ascending.
  static absl::StatusOr<std::vector<uint64_t>> SegmentOrdinals(
      const std::string& dir);
  // After reading: the file descriptor to append to (the last segment, or
  // a new one), and the positions from what reading found.
  absl::Status OpenForAppend(uint64_t after_lsn, uint64_t last_lsn,
                             int64_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SyncLoop();
  // Starts the next segment, then syncs and closes the old one; false if
  // the new one could not be created. Releases mu_ and takes it again.
  bool Rotate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // fdatasyncs `fd` if the log syncs, or stops the process: after a failed
  // fdatasync the kernel may have dropped the data, and only a restart from
  // what is on disk is sound.
  void SyncOrDie(int fd) const;
  // Runs, outside the lock, the callbacks of records up to synced_.
  // Releases mu_ and takes it again.
  void RunDurableCallbacks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;

  mutable Mutex mu_;
  CondVar wake_;     // for the sync thread
  CondVar durable_;  // for WaitDurable
  // Oldest first; the last is written to.
  std::vector<Segment> segments_ ABSL_GUARDED_BY(mu_);
  // The last segment's; closed by the sync thread.
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t segment_size_ ABSL_GUARDED_BY(mu_) = 0;  // bytes in the last one
  uint64_t last_lsn_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t synced_lsn_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_appended_ ABSL_GUARDED_BY(mu_) = 0;
  // A failed append could not be undone.
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::multimap<uint64_t, absl::AnyInvocable<void() &&>> waiting_
      ABSL_GUARDED_BY(mu_);

  std::thread sync_thread_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_WRITE_AHEAD_LOG_H_
