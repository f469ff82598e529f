// Where models write each change down before they apply it: the
// write-ahead log (core/storage/write_ahead_log.h), or nothing when the
// server keeps only periodic snapshots.
//
// A change is appended while the model's writer lock is held, after it is
// known to apply and before it does, so the log holds each model's changes
// in the order they were applied, and a change the log refused (a full disk)
// is not applied at all.

#ifndef HALFSPACE_CORE_TRAINING_JOURNAL_H_
#define HALFSPACE_CORE_TRAINING_JOURNAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/monitors/paired_mistakes.h"
#include "core/monitors/pending_examples.h"

namespace halfspace {

class Journal {
 public:
  virtual ~Journal() = default;

  // Appends `record`, a change to model `model`, and returns its log
  // sequence number (LSN); LSNs increase from 1. On failure nothing was
  // appended (RESOURCE_EXHAUSTED for a full disk).
  virtual absl::StatusOr<uint64_t> Append(absl::string_view model,
                                          absl::string_view record) = 0;

  // Blocks until every record up to `lsn` is as durable as the journal
  // makes records: a snapshot waits for it, so that it never holds a change
  // whose call could not yet be answered.
  virtual void WaitDurable(uint64_t lsn) = 0;
};

// The journal of recovery: replaying the record with LSN `lsn` appends
// nothing and reports that LSN, so the model ends where it was.
class ReplayJournal final : public Journal {
 public:
  explicit ReplayJournal(uint64_t lsn) : lsn_(lsn) {}
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  absl::string_view) override {
    return lsn_;
  }
  void WaitDurable(uint64_t) override {}

 private:
  const uint64_t lsn_;
};

// One change's record and where it goes.
struct LogEntry {
  Journal* journal = nullptr;  // none: the change is not logged
  absl::string_view record;
  // Set by the model: the record's LSN, or 0 if nothing was appended (no
  // journal, or nothing changed).
  uint64_t lsn = 0;
};

// A batch of training examples: which producer tagged them (for
// exactly-once resume), and how the batch is written down.
struct Batch {
  // The producer's id and the first example's sequence number (the others
  // follow it); empty and 0 for untagged examples.
  absl::string_view source;
  uint64_t first_sequence = 0;
  LogEntry log;
  // The examples a server limit refused (by index in the batch): whether a
  // limit refuses an example depends on flags and on the other models, so
  // recovery must not decide it again. Model::Learn fills it before logging
  // and then calls `record_refusals` (if set and any was refused) so that
  // log.record can carry them; recovery gives the logged list instead.
  std::vector<uint32_t> refused;
  std::function<void(Batch&)> record_refusals;
  // Delayed feedback: example i learns the example remembered under
  // example_ids[i] (see Model::Remember), as of pending_now_micros under
  // pending_limits; empty for a plain batch.
  absl::Span<const std::string> example_ids;
  int64_t pending_now_micros = 0;
  PendingLimits pending_limits;
  // A fan-out stream: what the models it trained before this one on the
  // same examples did with each, to count paired mistakes against them
  // (see paired_mistakes.h); empty otherwise.
  absl::Span<const PeerOutcomes> peers;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_TRAINING_JOURNAL_H_
