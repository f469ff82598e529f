// A bidirectional stream that answers every request with one response, in
// order, and reads the next request while earlier responses wait: to be
// written, or for their examples to be durable. So a client that keeps
// sending is never held to one round trip (or one fdatasync) per message,
// and the write-ahead log's group commit covers many messages of one stream.
//
// A subclass handles one request at a time (Handle runs for one read at a
// time, never concurrently with itself) and may say its response waits for
// a log record to be durable, or comes later (Deliver): a replicated
// model's, once its replica applied the request. A response is written only
// once it and every response before it are ready, so the client sees them
// in request order, each acknowledging what is durable.
//
// Bounded: at most kMaxPendingResponses responses, or kMaxPendingBytes of
// them (but always one), wait at once; past that the stream stops reading,
// and gRPC's flow control holds the client back. A response that comes
// later counts its request's bytes until then: the request is still held
// (a replicated model's record, until the log acknowledged it).
//
// Ending: when Handle fails, or a later response is delivered as an
// error, or the client half-closes, nothing more is read; the responses
// before the failed one are still written, then the stream finishes with
// its error (or OK), and the responses after it are dropped. When a write
// fails (the client is gone) the rest are dropped. Finish is called once,
// when no write, durability callback or later response is outstanding, nor
// a read unless the stream drains, so OnDone may free the stream.
//
// Draining (the server shuts down, see CallGate::Close): the stream ends at
// a request boundary. A request being handled is answered; no other is
// handled (one read meanwhile is dropped unanswered: it was not learned);
// once every response is written, the stream finishes with UNAVAILABLE, at
// once, a read outstanding or not. So everything it learned is
// acknowledged, and a producer resumes elsewhere from its last answer.
//
// Threads: reactions run on gRPC's threads, durability callbacks on the
// log's sync thread, Deliver on any; the queue is guarded by a mutex, and
// no gRPC operation is started while it is held. gRPC frees the stream
// (OnDone) only after Finish and once its reactions have returned; a
// durability callback or Deliver has no such guard, so it starts at most
// one operation and then lets go.

#ifndef HALFSPACE_SERVER_PIPELINED_STREAM_H_
#define HALFSPACE_SERVER_PIPELINED_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/training/journal.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"
#include "server/call_gate.h"

namespace halfspace {

class PipelinedStream
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public Drainable {
 public:
  static constexpr size_t kMaxPendingResponses = 1024;
  static constexpr size_t kMaxPendingBytes = size_t{4} << 20;

  void OnReadDone(bool ok) final;
  void OnWriteDone(bool ok) final;
  void OnDone() final { delete this; }

 protected:
  // `log` (may be null: every response is written at once) and `gate`
  // (may be null: the stream is never drained) must outlive the stream.
  PipelinedStream(Journal* log, CallGate* gate) : log_(log), gate_(gate) {}
  ~PipelinedStream() override;

  // Starts reading when `status` is OK; else finishes with it at once.
  // Called once, at the end of the subclass's constructor.
  void Start(const absl::Status& status);

  // Drainable, for the gate.
  bool Drain() final;
  void FinishDrained() final;

  // How a request's response waits.
  struct Reply {
    uint64_t id = 0;   // the response's, for Deliver (set by the stream)
    uint64_t lsn = 0;  // the log record it waits for (0: none)
    // The response is not filled by Handle: Deliver brings it, once.
    bool later = false;
  };

  // Handles one request: fills `response` (empty on entry) and `reply`. An
  // error ends the stream after the responses before it (and no Deliver
  // may follow).
  virtual absl::Status Handle(grpc::ByteBuffer& request,
                              grpc::ByteBuffer& response, Reply& reply) = 0;

  // The response `id` that Handle said comes later, or the error that ends
  // the stream there. From any thread, even before Handle returns; the
  // stream may be freed as soon as it is called, so the caller touches
  // nothing of it after.
  void Deliver(uint64_t id, absl::StatusOr<grpc::ByteBuffer> response);

  // Counts and logs the stream's end; returns the status to finish with.
  virtual grpc::Status End(const absl::Status& status) = 0;

 private:
  struct Pending {
    grpc::ByteBuffer bytes;
    size_t size = 0;       // the response's bytes; its request's while awaited
    bool ready = false;    // handled, durable and delivered
    absl::Status failure;  // once ready: the stream ends here
  };

  // Starts what can start: the next write, the next read, or Finish. Only
  // from gRPC's reactions (and Start), which keep the stream alive until
  // they return.
  void Pump();
  // Response `id` is ready: its examples are durable (`response` null),
  // or it is delivered. Off gRPC's reactions: starts a write or Finish.
  void OnReady(uint64_t id, absl::StatusOr<grpc::ByteBuffer>* response);
  // Pending response `id`, or null once it was dropped.
  Pending* Find(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `p` ready, taking `response` (null: the bytes are in place):
  // its bytes, or the failure that ends the stream there.
  void Ready(Pending& p, absl::StatusOr<grpc::ByteBuffer>* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What to start next, under the lock; `read` may be chosen only on
  // gRPC's reactions. A failed response at the front ends the stream.
  enum class Next { kNothing, kRead, kWrite, kFinish };
  Next Choose(bool read, const grpc::ByteBuffer*& write, absl::Status& end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether nothing is left to read, write or wait for.
  bool CanFinish() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Stops taking requests, to finish with UNAVAILABLE.
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Journal* const log_;
  CallGate* const gate_;
  bool added_ = false;        // to the gate, for it to drain
  grpc::ByteBuffer request_;  // touched only by the one read in flight

  Mutex mu_;
  // Oldest first; the front may be writing.
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t front_id_ ABSL_GUARDED_BY(mu_) = 0;  // of pending_.front()
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Responses handled or being handled, not yet ready (durable or
  // delivered), dropped ones included.
  int awaiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  // A read's request is being handled.
  bool handling_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // Half-closed, failed or cancelled.
  bool reads_over_ ABSL_GUARDED_BY(mu_) = false;
  // A write failed: drop what waits.
  bool client_gone_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_ ABSL_GUARDED_BY(mu_);  // what to finish with
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PIPELINED_STREAM_H_
