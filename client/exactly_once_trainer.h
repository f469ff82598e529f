// Training from one producer exactly once, across server restarts and lost
// connections.
//
// The trainer tags every example with the producer's source id and a
// sequence number (1, 2, 3, ... in the order given to Train) and keeps one
// batch in flight. When the stream fails for a reason a retry can cure
// (UNAVAILABLE, a cancelled or aborted stream, a deadline), it reconnects
// with backoff and resends the batch: whatever part of it the server had
// already applied is answered as duplicates and not applied again. The
// results of examples applied just before a failure are lost with the
// connection; they come back as duplicates.
//
// A producer that restarts resumes from last_applied() + 1, which Open asks
// the server for.
//
// Not thread-safe: one producer thread per trainer.

#ifndef HALFSPACE_CLIENT_EXACTLY_ONCE_TRAINER_H_
#define HALFSPACE_CLIENT_EXACTLY_ONCE_TRAINER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/halfspace_client.h"

namespace halfspace {

struct RetryOptions {
  // Give up on a batch after retrying this long.
  absl::Duration give_up_after = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(1);
};

class ExactlyOnceTrainer {
 public:
  // Asks the server where `source` stands on `model` (retrying as Train
  // does) and opens a trainer that numbers on from there.
  // REQUIRES: `client` outlives the trainer.
  static absl::StatusOr<std::unique_ptr<ExactlyOnceTrainer>> Open(
      Client* client, std::string model, std::string source,
      RetryOptions options = {});

  // The last sequence number the model applied from this source: examples
  // up to it are in the model.
  uint64_t last_applied() const { return next_sequence_ - 1; }

  // Trains on `examples` as the next sequence numbers and returns their
  // results once the server has them durably. Errors a retry cannot cure
  // (NOT_FOUND, INVALID_ARGUMENT, ...) are returned at once; then the
  // examples' numbers are not used up.
  absl::StatusOr<v1::TrainResponse> Train(
      absl::Span<const LabeledExample> examples);

 private:
  ExactlyOnceTrainer(Client* client, std::string model, std::string source,
                     RetryOptions options, uint64_t last_applied)
      : client_(client),
        model_(std::move(model)),
        source_(std::move(source)),
        options_(options),
        next_sequence_(last_applied + 1) {}

  // One attempt: sends the batch on the open stream (opening one if needed)
  // and reads its response.
  absl::StatusOr<v1::TrainResponse> Attempt(
      absl::Span<const LabeledExample> examples);

  Client* const client_;
  const std::string model_;
  const std::string source_;
  const RetryOptions options_;
  uint64_t next_sequence_;
  std::unique_ptr<TrainingStream> stream_;
};

// Whether a failed call may succeed if tried again.
bool Retryable(const absl::Status& status);

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_EXACTLY_ONCE_TRAINER_H_
