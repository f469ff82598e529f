// Training from a producer that has one example at a time, in batches.
//
// Add queues an example and returns at once; a thread of the trainer's
// sends the queue in requests of up to max_batch examples, each as soon as
// it is full or its oldest example has waited flush_interval, through an
// ExactlyOnceTrainer: every example is numbered under the producer's
// source, and after a lost connection or a server restart the trainer
// reconnects and resends, and nothing is applied twice.
//
// Memory is bounded: at most max_pending examples are queued or in flight
// (one request at a time is); past that, Add waits (backpressure). Each
// example's result, a rejection in-band included, goes to the callback in
// the order the examples were added. A failure no retry cures (the model
// deleted, a request refused whole) stops the trainer: examples not
// answered by then are not applied, and Add, Flush and Close return it.
//
// Thread-safe: any number of producer threads may Add.

#ifndef HALFSPACE_CLIENT_BATCHING_TRAINER_H_
#define HALFSPACE_CLIENT_BATCHING_TRAINER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/exactly_once_trainer.h"
#include "client/halfspace_client.h"

namespace halfspace {

struct BatchingOptions {
  size_t max_batch = 256;  // examples per request
  // The longest an example waits for its request to fill.
  absl::Duration flush_interval = absl::Milliseconds(10);
  size_t max_pending = 4096;  // examples queued or in flight
  RetryOptions retry;         // reconnecting, as ExactlyOnceTrainer does
};

class BatchingTrainer {
 public:
  // Called on the trainer's thread with each example's sequence number and
  // result, in order. It should return soon: the next request waits.
  using OnResult =
      std::function<void(uint64_t sequence, const v1::ExampleResult& result)>;

  // Opens a trainer for `source` on `model`, numbering on from where the
  // server stands (see ExactlyOnceTrainer::Open).
  // REQUIRES: `client` outlives the trainer.
  static absl::StatusOr<std::unique_ptr<BatchingTrainer>> Open(
      Client* client, std::string model, std::string source, OnResult on_result,
      BatchingOptions options = {});

  ~BatchingTrainer();  // Close()s

  // Queues `example` and returns its sequence number, waiting while
  // max_pending examples are unanswered. Once the trainer has failed or
  // closed, returns why and queues nothing.
  absl::StatusOr<uint64_t> Add(LabeledExample example);

  // Sends what is queued without waiting for the interval, and returns once
  // every example added before has its result.
  absl::Status Flush();

  // Flushes and stops the thread; Add fails afterwards.
  absl::Status Close();

  // The last sequence number the model has applied from this source, as
  // far as answered requests tell.
  uint64_t last_applied() const;

 private:
  BatchingTrainer(std::unique_ptr<ExactlyOnceTrainer> trainer,
                  OnResult on_result, BatchingOptions options);

  void Run();

  const BatchingOptions options_;
  const OnResult on_result_;
  const std::unique_ptr<ExactlyOnceTrainer> trainer_;  // the thread's

  // An example added and not yet sent, and when it was added.
  struct Pending {
    LabeledExample example;
    absl::Time added;
  };

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_);  // of the next Add
  uint64_t last_applied_ ABSL_GUARDED_BY(mu_);
  int flushing_ ABSL_GUARDED_BY(mu_) = 0;  // Flush calls waiting
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_BATCHING_TRAINER_H_
