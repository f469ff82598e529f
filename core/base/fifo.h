// A first-in, first-out queue on one vector that takes no memory while it
// is empty: std::deque allocates its map and a first block when it is
// made (576 bytes for a deque of strings), which a member of every model
// cannot afford when most models never queue anything.
//
// pop_front moves a head forward; the popped front is erased once it is at
// least half the vector, so each element moves O(1) times amortized, and
// the vector is released when the queue empties. Not thread-safe.

#ifndef HALFSPACE_CORE_BASE_FIFO_H_
#define HALFSPACE_CORE_BASE_FIFO_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace halfspace {

template <typename T>
class Fifo {
 public:
  using const_iterator = typename std::vector<T>::const_iterator;

  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }

  // REQUIRES: !empty().
  const T& front() const { return items_[head_]; }

  template <typename... Args>
  void emplace_back(Args&&... args) {
    items_.emplace_back(std::forward<Args>(args)...);
  }
  void push_back(T item) { items_.push_back(std::move(item)); }

  // REQUIRES: !empty().
  void pop_front() {
    items_[head_] = T();  // its memory goes now, not at the next erase
    if (++head_ == items_.size()) {
      std::vector<T>().swap(items_);
      head_ = 0;
    } else if (head_ >= kMinErase && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(),
                   items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // Oldest first.
  const_iterator begin() const {
    return items_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  const_iterator end() const { return items_.end(); }

 private:
  // Fewer popped elements than this are left in place: erasing them would
  // move the rest more often than it saves.
  static constexpr size_t kMinErase = 32;

  std::vector<T> items_;
  size_t head_ = 0;  // items_[head_] is the front
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_BASE_FIFO_H_
