// Models the fuzz targets feed: one of each kind of feature space and
// learner, within limits small enough that no input can exhaust memory.

#ifndef HALFSPACE_TESTS_FUZZ_FUZZ_MODELS_H_
#define HALFSPACE_TESTS_FUZZ_FUZZ_MODELS_H_

#include <memory>
#include <vector>

#include "core/model/limits.h"
#include "core/model/model.h"
#include "google/protobuf/stubs/logging.h"

namespace halfspace {

// Protobuf's complaints about invalid UTF-8 would drown the fuzzer's output.
inline const bool kQuietProtobuf =
    (google::protobuf::SetLogHandler(nullptr), true);

// The limits of a server, scaled down.
inline std::shared_ptr<ResourceBudget> FuzzBudget() {
  Limits limits;
  limits.max_model_bytes = int64_t{8} << 20;
  limits.max_total_model_bytes = int64_t{64} << 20;
  limits.max_classes = 64;
  limits.max_named_features = 256;
  limits.max_interaction_products = 4096;
  limits.max_examples_per_request = 256;
  return std::make_shared<ResourceBudget>(limits);
}

// A dense binary model with standardization, a hashed one with
// interactions, and a multiclass one with hashed features.
inline std::vector<std::unique_ptr<Model>> FuzzModels(
    std::shared_ptr<ResourceBudget> budget) {
  std::vector<ModelSpec> specs(3);
  specs[0].algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  specs[0].dimension = 4;
  specs[0].standardize = true;
  specs[1].algorithm = DefaultParams(Algorithm::kSgd);
  specs[1].dimension = 2;
  specs[1].hash_bits = 8;
  specs[1].interactions = {{"a", "b"}, {"a", "a"}};
  specs[2].algorithm = DefaultParams(Algorithm::kSoftmaxRegression);
  specs[2].dimension = 2;
  specs[2].hash_bits = 6;
  std::vector<std::unique_ptr<Model>> models;
  for (const ModelSpec& spec : specs) {
    models.push_back(*Model::Create("fuzz", spec, {}, budget));
  }
  return models;
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_FUZZ_FUZZ_MODELS_H_
