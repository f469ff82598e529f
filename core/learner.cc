#include "core/learner.h"

#include "core/binary_learner.h"
#include "core/multiclass_learner.h"

namespace halfspace {

std::unique_ptr<Learner> MakeLearner(const ModelSpec& spec) {
  if (IsMulticlass(spec)) {
    return std::make_unique<MulticlassLearner>(MakeMulticlassClassifier(spec),
                                               FeatureWidth(spec));
  }
  return std::make_unique<BinaryLearner>(MakeBinaryClassifier(spec));
}

}  // namespace halfspace
