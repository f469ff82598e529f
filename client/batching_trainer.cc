#include "client/batching_trainer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace halfspace {

absl::StatusOr<std::unique_ptr<BatchingTrainer>> BatchingTrainer::Open(
    Client* client, std::string model, std::string source, OnResult on_result,
    BatchingOptions options) {
  if (options.max_batch == 0 || options.max_pending < options.max_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_batch is ", options.max_batch, " and max_pending ",
        options.max_pending, "; give 1 <= max_batch <= max_pending"));
  }
  absl::StatusOr<std::unique_ptr<ExactlyOnceTrainer>> trainer =
      ExactlyOnceTrainer::Open(client, std::move(model), std::move(source),
                               options.retry);
  if (!trainer.ok()) return trainer.status();
  return std::unique_ptr<BatchingTrainer>(
      new BatchingTrainer(*std::move(trainer), std::move(on_result), options));
}

BatchingTrainer::BatchingTrainer(std::unique_ptr<ExactlyOnceTrainer> trainer,
                                 OnResult on_result, BatchingOptions options)
    : options_(options),
      on_result_(std::move(on_result)),
      trainer_(std::move(trainer)),
      next_sequence_(trainer_->last_applied() + 1),
      last_applied_(trainer_->last_applied()),
      thread_([this] { Run(); }) {}

BatchingTrainer::~BatchingTrainer() { Close().IgnoreError(); }

absl::StatusOr<uint64_t> BatchingTrainer::Add(LabeledExample example) {
  absl::MutexLock lock(&mu_);
  const auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return queue_.size() + in_flight_ < options_.max_pending ||
           !failure_.ok() || closing_;
  };
  mu_.Await(absl::Condition(&room));
  if (!failure_.ok()) return failure_;
  if (closing_) {
    return absl::FailedPreconditionError("the batching trainer is closed");
  }
  queue_.push_back({std::move(example), absl::Now()});
  return next_sequence_++;
}

absl::Status BatchingTrainer::Flush() {
  absl::MutexLock lock(&mu_);
  ++flushing_;
  const auto answered = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return (queue_.empty() && in_flight_ == 0) || !failure_.ok();
  };
  mu_.Await(absl::Condition(&answered));
  --flushing_;
  return failure_;
}

absl::Status BatchingTrainer::Close() {
  absl::Status flushed = Flush();
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (thread_.joinable()) thread_.join();
  return flushed;
}

uint64_t BatchingTrainer::last_applied() const {
  absl::MutexLock lock(&mu_);
  return last_applied_;
}

void BatchingTrainer::Run() {
  std::vector<LabeledExample> batch;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const auto waiting = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || closing_;
      };
      mu_.Await(absl::Condition(&waiting));
      if (queue_.empty()) return;  // closing, and all sent
      const auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return queue_.size() >= options_.max_batch || flushing_ > 0 || closing_;
      };
      // The oldest example waits flush_interval at most.
      mu_.AwaitWithDeadline(absl::Condition(&ready),
                            queue_.front().added + options_.flush_interval);
      const size_t n = std::min(queue_.size(), options_.max_batch);
      batch.clear();
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front().example));
        queue_.pop_front();
      }
      in_flight_ = n;
    }
    const uint64_t first = trainer_->last_applied() + 1;
    absl::StatusOr<v1::TrainResponse> response = trainer_->Train(batch);
    if (response.ok() && on_result_ != nullptr) {
      for (int i = 0; i < response->results_size(); ++i) {
        on_result_(first + i, response->results(i));
      }
    }
    absl::MutexLock lock(&mu_);
    in_flight_ = 0;
    if (!response.ok()) {
      failure_ = response.status();
      queue_.clear();
      return;
    }
    last_applied_ = trainer_->last_applied();
  }
}

}  // namespace halfspace
