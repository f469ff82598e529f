#include "core/algorithms/multiclass_classifier.h"

#include <algorithm>
#include <limits>

namespace halfspace {

int ArgMax(absl::Span<const double> scores) {
  return static_cast<int>(std::max_element(scores.begin(), scores.end()) -
                          scores.begin());
}

double MulticlassMargin(absl::Span<const double> scores, int y) {
  double rival = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < scores.size(); ++k) {
    if (static_cast<int>(k) != y) rival = std::max(rival, scores[k]);
  }
  return scores[y] - rival;
}

}  // namespace halfspace
