// Predicting for one PredictRequest: shared by the unary Predict and the
// PredictStream, so that both answer alike.

#ifndef HALFSPACE_SERVER_PREDICT_H_
#define HALFSPACE_SERVER_PREDICT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/registry/model_registry.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/convert.h"

namespace halfspace {

// Buffers reused from request to request on a stream.
struct PredictScratch {
  std::vector<FeatureInput> instances;
  std::vector<NamedParts> named;
  std::vector<Prediction> predictions;
  std::vector<std::string> class_names;
};

// The cost model of a v1::Prediction's encoding (see PredictOptions).
// `remember`: with an example id each; `query`: with a label query each.
PredictOptions PredictionEncoding(bool remember, bool query,
                                  size_t max_message_bytes);

// What a PredictRequest or PredictStreamRequest asks to have returned
// (top_k), and the most its predictions may take in a response of at most
// `max_message_bytes`, remembered ids included.
template <typename Request>
PredictOptions PredictOptionsFor(const Request& request,
                                 size_t max_message_bytes) {
  PredictOptions options = PredictionEncoding(
      request.remember(), request.query(), max_message_bytes);
  if (request.has_top_k()) options.top_k = request.top_k();
  return options;
}

// Predicts for every instance of `instances` with `model` into
// `predictions` (appended to), as `options` asks: INVALID_ARGUMENT without
// instances or for a bad one, RESOURCE_EXHAUSTED past `limits`'
// max_examples_per_request or `options`' max_bytes, CANCELLED once `stop`
// says so.
absl::Status PredictInto(
    const Model& model, const Limits& limits,
    const google::protobuf::RepeatedPtrField<v1::FeatureVector>& instances,
    const PredictOptions& options, PredictScratch& scratch,
    const StopCheck& stop,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PREDICT_H_
