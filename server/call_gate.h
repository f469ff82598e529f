// Counts the calls in flight and turns new ones away once the server drains,
// and bounds the streams open at once, in all and per client.
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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/model/limits.h"

namespace halfspace {

// The status of a call turned away by a closed gate.
inline absl::Status ShuttingDownError() {
  return absl::UnavailableError(
      "the server is shutting down; retry, or connect to another replica");
}

// A stream that a closing gate ends at its next request boundary (see
// PipelinedStream): it answers what it has taken, reads nothing more, and
// finishes with UNAVAILABLE.
class Drainable {
 public:
  // Called once, under the gate's lock, when the gate closes: the stream
  // takes no more requests. True when it has nothing in flight either: the
  // caller then calls FinishDrained, once the lock is released.
  virtual bool Drain() = 0;
  // Finishes a stream whose Drain returned true.
  virtual void FinishDrained() = 0;

 protected:
  ~Drainable() = default;
};

// The most streams (Train, Evaluate) open at once, in all and per client.
struct StreamLimits {
  int64_t max_streams = std::numeric_limits<int64_t>::max();
  int64_t max_streams_per_client = std::numeric_limits<int64_t>::max();
};

class CallGate {
 public:
  // A gate that is `loading` turns calls away until Open.
  explicit CallGate(const StreamLimits& limits = {}, bool loading = false)
      : limits_(limits), loading_(loading) {}

  // Admits calls (unless closed).
  void Open() {
    MutexLock lock(mu_);
    loading_ = false;
  }

  // Admits a call, unless the gate is closed (UNAVAILABLE). A stream names
  // its `client` and is refused (RESOURCE_EXHAUSTED, naming the flag) past
  // the stream limits. Every OK must be followed by one Leave with the
  // same client.
  absl::Status TryEnter(const std::string* client = nullptr) {
    MutexLock lock(mu_);
    if (closed_) return ShuttingDownError();
    if (loading_) {
      return absl::UnavailableError(
          "the server is loading its models; retry in a moment");
    }
    if (client != nullptr) {
      if (streams_ >= limits_.max_streams) {
        return LimitExceeded(
            absl::StrCat("the server has ", streams_, " streams open"),
            limits_.max_streams, "max_streams");
      }
      int64_t& mine = client_streams_[*client];
      if (mine >= limits_.max_streams_per_client) {
        return LimitExceeded(
            absl::StrCat("client ", *client, " has ", mine, " streams open"),
            limits_.max_streams_per_client, "max_streams_per_client");
      }
      ++mine;
      ++streams_;
    }
    ++active_;
    return absl::OkStatus();
  }

  void Leave(const std::string* client = nullptr) {
    MutexLock lock(mu_);
    if (client != nullptr) {
      --streams_;
      auto it = client_streams_.find(*client);
      if (--it->second == 0) client_streams_.erase(it);
    }
    if (--active_ == 0) idle_.SignalAll();
  }

  // Admits no more calls, and drains every stream added: each ends at its
  // next request boundary.
  void Close() {
    std::vector<Drainable*> idle;
    {
      MutexLock lock(mu_);
      closed_ = true;
      for (Drainable* stream : drainable_) {
        if (stream->Drain()) idle.push_back(stream);
      }
    }
    // Outside the lock: a finished stream is freed, and removes itself.
    for (Drainable* stream : idle) stream->FinishDrained();
  }

  // Adds a stream for Close to drain; false if the gate is closed already
  // (the stream then drains itself). Every Add is followed by one Remove,
  // before the stream is freed.
  bool Add(Drainable* stream) {
    MutexLock lock(mu_);
    if (closed_) return false;
    drainable_.insert(stream);
    return true;
  }
  void Remove(Drainable* stream) {
    MutexLock lock(mu_);
    drainable_.erase(stream);
  }

  // Waits until no call is in flight or `timeout` passes; true if idle.
  bool WaitUntilIdle(absl::Duration timeout) {
    // Capped (at a century) so that an infinite timeout does not overflow.
    const auto deadline =
        std::chrono::steady_clock::now() +
        absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 36525)));
    MutexLock lock(mu_);
    while (active_ != 0) {
      if (!idle_.WaitUntil(mu_, deadline)) return active_ == 0;
    }
    return true;
  }

  // The streams open now.
  int64_t streams() {
    MutexLock lock(mu_);
    return streams_;
  }

 private:
  const StreamLimits limits_;
  Mutex mu_;
  CondVar idle_;
  bool loading_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t streams_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> client_streams_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Drainable*> drainable_ ABSL_GUARDED_BY(mu_);
};

// One call's pass through the gate: admitted if the gate let it in, and
// then leaving the gate when destroyed, so a reactor that holds one leaves
// exactly once, when it is freed.
class Admission {
 public:
  // A unary call. REQUIRES: `gate` outlives the admission.
  explicit Admission(CallGate* gate)
      : gate_(gate), stream_(false), status_(gate->TryEnter()) {}
  // A stream from `client` (see CallGate::TryEnter).
  Admission(CallGate* gate, std::string client)
      : gate_(gate),
        stream_(true),
        client_(std::move(client)),
        status_(gate->TryEnter(&client_)) {}
  ~Admission() {
    if (status_.ok()) gate_->Leave(stream_ ? &client_ : nullptr);
  }
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  bool admitted() const { return status_.ok(); }
  // Why the call was turned away; OK if admitted.
  const absl::Status& status() const { return status_; }

 private:
  CallGate* const gate_;
  const bool stream_;
  const std::string client_;
  const absl::Status status_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CALL_GATE_H_
