// A CreateModelRequest: its algorithm and parameters read, the spec
// validated, and the model made within the limits (never past them), then
// trained on one example.

#include <cstddef>
#include <cstdint>

#include "server/convert.h"
#include "tests/fuzz/fuzz_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  v1::CreateModelRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(request);
  if (!spec.ok()) return 0;
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(
      request.model(), *spec,
      {request.classes().begin(), request.classes().end()}, budget);
  if (!model.ok()) return 0;
  if (budget->reserved() > budget->limits().max_model_bytes) __builtin_trap();
  const std::vector<double> x(spec->dimension, 0.5);
  std::vector<Example> examples = {{x, 1, 1.0, "a"}};
  std::vector<ExampleOutcome> outcomes(1);
  (void)(*model)->Learn(examples, absl::MakeSpan(outcomes));
  return 0;
}
