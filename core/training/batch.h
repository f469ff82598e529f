// What one write to a model holds, as plain data: a batch of training
// examples or of delayed feedback, or examples remembered for feedback.
// Everything a write depends on is here, so that the journal can write it
// down whole and recovery, given the same batch, decides exactly as the
// first run did (see trainer.h).

#ifndef HALFSPACE_CORE_TRAINING_BATCH_H_
#define HALFSPACE_CORE_TRAINING_BATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/monitors/paired_mistakes.h"
#include "core/monitors/pending_examples.h"

namespace halfspace {

// Delayed feedback for one remembered example: its id, and the label (or
// class label) and importance weight it learns with.
struct Feedback {
  std::string id;
  int label = 0;
  std::string class_label;
  std::optional<double> weight;  // none: 1
};

struct TrainBatch {
  // The producer's id and the first example's sequence number (the others
  // follow it), for exactly-once training; empty and 0 for untagged
  // examples.
  absl::string_view source;
  uint64_t first_sequence = 0;
  // A tagged batch sent while the batch before it in the same stream was
  // on its way: the source's last sequence once that one is learned (0:
  // none). Unless the source has reached it, the batch learns nothing and
  // every example is refused (ABORTED): the one before was lost, and this
  // one must not overtake it.
  uint64_t follows = 0;

  // How the examples are written down. A batch of training examples: the
  // request that carried them, in the caller's encoding (the journal keeps
  // its bytes; recovery decodes them again).
  absl::string_view request;

  // A batch of delayed feedback: example i is the one remembered under
  // feedback[i].id, with feedback[i]'s label; it learns only while that
  // example waits, as of now_micros under pending_limits, and then joins
  // it. The journal writes the ids and labels; the features are the
  // remembered ones. Empty for a plain batch.
  absl::Span<const Feedback> feedback;
  // Delayed feedback as earlier releases logged it, replayed: `request`
  // holds the examples, example i joins example_ids[i].
  absl::Span<const std::string> example_ids;
  // When the batch was taken (microseconds since the Unix epoch), logged
  // with it: the clock remembered examples wait by, and the time a drift
  // it shows is reported at.
  int64_t now_micros = 0;
  PendingLimits pending_limits;

  // A fan-out stream: what the models it trained before this one on the
  // same examples did with each, to count paired mistakes against them
  // (see paired_mistakes.h); empty otherwise.
  absl::Span<const PeerOutcomes> peers;

  // The examples a server limit refused, by index, ascending. Whether a
  // limit refuses an example depends on flags and on the other models, so
  // the trainer decides it once, before the batch is written down, and
  // recovery takes the written list instead of deciding again.
  std::vector<uint32_t> refused;
};

// Examples remembered for delayed feedback (see Model::Remember), as of
// now_micros under `limits`; with no entries, only what is due expires.
struct RememberBatch {
  absl::Span<const PendingExamples::Entry> entries;
  int64_t now_micros = 0;
  PendingLimits limits;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_TRAINING_BATCH_H_
