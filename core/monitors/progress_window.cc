#include "core/monitors/progress_window.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

// x, or 0 once it has decayed below the smallest normal double: a long run
// of zero losses would otherwise decay into subnormals, whose arithmetic
// is a hundred times slower, and mean nothing more than 0.
double Normal(double x) {
  return std::abs(x) < std::numeric_limits<double>::min() ? 0.0 : x;
}

}  // namespace

ProgressWindow::ProgressWindow(int64_t size)
    : size_(size),
      decay_(1.0 - 1.0 / static_cast<double>(size)),
      losses_(size, 0.0),
      mistakes_(size, 0) {}

void ProgressWindow::Add(bool mistake, double loss) {
  window_mistakes_ += static_cast<int64_t>(mistake) - mistakes_[next_];
  losses_[next_] = loss;
  mistakes_[next_] = mistake;
  if (++next_ == size_) next_ = 0;
  ++seen_;
  decayed_correct_ = Normal(decay_ * decayed_correct_ + (mistake ? 0.0 : 1.0));
  decayed_loss_ = Normal(decay_ * decayed_loss_ + loss);
  decayed_weight_ = decay_ * decayed_weight_ + 1.0;
}

ProgressWindow::Summary ProgressWindow::summary() const {
  Summary s;
  s.examples = std::min(seen_, size_);
  if (s.examples == 0) return s;
  // Oldest first, so that the sum does not depend on where the ring starts.
  double loss = 0.0;
  const int64_t oldest = seen_ < size_ ? 0 : next_;
  for (int64_t i = 0; i < s.examples; ++i) {
    const int64_t slot = oldest + i;
    loss += losses_[slot < size_ ? slot : slot - size_];
  }
  const double n = static_cast<double>(s.examples);
  s.accuracy = 1.0 - static_cast<double>(window_mistakes_) / n;
  s.loss = std::min(loss, std::numeric_limits<double>::max()) / n;
  s.decayed_accuracy = decayed_correct_ / decayed_weight_;
  s.decayed_loss = decayed_loss_ / decayed_weight_;
  return s;
}

std::vector<double> ProgressWindow::Export() const {
  std::vector<double> state = {static_cast<double>(size_),
                               static_cast<double>(seen_), decayed_correct_,
                               decayed_loss_, decayed_weight_};
  state.insert(state.end(), losses_.begin(), losses_.end());
  for (const uint8_t m : mistakes_) state.push_back(m);
  return state;
}

absl::Status ProgressWindow::Import(absl::Span<const double> state) {
  const size_t expected = 5 + 2 * static_cast<size_t>(size_);
  if (state.size() != expected || state[0] != static_cast<double>(size_) ||
      !(state[1] >= 0.0) || state[1] != std::floor(state[1])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progress window state has ", state.size(), " values; expected ",
        expected, " for a window of ", size_));
  }
  seen_ = static_cast<int64_t>(state[1]);
  next_ = seen_ % size_;
  decayed_correct_ = state[2];
  decayed_loss_ = state[3];
  decayed_weight_ = state[4];
  std::copy(state.begin() + 5, state.begin() + 5 + size_, losses_.begin());
  window_mistakes_ = 0;
  for (int64_t i = 0; i < size_; ++i) {
    // A slot not used yet holds 0: it takes no mistake away when reused.
    mistakes_[i] = i < seen_ && state[5 + size_ + i] != 0.0;
    window_mistakes_ += mistakes_[i];
  }
  return absl::OkStatus();
}

}  // namespace halfspace
