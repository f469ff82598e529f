// A model file as ExportModel returns it, ImportModel takes it and the
// server stores it: decoded (either format version), restored as a model,
// used, and written back, which must read again.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/storage/snapshot_codec.h"
#include "tests/fuzz/fuzz_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  absl::StatusOr<ModelSnapshot> snapshot =
      DecodeSnapshot(std::string(reinterpret_cast<const char*>(data), size));
  if (!snapshot.ok()) return 0;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Restore(*std::move(snapshot), FuzzBudget());
  if (!model.ok()) return 0;
  const std::vector<double> x((*model)->spec().dimension, 1.0);
  std::vector<FeatureInput> instances = {FeatureInput(x)};
  std::vector<Prediction> predictions(1);
  (void)(*model)->Predict(instances, absl::MakeSpan(predictions));
  const std::string again = EncodeSnapshot((*model)->Snapshot());
  if (!DecodeSnapshot(again).ok()) __builtin_trap();
  return 0;
}
