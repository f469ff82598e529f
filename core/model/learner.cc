#include "core/model/learner.h"

#include "absl/strings/str_cat.h"
#include "core/model/binary_learner.h"
#include "core/model/multiclass_learner.h"

namespace halfspace {

std::unique_ptr<Learner> MakeLearner(const ModelSpec& spec) {
  if (IsMulticlass(spec)) {
    return std::make_unique<MulticlassLearner>(MakeMulticlassClassifier(spec),
                                               FeatureWidth(spec));
  }
  return std::make_unique<BinaryLearner>(MakeBinaryClassifier(spec));
}

absl::Status ScoreOverflowError(double score) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the score w·x + b is ", score,
      ": the features are too large for the weights (floating-point "
      "overflow); scale them down, e.g. with standardize: true"));
}

}  // namespace halfspace
