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

ProgressWindow::ProgressWindow(int64_t size, bool keep_losses)
    // A loss takes a word: the block is the mistakes' words and the losses.
    : ring_(new uint64_t[static_cast<size_t>((size + 63) / 64 +
                                             (keep_losses ? size : 0))]()),
      size_(static_cast<int32_t>(size)),
      keep_losses_(keep_losses) {
  static_assert(kMaxProgressWindow <= INT32_MAX);
}

void ProgressWindow::Add(bool mistake, double loss) {
  window_mistakes_ +=
      static_cast<int32_t>(mistake) - static_cast<int32_t>(MistakeAt(next_));
  if (keep_losses_) SetLoss(next_, loss);
  const uint64_t bit = uint64_t{1} << (next_ % 64);
  uint64_t& word = ring_[static_cast<size_t>(next_ / 64)];
  word = mistake ? word | bit : word & ~bit;
  if (++next_ == size_) next_ = 0;
  ++seen_;
  // λ, computed rather than kept: the same double every time.
  const double decay = 1.0 - 1.0 / static_cast<double>(size_);
  decayed_correct_ = Normal(decay * decayed_correct_ + (mistake ? 0.0 : 1.0));
  decayed_loss_ = Normal(decay * decayed_loss_ + loss);
  decayed_weight_ = decay * decayed_weight_ + 1.0;
}

ProgressWindow::Summary ProgressWindow::summary() const {
  Summary s;
  s.examples = std::min<int64_t>(seen_, size_);
  if (s.examples == 0) return s;
  const double n = static_cast<double>(s.examples);
  s.accuracy = 1.0 - static_cast<double>(window_mistakes_) / n;
  if (keep_losses_) {
    // Oldest first, so that the sum does not depend on where the ring
    // starts.
    double loss = 0.0;
    const int64_t oldest = seen_ < size_ ? 0 : next_;
    for (int64_t i = 0; i < s.examples; ++i) {
      const int64_t slot = oldest + i;
      loss += LossAt(slot < size_ ? slot : slot - size_);
    }
    s.loss = std::min(loss, std::numeric_limits<double>::max()) / n;
  }
  s.decayed_accuracy = decayed_correct_ / decayed_weight_;
  s.decayed_loss = decayed_loss_ / decayed_weight_;
  return s;
}

std::vector<double> ProgressWindow::Export() const {
  std::vector<double> state = {static_cast<double>(size_),
                               static_cast<double>(seen_), decayed_correct_,
                               decayed_loss_, decayed_weight_};
  for (int64_t i = 0; i < size_; ++i) {
    state.push_back(keep_losses_ ? LossAt(i) : 0.0);
  }
  for (int64_t i = 0; i < size_; ++i) state.push_back(MistakeAt(i) ? 1.0 : 0.0);
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
  next_ = static_cast<int32_t>(seen_ % size_);
  decayed_correct_ = state[2];
  decayed_loss_ = state[3];
  decayed_weight_ = state[4];
  for (int64_t i = 0; keep_losses_ && i < size_; ++i) SetLoss(i, state[5 + i]);
  window_mistakes_ = 0;
  std::fill(ring_.get(), ring_.get() + words(), 0);
  for (int64_t i = 0; i < size_; ++i) {
    // A slot not used yet holds 0: it takes no mistake away when reused.
    if (i < seen_ && state[5 + size_ + i] != 0.0) {
      ring_[static_cast<size_t>(i / 64)] |= uint64_t{1} << (i % 64);
      ++window_mistakes_;
    }
  }
  return absl::OkStatus();
}

}  // namespace halfspace
