// Where models write each change down before they apply it: the
// write-ahead log (core/storage/write_ahead_log.h), or nothing when the
// server keeps only periodic snapshots. The journal encodes what it is
// handed: its callers give it the change itself (a batch, as batch.h holds
// it), never bytes of their own making.
//
// A change is appended while the model's writer lock is held, after it is
// known to apply and before it does, so the journal holds each model's
// changes in the order they were applied, and a change the journal refused
// (a full disk) is not applied at all.

#ifndef HALFSPACE_CORE_TRAINING_JOURNAL_H_
#define HALFSPACE_CORE_TRAINING_JOURNAL_H_

#include <cstdint>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace halfspace {

struct TrainBatch;
struct RememberBatch;

class Journal {
 public:
  virtual ~Journal() = default;

  // Appends a change to model `model` and returns its log sequence number
  // (LSN); LSNs increase from 1. On failure nothing was appended
  // (RESOURCE_EXHAUSTED for a full disk).
  //
  // A batch of training examples or delayed feedback (see trainer.h).
  virtual absl::StatusOr<uint64_t> Append(absl::string_view model,
                                          const TrainBatch& batch) = 0;
  // Examples remembered for delayed feedback.
  virtual absl::StatusOr<uint64_t> Append(absl::string_view model,
                                          const RememberBatch& batch) = 0;
  // A change to the model as a whole (its creation, weights, deletion or
  // restored state) as the model registry encodes it.
  virtual absl::StatusOr<uint64_t> Append(absl::string_view model,
                                          absl::string_view record) = 0;

  // Calls `done` once every record up to `lsn` is as durable as the
  // journal makes records (at once if it is already): a call is answered
  // then, never before.
  virtual void WhenDurable(uint64_t lsn,
                           absl::AnyInvocable<void() &&> done) = 0;

  // Blocks until every record up to `lsn` is as durable: a snapshot waits
  // for it, so that it never holds a change whose call could not yet be
  // answered.
  virtual void WaitDurable(uint64_t lsn) = 0;
};

// The journal of recovery: replaying the record with LSN `lsn` appends
// nothing and reports that LSN, so the model ends where it was.
class ReplayJournal final : public Journal {
 public:
  explicit ReplayJournal(uint64_t lsn) : lsn_(lsn) {}
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  const TrainBatch&) override {
    return lsn_;
  }
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  const RememberBatch&) override {
    return lsn_;
  }
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  absl::string_view) override {
    return lsn_;
  }
  void WhenDurable(uint64_t, absl::AnyInvocable<void() &&> done) override {
    std::move(done)();
  }
  void WaitDurable(uint64_t) override {}

 private:
  const uint64_t lsn_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_TRAINING_JOURNAL_H_
