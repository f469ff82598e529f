// Examples a model predicted whose label comes later — a click, a
// chargeback, a review (delayed feedback). Each is remembered under an id
// with its features as the server received them (opaque bytes: their
// encoding is the server's business) until feedback joins it, its deadline
// passes, or room is needed for newer ones (the oldest go first). An id
// that was joined or dropped is kept a while longer as a tombstone, so that
// a second feedback for it is told it is a duplicate, or that it expired,
// rather than that it is unknown.
//
// Bounded: at most `max_examples` waiting, taking at most `max_bytes` (ids
// and features, overheads included), and as many tombstones of at most
// 128 bytes each.
//
// Every decision depends only on the state and the arguments (the time
// included), never on the clock: recovery replays the logged calls with
// their logged times and limits and ends in the same state.
//
// A plain value type; not thread-safe (its Model serializes access).

#ifndef HALFSPACE_CORE_MONITORS_PENDING_EXAMPLES_H_
#define HALFSPACE_CORE_MONITORS_PENDING_EXAMPLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/fifo.h"

namespace halfspace {

// The defaults of the limits below and of how long an example waits (the
// server's --max_pending_examples, --max_pending_bytes and --pending_ttl).
inline constexpr int64_t kDefaultMaxPendingExamples = 100000;
inline constexpr int64_t kDefaultMaxPendingBytes = int64_t{64} << 20;
inline constexpr int64_t kDefaultPendingTtlSeconds = 24 * 3600;

struct PendingLimits {
  int64_t max_examples = kDefaultMaxPendingExamples;
  int64_t max_bytes = kDefaultMaxPendingBytes;
};

// The longest example id, client-given or server-issued.
inline constexpr size_t kMaxExampleIdBytes = 64;

// OK for a valid client-given example id: 1 to 64 bytes of printable ASCII
// without spaces.
absl::Status ValidateExampleId(absl::string_view id);

class PendingExamples {
 public:
  enum class State {
    kWaiting,  // remembered, before its deadline
    kJoined,   // feedback for it was learned
    kExpired,  // its deadline passed, or it was dropped to make room
    kUnknown,  // never remembered, or forgotten since
  };

  struct Entry {
    std::string id;
    std::string features;
    int64_t deadline_micros = 0;  // microseconds since the Unix epoch
    // The importance weight its feedback is learned with (a factor of the
    // feedback's own): 1/p for a label selective sampling asked for.
    double weight = 1;
  };
  struct Tombstone {
    std::string id;
    State state = State::kJoined;  // kJoined or kExpired
  };
  struct Counters {
    uint64_t remembered = 0;
    uint64_t joined = 0;
    uint64_t expired = 0;  // deadlines passed and dropped to make room
  };
  // The whole state, for snapshots: entries and tombstones oldest first.
  struct Snapshot {
    std::vector<Entry> waiting;
    std::vector<Tombstone> tombstones;
    Counters counters;
  };

  // What an entry costs beyond its id's and features' bytes, and a
  // tombstone beyond its id's.
  static constexpr int64_t kEntryOverheadBytes = 96;
  static constexpr int64_t kTombstoneOverheadBytes = 64;

  // The bytes remembering `entry` takes.
  static int64_t Bytes(const Entry& entry) {
    return kEntryOverheadBytes +
           static_cast<int64_t>(entry.id.size() + entry.features.size());
  }

  // kWaiting while `id` waits and its deadline is after `now`; kExpired once
  // it is not (even before Expire drops it).
  State Check(absl::string_view id, int64_t now_micros) const;

  // Whether `id` is waiting or tombstoned: a new example cannot take it.
  bool Taken(absl::string_view id) const;

  // The features of a waiting example; null if `id` is not waiting.
  const std::string* Features(absl::string_view id) const;
  // The importance weight of a waiting example; 1 if `id` is not waiting.
  double Weight(absl::string_view id) const;

  // Remembers `entry`, first dropping the oldest waiting examples (as
  // expired) while there are max_examples of them or the bytes would pass
  // max_bytes. REQUIRES: !Taken(entry.id), Bytes(entry) <= max_bytes.
  void Remember(Entry entry, const PendingLimits& limits);

  // Joins waiting example `id`: it leaves, tombstoned as joined.
  // REQUIRES: Check(id, ...) == kWaiting.
  void Join(absl::string_view id, const PendingLimits& limits);

  // Drops every waiting example whose deadline is at or before `now`.
  void Expire(int64_t now_micros, const PendingLimits& limits);

  size_t waiting() const { return waiting_.size(); }
  // How many waiting examples are past their deadline at `now` but not yet
  // dropped (Expire drops them), counted from the oldest while they are.
  size_t Due(int64_t now_micros) const;
  int64_t bytes() const { return bytes_; }
  const Counters& counters() const { return counters_; }

  Snapshot Export() const;
  // REQUIRES: a fresh PendingExamples; `snapshot` from Export.
  void Import(Snapshot snapshot);

 private:
  struct Waiting {
    std::string features;
    int64_t deadline_micros;
    double weight;
    uint64_t order;  // its place in order_
  };

  // Adds `entry` as the newest waiting example, counting its bytes.
  void Insert(Entry entry);
  // Removes waiting `id` and tombstones it as `state`.
  void Remove(const std::string& id, State state, const PendingLimits& limits);
  void AddTombstone(const std::string& id, State state,
                    const PendingLimits& limits);
  // Drops order_'s front entries that no longer wait.
  void Trim();

  absl::flat_hash_map<std::string, Waiting> waiting_;
  Fifo<std::pair<std::string, uint64_t>> order_;  // oldest first
  uint64_t next_order_ = 0;
  absl::flat_hash_map<std::string, State> tombstones_;
  Fifo<std::string> tombstone_order_;  // oldest first
  int64_t waiting_bytes_ = 0;          // what max_bytes bounds
  int64_t bytes_ = 0;                  // waiting_bytes_ and the tombstones'
  Counters counters_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_PENDING_EXAMPLES_H_
