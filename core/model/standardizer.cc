#include "core/model/standardizer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {

void Standardizer::Observe(const Features& x, UndoLog& undo) {
  undo.Save(count_);
  undo.SaveAll(mean_);
  undo.SaveAll(m2_);
  count_ += 1.0;
  x.ForEachCoordinate(mean_.size(), [&](size_t j, double xj) {
    const double delta = xj - mean_[j];
    mean_[j] += delta / count_;
    m2_[j] += delta * (xj - mean_[j]);
  });
}

void Standardizer::Transform(const Features& x, std::vector<double>& z) const {
  z.resize(mean_.size());
  x.ForEachCoordinate(mean_.size(), [&](size_t j, double xj) {
    const double centered = xj - mean_[j];
    const double sd = count_ > 0.0 ? std::sqrt(m2_[j] / count_) : 0.0;
    z[j] = sd > 0.0 ? centered / sd : centered;
  });
}

std::vector<double> Standardizer::Export() const {
  std::vector<double> state = {count_};
  state.insert(state.end(), mean_.begin(), mean_.end());
  state.insert(state.end(), m2_.begin(), m2_.end());
  return state;
}

absl::Status Standardizer::Import(absl::Span<const double> state) {
  const size_t d = mean_.size();
  if (state.size() != 1 + 2 * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("standardizer state has ", state.size(),
                     " values; expected ", 1 + 2 * d));
  }
  count_ = state[0];
  std::copy(state.begin() + 1, state.begin() + 1 + d, mean_.begin());
  std::copy(state.begin() + 1 + d, state.end(), m2_.begin());
  return absl::OkStatus();
}

}  // namespace halfspace
