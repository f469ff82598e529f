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

#include <condition_variable>
#include <mutex>

#include "absl/status/status.h"
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
    std::lock_guard lock(mu_);
    if (closed_) return false;
    ++active_;
    return true;
  }

  void Leave() {
    std::lock_guard lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  }

  // Admits no more calls.
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }

  // Waits until no call is in flight or `timeout` passes; true if idle.
  bool WaitUntilIdle(absl::Duration timeout) {
    std::unique_lock lock(mu_);
    return idle_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                          [this] { return active_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  bool closed_ = false;  // guarded by mu_
  int active_ = 0;       // guarded by mu_
};

// One call's pass through the gate: admitted if the gate was open when it
// was made, and then leaving the gate when destroyed, so a reactor that holds
// one leaves exactly once, when it is freed.
class Admission {
 public:
  // REQUIRES: `gate` outlives the admission.
  explicit Admission(CallGate* gate)
      : gate_(gate->TryEnter() ? gate : nullptr) {}
  ~Admission() {
    if (gate_ != nullptr) gate_->Leave();
  }
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  bool admitted() const { return gate_ != nullptr; }

 private:
  CallGate* const gate_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CALL_GATE_H_
