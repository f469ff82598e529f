// The spec the drift tests share: an averaged perceptron of dimension 4
// watched by ADWIN, with a challenger (drift_reaction.h) unless asked not.

#ifndef HALFSPACE_TESTS_REACTING_SPEC_H_
#define HALFSPACE_TESTS_REACTING_SPEC_H_

#include "core/model/model_spec.h"

namespace halfspace {

inline ModelSpec ReactingSpec(bool challenge = true) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  spec.dimension = 4;
  spec.drift.method = DriftOptions::Method::kAdwin;
  spec.drift.challenge = challenge;
  return spec;
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_REACTING_SPEC_H_
