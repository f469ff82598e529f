// The write path: how a batch of examples, of delayed feedback or of
// examples to remember becomes a change to a model. Train, Feedback,
// fan-out streams and recovery all go through it, so that a change is
// decided, written down and applied in one place and recovery, given the
// batch the journal holds, decides exactly as the first run did.
//
// For each batch, under the model's writer lock:
//   1. examples its source sent before are answered as duplicates;
//   2. the limits admit or refuse each example (recovery takes the
//      refusals the record lists);
//   3. the batch, refusals included, is appended to the journal;
//   4. the examples learn, each feedback example joining the example it
//      labels;
//   5. remembered examples that are due expire, paired mistakes are
//      counted against the batch's peers, and the source's position moves.
// A batch the journal refuses changes nothing. The caller answers once the
// LSN returned is durable (Journal::WhenDurable).
//
// Thread safety: a Trainer may be shared; it holds nothing of its own.

#ifndef HALFSPACE_CORE_TRAINING_TRAINER_H_
#define HALFSPACE_CORE_TRAINING_TRAINER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/model/model.h"
#include "core/training/batch.h"
#include "core/training/journal.h"

namespace halfspace {

// The most sources one model tracks for exactly-once training.
inline constexpr size_t kMaxSources = 10000;

class Trainer {
 public:
  // Writes changes to `journal`; null: nothing is written down (a server
  // that keeps only snapshots).
  explicit Trainer(Journal* journal) : journal_(journal) {}

  // Learns `examples` (prepared by `model`) as `batch` says and writes one
  // outcome per example (see Model::Learn). Fills batch.refused (while the
  // budget enforces limits; in recovery it is taken as given). Returns the
  // LSN of the batch's record, or 0 if nothing was written down (no
  // journal, or every example a duplicate). Returns, learning nothing:
  // NOT_FOUND once the model is deleted; INVALID_ARGUMENT for a tagged
  // batch starting at sequence 0 or feedback ids that do not match the
  // examples; ABORTED for a tagged batch whose `follows` its source has
  // not reached (the batch before it was lost, or comes after it);
  // RESOURCE_EXHAUSTED for a source past kMaxSources; the journal's
  // error.
  absl::StatusOr<uint64_t> Train(
      Model& model, TrainBatch& batch,
      absl::Span<const PreparedExample> examples,
      absl::Span<ExampleOutcome> outcomes,
      std::vector<std::string>* class_names = nullptr) const;

  // Remembers `entries` for delayed feedback as Model::Remember does,
  // written down first; returns the record's LSN (0 if none).
  absl::StatusOr<uint64_t> Remember(
      Model& model, std::vector<PendingExamples::Entry>&& entries,
      int64_t now_micros, const PendingLimits& limits) const;

 private:
  // Appends `batch`, a change to `model` if it `changes` anything (not
  // every example a duplicate), to the journal; returns its LSN, or 0 if
  // nothing was appended.
  absl::StatusOr<uint64_t> WriteDown(const Model& model,
                                     const TrainBatch& batch, bool changes,
                                     Model::Writer& writer) const;

  Journal* const journal_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_TRAINING_TRAINER_H_
