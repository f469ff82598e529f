#include "core/algorithms/voted_perceptron.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

double Sign(double score) { return score >= 0.0 ? 1.0 : -1.0; }

}  // namespace

VotedPerceptron::VotedPerceptron(int64_t dimension, int64_t max_vectors)
    : dimension_(dimension),
      max_vectors_(max_vectors),
      counts_(max_vectors, 0.0),
      merged_(dimension),
      average_(LinearWeights(dimension)) {
  // Never reallocated: the undo log may hold the address of a slot's bias.
  slots_.reserve(max_vectors);
  slots_.emplace_back(dimension);
}

Update VotedPerceptron::Learn(Features x, int y, double s) {
  const int64_t current = Slot(used_ - 1);
  Update u = ScoreUpdate(slots_[current], x, y);
  u.loss = std::max(0.0, -u.margin);
  if (s <= 0.0) return u;  // an example of weight 0 counts as none
  if (u.margin > 0.0) {    // survived
    undo_->Save(counts_[current]);
    counts_[current] += s;
    return u;
  }
  const int64_t next = FreeSlot();
  LinearWeights& v = slots_[next];
  if (next == current) {  // max_vectors = 1: the current was merged
    undo_->Save(v, x);
  } else {
    undo_->SaveAll(v);
    const LinearWeights& from = slots_[current];
    std::copy(from.w.begin(), from.w.end(), v.w.begin());
    v.b = from.b;
  }
  undo_->Save(counts_[next]);
  counts_[next] = s;
  v.AddScaled(s * y, x, intercept_factor_);
  u.updated = true;
  return u;
}

int64_t VotedPerceptron::FreeSlot() {
  undo_->Save(oldest_);
  undo_->Save(used_);
  if (used_ == max_vectors_) {
    const LinearWeights& oldest = slots_[oldest_];
    const double c = counts_[oldest_];
    undo_->SaveAll(merged_);
    undo_->Save(merged_count_);
    for (int64_t j = 0; j < dimension_; ++j) merged_.w[j] += c * oldest.w[j];
    merged_.b += c * oldest.b;
    merged_count_ += c;
    oldest_ = (oldest_ + 1) % max_vectors_;
    --used_;
  }
  const int64_t slot = Slot(used_);
  ++used_;
  // Allocated when first needed and kept: an undone example leaves a slot
  // that no count says is in use.
  if (slot == static_cast<int64_t>(slots_.size())) {
    slots_.emplace_back(dimension_);
  }
  return slot;
}

double VotedPerceptron::Score(const Features& x) const {
  double vote =
      merged_count_ > 0.0 ? merged_count_ * Sign(merged_.Score(x)) : 0.0;
  for (int64_t i = 0; i < used_; ++i) {
    const int64_t k = Slot(i);
    if (counts_[k] > 0.0) vote += counts_[k] * Sign(slots_[k].Score(x));
  }
  return vote;
}

const LinearWeights& VotedPerceptron::weights() const {
  return average_.Get([this](LinearWeights& average) {
    double total = merged_count_;
    for (int64_t i = 0; i < used_; ++i) total += counts_[Slot(i)];
    if (total == 0.0) {
      average = slots_[Slot(used_ - 1)];
      return;
    }
    // Σ (c_i/total)·v_i: a convex combination, which cannot overflow.
    for (int64_t j = 0; j < dimension_; ++j) {
      average.w[j] = merged_.w[j] / total;
    }
    average.b = merged_.b / total;
    for (int64_t i = 0; i < used_; ++i) {
      const LinearWeights& v = slots_[Slot(i)];
      const double c = counts_[Slot(i)] / total;
      if (c == 0.0) continue;
      for (int64_t j = 0; j < dimension_; ++j) average.w[j] += c * v.w[j];
      average.b += c * v.b;
    }
  });
}

void VotedPerceptron::set_weights(LinearWeights weights) {
  slots_.resize(1);
  slots_[0] = weights;
  std::fill(counts_.begin(), counts_.end(), 0.0);
  oldest_ = 0;
  used_ = 1;
  merged_ = LinearWeights(dimension_);
  merged_count_ = 0.0;
  average_.Set(std::move(weights));
}

std::vector<double> VotedPerceptron::ExportState() const {
  // The vectors oldest first, each after its count.
  std::vector<double> state = {static_cast<double>(used_), merged_count_};
  AppendTo(merged_, state);
  for (int64_t i = 0; i < used_; ++i) {
    state.push_back(counts_[Slot(i)]);
    AppendTo(slots_[Slot(i)], state);
  }
  return state;
}

absl::Status VotedPerceptron::ImportState(absl::Span<const double> state) {
  const double d = static_cast<double>(dimension_);
  const double k = state.empty() ? 0.0 : state[0];
  if (!(k >= 1.0 && k <= static_cast<double>(max_vectors_) &&
        k == std::floor(k) &&
        static_cast<double>(state.size()) == 2.0 + (d + 1.0) + k * (d + 2.0))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "voted perceptron state has ", state.size(), " values, ", k,
        " vectors; expected 1 to ", max_vectors_, " vectors of ", dimension_,
        " weights, a bias and a count each, and the merged sum"));
  }
  used_ = static_cast<int64_t>(k);
  oldest_ = 0;
  merged_count_ = state[1];
  state.remove_prefix(2);
  ReadFrom(state, merged_);
  while (static_cast<int64_t>(slots_.size()) < used_) {
    slots_.emplace_back(dimension_);
  }
  std::fill(counts_.begin(), counts_.end(), 0.0);
  for (int64_t i = 0; i < used_; ++i) {
    counts_[i] = state[0];
    state.remove_prefix(1);
    ReadFrom(state, slots_[i]);
  }
  EndBatch();
  return absl::OkStatus();
}

absl::Status VotedPerceptronParams::Validate() const {
  if (max_vectors < 1 || max_vectors > kMaxVotedVectors) {
    return absl::InvalidArgumentError(
        absl::StrCat("voted_perceptron.max_vectors is ", max_vectors,
                     "; it must be in [1, ", kMaxVotedVectors, "]"));
  }
  return absl::OkStatus();
}

}  // namespace halfspace
