#include "core/monitors/event_feed.h"

#include <algorithm>

namespace halfspace {

EventFeed::Used& EventFeed::used() {
  if (used_ == nullptr) used_ = std::make_unique<Used>();
  return *used_;
}

void EventFeed::Add(const ModelEvent* events, size_t count) {
  MutexLock lock(mu_);
  Used& u = used();
  if (u.closed.has_value()) return;
  for (size_t i = 0; i < count; ++i) {
    if (u.kept.size() == kKept) {  // events are rare: a shift is cheap
      known_after_ = std::max(known_after_, u.kept.front().position);
      u.kept.erase(u.kept.begin());
    }
    u.kept.push_back(events[i]);
    for (Watcher* watcher : u.watchers) watcher->Deliver(events[i]);
  }
}

void EventFeed::Close(const absl::Status& why) {
  MutexLock lock(mu_);
  Used& u = used();
  if (u.closed.has_value()) return;
  u.closed = why;
  for (Watcher* watcher : u.watchers) watcher->Closed(why);
  u.watchers = {};
  u.kept = {};
}

bool EventFeed::Watch(Watcher* watcher, std::optional<uint64_t> from) {
  MutexLock lock(mu_);
  Used& u = used();
  if (u.closed.has_value()) {
    watcher->Closed(*u.closed);
    return true;
  }
  u.watchers.push_back(watcher);
  if (!from.has_value()) return true;
  for (const ModelEvent& event : u.kept) {
    if (event.position >= *from) watcher->Deliver(event);
  }
  // Position 0 has no events: a history known after 0 is whole.
  return known_after_ == 0 || *from > known_after_;
}

void EventFeed::Unwatch(Watcher* watcher) {
  MutexLock lock(mu_);
  if (used_ == nullptr) return;
  std::vector<Watcher*>& watchers = used_->watchers;
  watchers.erase(std::remove(watchers.begin(), watchers.end(), watcher),
                 watchers.end());
}

std::vector<ModelEvent> EventFeed::Kept() const {
  MutexLock lock(mu_);
  if (used_ == nullptr) return {};
  return used_->kept;
}

}  // namespace halfspace
