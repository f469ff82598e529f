#include "client/exactly_once_trainer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace halfspace {
namespace {

// Runs `attempt` until it succeeds, fails for good, or time runs out,
// sleeping between tries with exponential backoff.
template <typename T, typename Attempt>
absl::StatusOr<T> WithRetries(const RetryOptions& options, Attempt attempt) {
  const absl::Time deadline = absl::Now() + options.give_up_after;
  absl::Duration backoff = options.initial_backoff;
  while (true) {
    absl::StatusOr<T> result = attempt();
    if (result.ok() || !Retryable(result.status()) ||
        absl::Now() + backoff > deadline) {
      return result;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace

bool Retryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kOutOfRange:  // the stream ended under us
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::unique_ptr<ExactlyOnceTrainer>> ExactlyOnceTrainer::Open(
    Client* client, std::string model, std::string source,
    RetryOptions options) {
  absl::StatusOr<uint64_t> last = WithRetries<uint64_t>(
      options, [&] { return client->GetSourceSequence(model, source); });
  if (!last.ok()) return last.status();
  return std::unique_ptr<ExactlyOnceTrainer>(new ExactlyOnceTrainer(
      client, std::move(model), std::move(source), options, *last));
}

absl::StatusOr<v1::TrainResponse> ExactlyOnceTrainer::Train(
    absl::Span<const LabeledExample> examples) {
  absl::StatusOr<v1::TrainResponse> response =
      WithRetries<v1::TrainResponse>(options_, [&] {
        absl::StatusOr<v1::TrainResponse> r = Attempt(examples);
        if (!r.ok()) stream_.reset();  // reconnect on the next attempt
        return r;
      });
  if (response.ok()) next_sequence_ += examples.size();
  return response;
}

absl::StatusOr<v1::TrainResponse> ExactlyOnceTrainer::Attempt(
    absl::Span<const LabeledExample> examples) {
  if (stream_ == nullptr) {
    stream_ = client_->Train(model_, source_, next_sequence_);
  }
  absl::Status sent = stream_->Send(examples);
  absl::StatusOr<v1::TrainResponse> response =
      sent.ok() ? stream_->Receive() : sent;
  if (response.ok()) return response;
  // The stream is broken: its own status says why.
  absl::Status finished = stream_->Finish();
  return finished.ok()
             ? absl::UnavailableError(absl::StrCat(
                   "the training stream ended: ", response.status().message()))
             : finished;
}

}  // namespace halfspace
