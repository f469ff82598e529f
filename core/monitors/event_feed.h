// A model's events as they come — its drift detector's warnings and drifts,
// its drift reaction's steps, a roll-back — for the streams that watch it
// (WatchModel): each watcher is handed every event added after it began
// watching, and first those kept from a position it names.
//
// An event is where it came (the model's examples_seen, which a recovered
// model and every replica share) and what it was; a stream resumes from a
// position. The feed keeps the last kKept events in memory only: a model
// restored from a snapshot knows the events after its snapshot (those the
// log's replay finds again), not those before; `known_after` says from
// where the kept history is whole. An unused feed takes 24 bytes.
//
// Events are added under the model's writer lock, so a watcher sees the
// events of one example together and in the order they came. A watcher is
// called under the feed's lock: it must not block, nor call the feed.
//
// Thread-safe.

#ifndef HALFSPACE_CORE_MONITORS_EVENT_FEED_H_
#define HALFSPACE_CORE_MONITORS_EVENT_FEED_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "core/base/mutex.h"

namespace halfspace {

enum class ModelEventKind : uint8_t {
  kWarning = 1,            // the drift detector's warning began
  kDrift = 2,              // it found a drift
  kChallengerStarted = 3,  // the drift reaction started a challenger
  kSwitched = 4,           // the challenger replaced the model's weights
  kChallengerDropped = 5,  // it ran out of time
  kRolledBack = 6,         // the replaced weights were put back
};

struct ModelEvent {
  ModelEventKind kind = ModelEventKind::kWarning;
  // The model's examples_seen after the example it came at (for a
  // roll-back, when it came).
  uint64_t position = 0;
  // The logged time of the batch that held the example; 0 when unknown
  // (and for a roll-back).
  int64_t micros = 0;
  // A switch's McNemar p-value; 1 otherwise.
  double p_value = 1.0;

  friend bool operator==(const ModelEvent& a, const ModelEvent& b) {
    return a.kind == b.kind && a.position == b.position &&
           a.micros == b.micros && a.p_value == b.p_value;
  }
};

class EventFeed {
 public:
  // The events kept for watchers that resume from a position.
  static constexpr size_t kKept = 256;

  // Takes what a feed tells it. Each call is made under the feed's lock.
  class Watcher {
   public:
    virtual void Deliver(const ModelEvent& event) = 0;
    // The feed ended: the model was deleted or replaced. Nothing follows.
    virtual void Closed(const absl::Status& why) = 0;

   protected:
    ~Watcher() = default;
  };

  // A feed whose history is whole after position `known_after`: 0 for a
  // new model, the snapshot's examples_seen for a restored one.
  explicit EventFeed(uint64_t known_after = 0) : known_after_(known_after) {}
  EventFeed(const EventFeed&) = delete;
  EventFeed& operator=(const EventFeed&) = delete;

  // Sets where the history is whole from, for a model restored before
  // anyone watches it.
  void set_known_after(uint64_t position) {
    MutexLock lock(mu_);
    known_after_ = position;
  }

  // Adds the events of one example (or a roll-back), in order, and hands
  // them to every watcher. Nothing once the feed is closed.
  void Add(const ModelEvent* events, size_t count);

  // Ends the feed: every watcher is told `why`, and so is one that starts
  // watching later. Once only; later calls do nothing.
  void Close(const absl::Status& why);

  // Starts handing events to `watcher`: first the kept events at positions
  // >= *from (none if unset), then each event added. Returns whether the
  // kept history is whole from there (always true without `from`). A
  // closed feed calls watcher->Closed at once instead, and keeps nothing
  // of it.
  // REQUIRES: Unwatch(watcher) before it is freed.
  bool Watch(Watcher* watcher, std::optional<uint64_t> from);
  // Stops handing events to `watcher`; when it returns, no call to it runs.
  void Unwatch(Watcher* watcher);

  // The kept events, oldest first.
  std::vector<ModelEvent> Kept() const;

 private:
  // What a feed holds once it is used: most models never have an event
  // nor a watcher, and every model has a feed.
  struct Used {
    std::vector<ModelEvent> kept;  // oldest first
    std::vector<Watcher*> watchers;
    std::optional<absl::Status> closed;
  };
  Used& used() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  uint64_t known_after_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Used> used_ ABSL_GUARDED_BY(mu_);
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_EVENT_FEED_H_
