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

PipelinedStream::Pending* PipelinedStream::Find(uint64_t id) {
  if (id < front_id_ || id - front_id_ >= pending_.size()) return nullptr;
  return &pending_[id - front_id_];
}

void PipelinedStream::Ready(Pending& p,
                            absl::StatusOr<grpc::ByteBuffer>* response) {
  p.ready = true;
  if (response == nullptr) return;
  pending_bytes_ -= p.size;  // its request's, while it was awaited
  p.size = 0;
  if (!response->ok()) {
    p.failure = response->status();
    reads_over_ = true;  // nothing after it is taken
    return;
  }
  p.bytes.Swap(&**response);
  p.size = p.bytes.Length();
  pending_bytes_ += p.size;
}

void PipelinedStream::OnReadDone(bool ok) {
  Reply reply;
  {
    MutexLock lock(mu_);
    // Half-closed or cancelled; or, draining, a request that is not taken.
    if (!ok || draining_) {
      reading_ = false;
      reads_over_ = true;
      ok = false;
    } else {
      handling_ = true;
      // Its place in the queue: a later response may be delivered before
      // Handle returns.
      reply.id = front_id_ + pending_.size();
      pending_.emplace_back();
      ++awaiting_;
    }
  }
  if (!ok) {
    Pump();
    return;
  }
  const size_t request_bytes = request_.Length();
  absl::StatusOr<grpc::ByteBuffer> response{grpc::ByteBuffer()};
  const absl::Status handled = Handle(request_, *response, reply);
  const bool later = handled.ok() && reply.later;
  bool waits = handled.ok() && !later && reply.lsn != 0 && log_ != nullptr;
  {
    MutexLock lock(mu_);
    reading_ = false;
    handling_ = false;
    Pending* p = Find(reply.id);  // null: dropped, the client is gone
    if (!handled.ok()) response = handled;
    if (p == nullptr) waits = false;
    if (waits) {  // in place, and ready once durable
      p->bytes.Swap(&*response);
      p->size = p->bytes.Length();
      pending_bytes_ += p->size;
    } else if (!later) {
      --awaiting_;
      if (p != nullptr) Ready(*p, &response);
    } else if (p != nullptr && !p->ready) {
      // Until it is delivered, its request is held (by the log it went
      // to) in its place.
      p->size = request_bytes;
      pending_bytes_ += p->size;
    }
  }
  if (waits) {
    const uint64_t id = reply.id;
    log_->WhenDurable(reply.lsn, [this, id] { OnReady(id, nullptr); });
  }
  Pump();
}

void PipelinedStream::Deliver(uint64_t id,
                              absl::StatusOr<grpc::ByteBuffer> response) {
  OnReady(id, &response);
}

void PipelinedStream::OnReady(uint64_t id,
                              absl::StatusOr<grpc::ByteBuffer>* response) {
  // No reaction of gRPC's protects this thread: the stream may be freed as
  // soon as the write or Finish decided here has started, so this decides
  // on one of them, starts it, and touches nothing after. (It never needs
  // to start a read: reads wait for room, which only a finished write
  // makes, and OnWriteDone pumps on.)
  const grpc::ByteBuffer* write = nullptr;
  absl::Status end;
  Next next;
  {
    MutexLock lock(mu_);
    --awaiting_;
    if (Pending* p = Find(id); p != nullptr) Ready(*p, response);
    if (finished_) return;
    next = Choose(false, write, end);
  }
  if (next == Next::kWrite) {
    StartWrite(write);
  } else if (next == Next::kFinish) {
    Finish(End(end));
  }
}

PipelinedStream::Next PipelinedStream::Choose(bool read,
                                              const grpc::ByteBuffer*& write,
                                              absl::Status& end) {
  if (!writing_ && !pending_.empty() && pending_.front().ready &&
      !pending_.front().failure.ok()) {
    // The stream ends here: what follows is dropped unanswered.
    end_ = pending_.front().failure;
    reads_over_ = true;
    front_id_ += pending_.size();
    pending_.clear();
    pending_bytes_ = 0;
  }
  if (!writing_ && !pending_.empty() && pending_.front().ready) {
    writing_ = true;
    write = &pending_.front().bytes;  // deque: stays put on push_back
    return Next::kWrite;
  }
  if (read && !reading_ && !reads_over_ &&
      pending_.size() < kMaxPendingResponses &&
      (pending_.empty() || pending_bytes_ < kMaxPendingBytes)) {
    reading_ = true;
    return Next::kRead;
  }
  if (CanFinish()) {
    finished_ = true;
    end = end_;
    return Next::kFinish;
  }
  return Next::kNothing;
}

bool PipelinedStream::CanFinish() const {
  return reads_over_ && (!reading_ || draining_) && !handling_ && !writing_ &&
         awaiting_ == 0 && pending_.empty();
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
    const grpc::ByteBuffer* write = nullptr;
    absl::Status end;
    Next next;
    {
      MutexLock lock(mu_);
      if (finished_) return;
      next = Choose(true, write, end);
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
