#include "core/monitors/pending_examples.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

absl::Status ValidateExampleId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxExampleIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("example id ", Quoted(id), " has ", id.size(),
                     " bytes; it must have 1 to ", kMaxExampleIdBytes));
  }
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat("example id ", Quoted(id),
                       " must be printable ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

PendingExamples::State PendingExamples::Check(absl::string_view id,
                                              int64_t now_micros) const {
  if (auto it = waiting_.find(id); it != waiting_.end()) {
    return it->second.deadline_micros > now_micros ? State::kWaiting
                                                   : State::kExpired;
  }
  auto it = tombstones_.find(id);
  return it == tombstones_.end() ? State::kUnknown : it->second;
}

bool PendingExamples::Taken(absl::string_view id) const {
  return waiting_.contains(id) || tombstones_.contains(id);
}

const std::string* PendingExamples::Features(absl::string_view id) const {
  auto it = waiting_.find(id);
  return it == waiting_.end() ? nullptr : &it->second.features;
}

double PendingExamples::Weight(absl::string_view id) const {
  auto it = waiting_.find(id);
  return it == waiting_.end() ? 1.0 : it->second.weight;
}

void PendingExamples::Remember(Entry entry, const PendingLimits& limits) {
  const int64_t need = Bytes(entry);
  Trim();
  while (!order_.empty() &&
         (static_cast<int64_t>(waiting_.size()) >= limits.max_examples ||
          waiting_bytes_ + need > limits.max_bytes)) {
    Remove(order_.front().first, State::kExpired, limits);
    Trim();
  }
  Insert(std::move(entry));
  counters_.remembered += 1;
}

void PendingExamples::Insert(Entry entry) {
  const int64_t bytes = Bytes(entry);
  waiting_bytes_ += bytes;
  bytes_ += bytes;
  order_.emplace_back(entry.id, next_order_);
  waiting_.emplace(std::move(entry.id),
                   Waiting{std::move(entry.features), entry.deadline_micros,
                           entry.weight, next_order_++});
}

void PendingExamples::Join(absl::string_view id, const PendingLimits& limits) {
  Remove(std::string(id), State::kJoined, limits);
}

void PendingExamples::Expire(int64_t now_micros, const PendingLimits& limits) {
  Trim();
  while (!order_.empty() &&
         waiting_.at(order_.front().first).deadline_micros <= now_micros) {
    Remove(order_.front().first, State::kExpired, limits);
    Trim();
  }
}

void PendingExamples::Remove(const std::string& id, State state,
                             const PendingLimits& limits) {
  auto it = waiting_.find(id);
  const int64_t freed =
      kEntryOverheadBytes +
      static_cast<int64_t>(id.size() + it->second.features.size());
  waiting_.erase(it);
  waiting_bytes_ -= freed;
  bytes_ -= freed;
  (state == State::kJoined ? counters_.joined : counters_.expired) += 1;
  AddTombstone(id, state, limits);
}

void PendingExamples::AddTombstone(const std::string& id, State state,
                                   const PendingLimits& limits) {
  tombstones_.emplace(id, state);
  tombstone_order_.push_back(id);
  bytes_ += kTombstoneOverheadBytes + static_cast<int64_t>(id.size());
  while (static_cast<int64_t>(tombstone_order_.size()) > limits.max_examples) {
    const std::string& oldest = tombstone_order_.front();
    bytes_ -= kTombstoneOverheadBytes + static_cast<int64_t>(oldest.size());
    tombstones_.erase(oldest);
    tombstone_order_.pop_front();
  }
}

void PendingExamples::Trim() {
  while (!order_.empty()) {
    auto it = waiting_.find(order_.front().first);
    if (it != waiting_.end() && it->second.order == order_.front().second) {
      return;
    }
    order_.pop_front();
  }
}

size_t PendingExamples::Due(int64_t now_micros) const {
  size_t due = 0;
  for (const auto& [id, order] : order_) {
    auto it = waiting_.find(id);
    if (it == waiting_.end() || it->second.order != order) continue;
    if (it->second.deadline_micros > now_micros) break;
    ++due;
  }
  return due;
}

PendingExamples::Snapshot PendingExamples::Export() const {
  Snapshot s;
  for (const auto& [id, order] : order_) {
    auto it = waiting_.find(id);
    if (it == waiting_.end() || it->second.order != order) continue;
    s.waiting.push_back({id, it->second.features, it->second.deadline_micros,
                         it->second.weight});
  }
  for (const std::string& id : tombstone_order_) {
    s.tombstones.push_back({id, tombstones_.at(id)});
  }
  s.counters = counters_;
  return s;
}

void PendingExamples::Import(Snapshot snapshot) {
  for (Entry& e : snapshot.waiting) Insert(std::move(e));
  for (Tombstone& t : snapshot.tombstones) {
    bytes_ += kTombstoneOverheadBytes + static_cast<int64_t>(t.id.size());
    tombstone_order_.push_back(t.id);
    tombstones_.emplace(std::move(t.id), t.state);
  }
  counters_ = snapshot.counters;
}

}  // namespace halfspace
