// Predicting for one PredictRequest: shared by the unary Predict and the
// PredictStream, so that both answer alike.

#ifndef HALFSPACE_SERVER_PREDICT_H_
#define HALFSPACE_SERVER_PREDICT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model.h"
#include "core/model_registry.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// Buffers reused from request to request on a stream.
struct PredictScratch {
  std::vector<FeatureInput> instances;
  std::vector<std::vector<NamedFeature>> named;
  std::vector<Prediction> predictions;
  std::vector<std::string> class_names;
};

// Predicts for every instance of `instances` with `model` into
// `predictions` (appended to): INVALID_ARGUMENT without instances or for a
// bad one, RESOURCE_EXHAUSTED past `limits`' max_examples_per_request,
// CANCELLED once `stop` says so.
absl::Status PredictInto(
    const Model& model, const Limits& limits,
    const google::protobuf::RepeatedPtrField<v1::FeatureVector>& instances,
    PredictScratch& scratch, const StopCheck& stop,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PREDICT_H_
