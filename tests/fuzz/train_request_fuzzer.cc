// A TrainRequest as a client sends it: decoded, its examples checked and
// put into each model's feature space, learned and answered, as the Train
// stream does; and the same bytes as a PredictRequest's instances.

#include <cstddef>
#include <cstdint>

#include "server/convert.h"
#include "server/train_batch.h"
#include "tests/fuzz/fuzz_models.h"

namespace halfspace {
namespace {

void Check(bool invariant) {
  if (!invariant) __builtin_trap();
}

}  // namespace
}  // namespace halfspace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  std::vector<std::unique_ptr<Model>> models = FuzzModels(budget);
  v1::TrainRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!CheckExamplesPerRequest(request.examples_size(), budget->limits(),
                               "TrainRequest")
           .ok()) {
    return 0;
  }
  for (std::unique_ptr<Model>& model : models) {
    TrainScratch scratch;
    Check(PrepareRequest(*model, request, scratch).ok());
    const size_t bound = ResponseSizeBound(*model, request, scratch);
    TrainBatch batch;
    if (!LearnPrepared(Trainer(nullptr), *model, request, batch, scratch)
             .ok()) {
      continue;
    }
    v1::TrainResponse response;
    for (const ExampleOutcome& outcome : scratch.outcomes) {
      ToProto(outcome, scratch.class_names, response.add_results());
    }
    Check(response.ByteSizeLong() <= bound);  // the bound holds

    std::vector<FeatureInput> instances;
    std::vector<NamedParts> named(request.examples_size());
    for (int i = 0; i < request.examples_size(); ++i) {
      instances.push_back(FromProto(request.examples(i).features(), named[i]));
    }
    std::vector<Prediction> predictions(instances.size());
    (void)model->Predict(instances, absl::MakeSpan(predictions));
  }
  return 0;
}
