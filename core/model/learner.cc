#include "core/model/learner.h"

#include "absl/strings/str_cat.h"
#include "core/model/binary_learner.h"
#include "core/model/multiclass_learner.h"

namespace halfspace {

std::unique_ptr<Learner> MakeLearner(const ModelSpec& spec, UndoLog* undo) {
  if (IsMulticlass(spec)) {
    std::unique_ptr<MulticlassClassifier> classifier =
        MakeMulticlassClassifier(spec);
    classifier->set_undo_log(undo);
    return std::make_unique<MulticlassLearner>(std::move(classifier),
                                               FeatureWidth(spec));
  }
  std::unique_ptr<OnlineClassifier> classifier = MakeBinaryClassifier(spec);
  classifier->set_undo_log(undo);
  return std::make_unique<BinaryLearner>(std::move(classifier));
}

absl::Status ScoreOverflowError(double score) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the score w·x + b is ", score,
      ": the features are too large for the weights (floating-point "
      "overflow); scale them down, e.g. with standardize: true"));
}

}  // namespace halfspace
