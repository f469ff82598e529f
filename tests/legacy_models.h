// The models stored in tests/data/format_v1/ by the previous file format
// (the hand-written codec, version 1), and the stream each was trained on, so
// that a test can train the same stream today and compare bit for bit.

#ifndef HALFSPACE_TESTS_LEGACY_MODELS_H_
#define HALFSPACE_TESTS_LEGACY_MODELS_H_

#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace halfspace::testing {

struct LegacyModel {
  std::string name;
  ModelSpec spec;
  std::vector<std::string> classes;
};

// A binary SGD model (log loss, averaged, hashed named features with an
// interaction), a standardized averaged perceptron and a multiclass softmax
// model.
inline std::vector<LegacyModel> LegacyModels() {
  ModelSpec sgd;
  SgdParams params;
  params.options.loss = LossKind::kLog;
  params.options.average_from = 3;
  sgd.algorithm = params;
  sgd.dimension = 3;
  sgd.hash_bits = 4;
  sgd.interactions = {{"a", "b"}};
  ModelSpec softmax;
  softmax.algorithm = SoftmaxRegressionParams{0.5, 0.01};
  softmax.dimension = 2;
  ModelSpec averaged;
  averaged.algorithm = AveragedPerceptronParams{0.5};
  averaged.dimension = 3;
  averaged.standardize = true;
  return {{"binary_sgd", sgd, {}},
          {"standardized", averaged, {}},
          {"animals", softmax, {"cat", "dog"}}};
}

// Trains `model` on its fixed stream of 40 examples.
inline void TrainLegacyStream(Model& model) {
  const char* kClasses[] = {"cat", "dog", "cow"};
  for (int i = 0; i < 40; ++i) {
    const std::vector<double> x = {0.5 * (i % 7) - 1.0, 1.0 - 0.25 * (i % 5),
                                   0.1 * i};
    const std::string colour = "colour" + std::to_string(i % 3);
    const std::vector<NamedFeature> named = {{"a", colour, 1.0},
                                             {"b", "size", 0.5 * (i % 4)}};
    Example example;
    if (model.multiclass()) {
      example.features = absl::MakeConstSpan(x.data(), 2);
      example.class_label = kClasses[i % 3];
    } else {
      example.features = FeatureInput(x);
      if (model.spec().hash_bits > 0) example.features.named = named;
      example.label = (i * 7) % 3 == 0 ? 1 : -1;
      example.weight = 1.0 + (i % 2);
    }
    std::vector<ExampleOutcome> out(1);
    (void)model.Learn({example}, absl::MakeSpan(out));
  }
}

}  // namespace halfspace::testing

#endif  // HALFSPACE_TESTS_LEGACY_MODELS_H_
