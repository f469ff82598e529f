#include "server/predict.h"

#include <memory>

#include "absl/types/span.h"
#include "core/limits.h"
#include "server/convert.h"

namespace halfspace {

absl::Status PredictInto(
    const Model& model, const Limits& limits,
    const google::protobuf::RepeatedPtrField<v1::FeatureVector>& instances,
    PredictScratch& scratch, const StopCheck& stop,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions) {
  const int n = instances.size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "PredictRequest has no instances; send at least one feature vector");
  }
  if (absl::Status s = CheckExamplesPerRequest(n, limits,
                                               "PredictRequest");
      !s.ok()) {
    return s;
  }
  if (scratch.named.size() < static_cast<size_t>(n)) scratch.named.resize(n);
  scratch.instances.resize(n);
  for (int i = 0; i < n; ++i) {
    scratch.instances[i] = FromProto(instances[i], scratch.named[i]);
  }
  scratch.predictions.resize(n);
  if (absl::Status s = model.Predict(scratch.instances,
                                         absl::MakeSpan(scratch.predictions),
                                         &scratch.class_names, stop);
      !s.ok()) {
    return s;
  }
  for (const Prediction& p : scratch.predictions) {
    ToProto(p, scratch.class_names, predictions.Add());
  }
  return absl::OkStatus();
}

}  // namespace halfspace
