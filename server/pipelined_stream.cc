#include "server/pipelined_stream.h"

#include <utility>

namespace halfspace {

namespace {

absl::Status Drained() {
  return absl::UnavailableError(
      "the server is shutting down: every request answered on this stream "
      "was learned, and none after; resume on another server");
}

}  // namespace

PipelinedStream::~PipelinedStream() {
  if (added_) gate_->Remove(this);
}

void PipelinedStream::Start(const absl::Status& status) {
  if (status.ok()) {
    added_ = gate_ != nullptr && gate_->Add(this);
    if (gate_ != nullptr && !added_) {
      MutexLock lock(mu_);
      DrainLocked();
    }
    Pump();
    return;
  }
  {
    MutexLock lock(mu_);
    finished_ = true;
  }
  Finish(End(status));
}

void PipelinedStream::OnReadDone(bool ok) {
  {
    MutexLock lock(mu_);
    // Half-closed or cancelled; or, draining, a request that is not taken.
    if (!ok || draining_) {
      reading_ = false;
      reads_over_ = true;
      ok = false;
    } else {
      handling_ = true;
    }
  }
  if (!ok) {
    Pump();
    return;
  }
  grpc::ByteBuffer response;
  uint64_t lsn = 0;
  const absl::Status handled = Handle(request_, response, lsn);
  const bool waits = handled.ok() && lsn != 0 && log_ != nullptr;
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    reading_ = false;
    handling_ = false;
    if (!handled.ok()) {
      reads_over_ = true;
      end_ = handled;
    } else {
      id = front_id_ + pending_.size();
      Pending& p = pending_.emplace_back();
      p.bytes.Swap(&response);
      p.size = p.bytes.Length();
      p.durable = !waits;
      pending_bytes_ += p.size;
      if (waits) ++awaiting_durable_;
    }
  }
  if (waits) log_->WhenDurable(lsn, [this, id] { OnDurable(id); });
  Pump();
}

void PipelinedStream::OnDurable(uint64_t id) {
  // No reaction of gRPC's protects this thread: the stream may be freed as
  // soon as the write or Finish decided here has started, so this decides
  // on one of them, starts it, and touches nothing after. (It never needs
  // to start a read: reads wait for room, which only a finished write
  // makes, and OnWriteDone pumps on.)
  const grpc::ByteBuffer* write = nullptr;
  bool finish = false;
  absl::Status end;
  {
    MutexLock lock(mu_);
    --awaiting_durable_;
    if (id >= front_id_ && id - front_id_ < pending_.size()) {
      pending_[id - front_id_].durable = true;
    }
    if (finished_) return;
    if (!writing_ && !pending_.empty() && pending_.front().durable) {
      writing_ = true;
      write = &pending_.front().bytes;
    } else if (CanFinish()) {
      finished_ = true;
      finish = true;
      end = end_;
    }
  }
  if (write != nullptr) {
    StartWrite(write);
  } else if (finish) {
    Finish(End(end));
  }
}

bool PipelinedStream::CanFinish() const {
  return reads_over_ && (!reading_ || draining_) && !handling_ && !writing_ &&
         awaiting_durable_ == 0 && pending_.empty();
}

void PipelinedStream::DrainLocked() {
  draining_ = true;
  reads_over_ = true;
  if (end_.ok()) end_ = Drained();
}

bool PipelinedStream::Drain() {
  MutexLock lock(mu_);
  if (finished_) return false;
  DrainLocked();
  if (!CanFinish()) return false;  // a reaction finishes it
  finished_ = true;
  return true;
}

void PipelinedStream::FinishDrained() {
  absl::Status end;
  {
    MutexLock lock(mu_);
    end = end_;
  }
  Finish(End(end));
}

void PipelinedStream::OnWriteDone(bool ok) {
  {
    MutexLock lock(mu_);
    writing_ = false;
    if (ok) {
      pending_bytes_ -= pending_.front().size;
      pending_.pop_front();
      ++front_id_;
    } else {  // the client went away: nobody waits for the rest
      reads_over_ = true;
      client_gone_ = true;
      if (end_.ok()) end_ = absl::CancelledError("stream cancelled");
      front_id_ += pending_.size();
      pending_.clear();
      pending_bytes_ = 0;
    }
  }
  Pump();
}

void PipelinedStream::Pump() {
  for (;;) {
    enum class Next { kNothing, kRead, kWrite, kFinish } next = Next::kNothing;
    const grpc::ByteBuffer* write = nullptr;
    absl::Status end;
    {
      MutexLock lock(mu_);
      if (finished_) return;
      if (!writing_ && !pending_.empty() && pending_.front().durable) {
        writing_ = true;
        write = &pending_.front().bytes;  // deque: stays put on push_back
        next = Next::kWrite;
      } else if (!reading_ && !reads_over_ &&
                 pending_.size() < kMaxPendingResponses &&
                 (pending_.empty() || pending_bytes_ < kMaxPendingBytes)) {
        reading_ = true;
        next = Next::kRead;
      } else if (CanFinish()) {
        finished_ = true;
        end = end_;
        next = Next::kFinish;
      }
    }
    switch (next) {
      case Next::kNothing:
        return;
      case Next::kRead:
        StartRead(&request_);
        break;
      case Next::kWrite:
        StartWrite(write);
        break;
      case Next::kFinish:
        Finish(End(end));
        return;
    }
  }
}

}  // namespace halfspace
