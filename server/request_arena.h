// An arena for decoding one request at a time that keeps its memory from
// request to request: one block, grown to fit the largest request so far.
// After the first few requests, decoding a request allocates nothing and
// touches no fresh pages (an arena that frees its blocks at each reset hands
// large ones back to the kernel, and faults them in again next time).
//
// Not thread-safe: one per stream, used by the one read in flight.

#ifndef HALFSPACE_SERVER_REQUEST_ARENA_H_
#define HALFSPACE_SERVER_REQUEST_ARENA_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>

#include "google/protobuf/arena.h"

namespace halfspace {

class RequestArena {
 public:
  // The block never grows past this (1000 examples of 100 dense features
  // fit), so that idle streams hold little; larger requests allocate the
  // rest, and free it when the next request starts.
  static constexpr size_t kMaxBlockBytes = size_t{1} << 20;

  // The arena, emptied of the previous request.
  google::protobuf::Arena& Next() {
    const size_t used = arena_ ? arena_->SpaceAllocated() : 0;
    if (!arena_ || (used > block_bytes_ && block_bytes_ < kMaxBlockBytes)) {
      arena_.reset();
      while (block_bytes_ < used && block_bytes_ < kMaxBlockBytes) {
        block_bytes_ *= 2;
      }
      block_ = std::make_unique<char[]>(block_bytes_);
      google::protobuf::ArenaOptions options;
      options.initial_block = block_.get();
      options.initial_block_size = block_bytes_;
      options.max_block_size = size_t{1} << 22;
      arena_.emplace(options);
    } else {
      arena_->Reset();
    }
    return *arena_;
  }

 private:
  size_t block_bytes_ = size_t{64} << 10;
  std::unique_ptr<char[]> block_;
  std::optional<google::protobuf::Arena> arena_;  // destroyed before block_
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_REQUEST_ARENA_H_
