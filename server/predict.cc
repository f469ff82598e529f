#include "server/predict.h"

#include <memory>

#include "absl/types/span.h"
#include "core/model/limits.h"
#include "server/convert.h"

namespace halfspace {
namespace {

// The most a v1::Prediction takes besides its class labels: the label (a
// negative int32 is ten bytes), three doubles, predicted_class's tag and
// length, and the entry's own tag and length.
constexpr size_t kPredictionBytes = 11 + 3 * 9 + 3 + 6;
// A remembered example id: at most 64 bytes, with its tag and length.
constexpr size_t kExampleIdBytes = 64 + 2;
// A v1::LabelQuery: a bool and two doubles, with its tag and length.
constexpr size_t kLabelQueryBytes = 2 + 2 * 9 + 2;
// A v1::ClassScore besides its label: two doubles, the label's tag and
// length, and the entry's own tag and length.
constexpr size_t kClassScoreBytes = 2 * 9 + 2 + 3;
// What the response holds besides its predictions: the model's name and
// its framing.
constexpr size_t kResponseBytes = 1024;

}  // namespace

PredictOptions PredictionEncoding(bool remember, bool query,
                                  size_t max_message_bytes) {
  PredictOptions options;
  options.max_bytes = max_message_bytes;
  options.response_bytes = kResponseBytes;
  options.instance_bytes = kPredictionBytes + (remember ? kExampleIdBytes : 0) +
                           (query ? kLabelQueryBytes : 0);
  options.class_score_bytes = kClassScoreBytes;
  return options;
}

absl::Status PredictInto(
    const Model& model, const Limits& limits,
    const google::protobuf::RepeatedPtrField<v1::FeatureVector>& instances,
    const PredictOptions& options, PredictScratch& scratch,
    const StopCheck& stop,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions) {
  const int n = instances.size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "PredictRequest has no instances; send at least one feature vector");
  }
  if (absl::Status s = CheckExamplesPerRequest(n, limits, "PredictRequest");
      !s.ok()) {
    return s;
  }
  if (scratch.named.size() < static_cast<size_t>(n)) scratch.named.resize(n);
  scratch.instances.resize(n);
  for (int i = 0; i < n; ++i) {
    scratch.instances[i] = FromProto(instances[i], scratch.named[i]);
  }
  scratch.predictions.resize(n);
  if (absl::Status s =
          model.Predict(scratch.instances, absl::MakeSpan(scratch.predictions),
                        &scratch.class_names, stop, options);
      !s.ok()) {
    return s;
  }
  predictions.Reserve(predictions.size() + n);
  for (const Prediction& p : scratch.predictions) {
    ToProto(p, scratch.class_names, predictions.Add());
  }
  return absl::OkStatus();
}

}  // namespace halfspace
