#include "server/watch_model.h"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/base/quoted.h"
#include "core/monitors/event_feed.h"
#include "grpcpp/alarm.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/drift_proto.h"
#include "server/raw_message.h"
#include "server/replication.h"
#include "server/stream_call.h"
#include "server/stream_model.h"

namespace halfspace {
namespace {

// The events one watcher may fall behind by before its stream ends: as
// many as the feed keeps, so that it can resume from the last it saw.
constexpr size_t kMaxBehind = EventFeed::kKept;

class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                           public EventFeed::Watcher,
                           public Drainable {
 public:
  WatchReactor(const ServiceParts& parts, grpc::CallbackServerContext* context,
               const grpc::ByteBuffer* request)
      : gate_(parts.gate), call_("WatchModel", parts, context) {
    absl::Status s = call_.status();
    if (s.ok()) s = call_.Charge(1, 0);
    v1::WatchModelRequest decoded;
    if (s.ok()) {
      grpc::ByteBuffer bytes(*request);
      s = DecodeMessage(bytes, decoded);
    }
    if (s.ok()) {
      s = BindStreamModel(*parts.registry, decoded.model(), "WatchModelRequest",
                          call_.principal(), Permission::kPredict, model_);
      if (!s.ok()) s = NotHeldYet(parts.replicas, decoded.model(), s);
    }
    if (!s.ok()) {
      Refuse(s);
      return;
    }
    Begin(decoded);
  }

  void OnWriteDone(bool ok) override {
    {
      MutexLock lock(mu_);
      writing_ = false;
      if (!ok && end_.ok()) end_ = absl::CancelledError("the client left");
    }
    Pump();
  }

  void OnCancel() override {
    {
      MutexLock lock(mu_);
      if (end_.ok()) end_ = absl::CancelledError("the client left");
    }
    Pump();
  }

  void OnDone() override {
    if (watching_) model_->events().Unwatch(this);
    if (added_) gate_->Remove(this);
    delete this;
  }

  // EventFeed::Watcher: under the feed's lock.
  void Deliver(const ModelEvent& event) override {
    MutexLock lock(mu_);
    if (!end_.ok()) return;
    if (queued_.size() == kMaxBehind) {
      end_ = absl::ResourceExhaustedError(absl::StrCat(
          "this watch fell ", kMaxBehind,
          " events behind; watch again with from_position set to the "
          "position of the last event read"));
    } else {
      queued_.push_back(event);
    }
    WakeLocked();
  }

  void Closed(const absl::Status& why) override {
    MutexLock lock(mu_);
    if (end_.ok()) end_ = why;
    WakeLocked();
  }

  // Drainable: under the gate's lock.
  bool Drain() override {
    MutexLock lock(mu_);
    if (finished_) return false;
    if (end_.ok()) end_ = ShuttingDownError();
    if (writing_ || waking_) return false;  // a reaction finishes it
    finished_ = true;
    return true;
  }

  void FinishDrained() override { Finish(End()); }

 private:
  void Refuse(const absl::Status& why) {
    {
      MutexLock lock(mu_);
      finished_ = true;
    }
    Finish(call_.End(why));
  }

  // Sends the model's state, then what the feed hands over.
  void Begin(const v1::WatchModelRequest& request) {
    v1::WatchModelResponse first;
    first.set_model(model_->name());
    if (std::optional<ModelDrift> drift = model_->drift(); drift.has_value()) {
      ToProto(*drift, first.mutable_drift());
    }
    std::optional<uint64_t> from;
    if (request.has_from_position()) from = request.from_position();
    {
      // The first write is taken before the stream can be drained or be
      // handed an event: those wait for it.
      MutexLock lock(mu_);
      writing_ = true;
    }
    added_ = gate_ != nullptr && gate_->Add(this);
    if (gate_ != nullptr && !added_) {
      Refuse(ShuttingDownError());
      return;
    }
    watching_ = true;
    first.set_complete(model_->events().Watch(this, from));
    EncodeMessage(first, write_);
    StartWrite(&write_);
  }

  // Wakes Pump from the alarm, unless a write will.
  void WakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || waking_ || finished_) return;
    waking_ = true;
    // A new alarm each time: the last one's callback may still be running.
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(std::chrono::system_clock::now(),
                [this](bool) { Pump(/*woken=*/true); });
  }

  // Starts the next write, or finishes the stream once it has ended and
  // nothing is pending. With no lock held. The alarm's callback ends its
  // wake in the same critical section that decides: were it to end it
  // before, another reaction could finish the stream, and free it, first.
  void Pump(bool woken = false) {
    enum class Next { kNothing, kWrite, kFinish } next = Next::kNothing;
    {
      MutexLock lock(mu_);
      if (woken) waking_ = false;
      if (finished_ || writing_ || waking_) return;
      // An event queued before the end still goes out, unless the client
      // left.
      if (!queued_.empty() && !absl::IsCancelled(end_)) {
        v1::WatchModelResponse response;
        ToProto(queued_.front(), response.mutable_event());
        queued_.pop_front();
        EncodeMessage(response, write_);
        writing_ = true;
        next = Next::kWrite;
      } else if (!end_.ok()) {
        finished_ = true;
        next = Next::kFinish;
      }
    }
    if (next == Next::kWrite) StartWrite(&write_);
    if (next == Next::kFinish) Finish(End());
  }

  grpc::Status End() {
    absl::Status end;
    {
      MutexLock lock(mu_);
      end = end_;
    }
    return call_.End(end);
  }

  CallGate* const gate_;
  const StreamCall call_;
  std::shared_ptr<Model> model_;
  bool added_ = false;     // to the gate, for Drain
  bool watching_ = false;  // the feed hands events over
  // Only for writes: one at a time, by whoever set writing_.
  grpc::ByteBuffer write_;

  Mutex mu_;
  // Why the stream ends; OK while it goes on.
  absl::Status end_ ABSL_GUARDED_BY(mu_);
  std::deque<ModelEvent> queued_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool waking_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartWatchModel(
    const ServiceParts& parts, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request) {
  return new WatchReactor(parts, context, request);
}

}  // namespace halfspace
