// Counts the calls in flight and turns new ones away once the server drains.
//
// gRPC's own Server::Shutdown waits for every connection to acknowledge its
// GOAWAY, which an idle client may take seconds to do; so the server drains
// in two steps of its own: Close the gate (new calls get UNAVAILABLE), wait
// until the calls in flight finish or a deadline passes, then shut gRPC down
// at once.
//
// Thread-safe.

#ifndef HALFSPACE_SERVER_CALL_GATE_H_
#define HALFSPACE_SERVER_CALL_GATE_H_

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace halfspace {

// The status of a call turned away by a closed gate.
inline absl::Status ShuttingDownError() {
  return absl::UnavailableError(
      "the server is shutting down; retry, or connect to another replica");
}

class CallGate {
 public:
  // Admits a call, unless the gate is closed. Every true must be followed by
  // one Leave.
  bool TryEnter() {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    ++active_;
    return true;
  }

  void Leave() {
    absl::MutexLock lock(&mu_);
    --active_;
  }

  // Admits no more calls.
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  // Waits until no call is in flight or `timeout` passes; true if idle.
  bool WaitUntilIdle(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(this, &CallGate::Idle),
                                timeout);
  }

 private:
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_ == 0; }

  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CALL_GATE_H_
