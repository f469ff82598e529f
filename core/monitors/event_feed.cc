#include "core/monitors/event_feed.h"

#include <algorithm>

namespace halfspace {

void EventFeed::Add(const ModelEvent* events, size_t count) {
  MutexLock lock(mu_);
  if (closed_.has_value()) return;
  for (size_t i = 0; i < count; ++i) {
    if (kept_.size() == kKept) {
      known_after_ = std::max(known_after_, kept_.front().position);
      kept_.pop_front();
    }
    kept_.push_back(events[i]);
    for (Watcher* watcher : watchers_) watcher->Deliver(events[i]);
  }
}

void EventFeed::Close(const absl::Status& why) {
  MutexLock lock(mu_);
  if (closed_.has_value()) return;
  closed_ = why;
  for (Watcher* watcher : watchers_) watcher->Closed(why);
  watchers_.clear();
  kept_.clear();
}

bool EventFeed::Watch(Watcher* watcher, std::optional<uint64_t> from) {
  MutexLock lock(mu_);
  if (closed_.has_value()) {
    watcher->Closed(*closed_);
    return true;
  }
  watchers_.push_back(watcher);
  if (!from.has_value()) return true;
  for (const ModelEvent& event : kept_) {
    if (event.position >= *from) watcher->Deliver(event);
  }
  // Position 0 has no events: a history known after 0 is whole.
  return known_after_ == 0 || *from > known_after_;
}

void EventFeed::Unwatch(Watcher* watcher) {
  MutexLock lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), watcher),
                  watchers_.end());
}

std::vector<ModelEvent> EventFeed::Kept() const {
  MutexLock lock(mu_);
  return std::vector<ModelEvent>(kept_.begin(), kept_.end());
}

}  // namespace halfspace
