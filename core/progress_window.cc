#include "core/progress_window.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace halfspace {

ProgressWindow::ProgressWindow(int64_t size)
    : size_(size),
      decay_(1.0 - 1.0 / static_cast<double>(size)),
      losses_(size, 0.0),
      mistakes_(size, false) {}

void ProgressWindow::Add(bool mistake, double loss) {
  const int64_t slot = seen_ % size_;
  if (seen_ >= size_ && mistakes_[slot]) --window_mistakes_;
  losses_[slot] = loss;
  mistakes_[slot] = mistake;
  if (mistake) ++window_mistakes_;
  ++seen_;
  decayed_correct_ = decay_ * decayed_correct_ + (mistake ? 0.0 : 1.0);
  decayed_loss_ = decay_ * decayed_loss_ + loss;
  decayed_weight_ = decay_ * decayed_weight_ + 1.0;
}

ProgressWindow::Summary ProgressWindow::summary() const {
  Summary s;
  s.examples = std::min(seen_, size_);
  if (s.examples == 0) return s;
  // Oldest first, so that the sum does not depend on where the ring starts.
  double loss = 0.0;
  for (int64_t i = seen_ - s.examples; i < seen_; ++i) {
    loss += losses_[i % size_];
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
  for (const bool m : mistakes_) state.push_back(m ? 1.0 : 0.0);
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
  decayed_correct_ = state[2];
  decayed_loss_ = state[3];
  decayed_weight_ = state[4];
  std::copy(state.begin() + 5, state.begin() + 5 + size_, losses_.begin());
  window_mistakes_ = 0;
  for (int64_t i = 0; i < size_; ++i) {
    mistakes_[i] = state[5 + size_ + i] != 0.0;
    if (mistakes_[i] && i < seen_) ++window_mistakes_;
  }
  return absl::OkStatus();
}

}  // namespace halfspace
