#include "core/algorithms/one_vs_rest.h"

#include "absl/strings/str_cat.h"

namespace halfspace {

void OneVsRest::Normalize(std::vector<double>& probabilities) {
  double sum = 0.0;
  for (double p : probabilities) sum += p;
  for (double& p : probabilities) {
    p = sum > 0.0 ? p / sum : 1.0 / probabilities.size();
  }
}

MulticlassUpdate OneVsRest::Learn(Features x, int y, double s,
                                  std::vector<double>& scores,
                                  std::vector<double>& probabilities) {
  const int n = num_classes();
  scores.resize(n);
  probabilities.clear();
  MulticlassUpdate u;
  for (int k = 0; k < n; ++k) {
    const Update binary = binaries_[k]->Learn(x, k == y ? 1 : -1, s);
    scores[k] = binary.score;
    u.loss += binary.loss;
    u.updated = u.updated || binary.updated;
    if (binary.probability.has_value()) {
      probabilities.push_back(*binary.probability);
    }
  }
  if (!probabilities.empty()) Normalize(probabilities);
  u.predicted_class = ArgMax(scores);
  u.margin = MulticlassMargin(scores, y);
  return u;
}

void OneVsRest::Predict(Features x, std::vector<double>& scores,
                        std::vector<double>& probabilities) const {
  const int n = num_classes();
  scores.resize(n);
  probabilities.clear();
  for (int k = 0; k < n; ++k) {
    scores[k] = binaries_[k]->Score(x);
    if (std::optional<double> p = binaries_[k]->Probability(scores[k])) {
      probabilities.push_back(*p);
    }
  }
  if (!probabilities.empty()) Normalize(probabilities);
}

void OneVsRest::EndBatch() {
  for (auto& binary : binaries_) binary->EndBatch();
}

std::vector<double> OneVsRest::ExportState() const {
  // Per class: its state's size, then the state.
  std::vector<double> state;
  for (const auto& binary : binaries_) {
    std::vector<double> one = binary->ExportState();
    state.push_back(static_cast<double>(one.size()));
    state.insert(state.end(), one.begin(), one.end());
  }
  return state;
}

absl::Status OneVsRest::ImportState(absl::Span<const double> state) {
  for (auto& binary : binaries_) {
    if (state.empty() || state[0] < 0 || state[0] + 1 > state.size()) {
      return absl::InvalidArgumentError("one-vs-rest state is truncated");
    }
    const size_t size = static_cast<size_t>(state[0]);
    absl::Status s = binary->ImportState(state.subspan(1, size));
    if (!s.ok()) return s;
    state.remove_prefix(1 + size);
  }
  if (!state.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("one-vs-rest state has ", state.size(), " extra values"));
  }
  return absl::OkStatus();
}

}  // namespace halfspace
