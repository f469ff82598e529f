// Conversions between the halfspace.v1 protos and core's types. Pure
// functions: no I/O, no locks beyond what the core calls they make take.

#ifndef HALFSPACE_SERVER_CONVERT_H_
#define HALFSPACE_SERVER_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/registry/model_registry.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The spec a CreateModel request asks for, defaults filled in; validation of
// the values is left to core.
absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req);

// The model's name, spec, classes and current statistics.
void ToProto(const Model& model, v1::Model* out);
void ToProto(const ModelStats& stats, v1::ModelStats* out);

// A registered model: as above, or its name and why it is unavailable.
void ToProto(const Listing& listing, v1::Model* out);

// One training result. `class_names` names the class indices of a
// multiclass outcome.
void ToProto(const ExampleOutcome& outcome,
             const std::vector<std::string>& class_names,
             v1::ExampleResult* out);

// What one pass over the data (or one request) did, as a training stream
// counts it: the examples it learned from (not those it rejected, nor
// duplicates), and what they did.
struct PassCounters {
  uint64_t examples = 0;
  uint64_t updates = 0;
  uint64_t mistakes = 0;
  double loss_sum = 0.0;
  uint64_t duplicates = 0;

  void Count(const ExampleOutcome& outcome) {
    duplicates += outcome.duplicate ? 1 : 0;
    if (!outcome.error.ok() || outcome.duplicate) return;
    examples += 1;
    updates += outcome.update.updated ? 1 : 0;
    mistakes += outcome.mistake ? 1 : 0;
    loss_sum += outcome.update.loss;
  }
};

// One request's counters, as a summary (its errors are added apart).
void ToProto(const PassCounters& counters, v1::TrainSummary* out);

// Pass number `pass`: its counters, and the model's state at its end.
void ToProto(uint64_t pass, const PassCounters& counters,
             const ModelStats& stats, v1::PassSummary* out);

// A model against the first of a comparison (the first: the champion).
void ToProto(const PairedComparison& comparison, v1::PairedTest* out);

// The weights a model predicts with (see Model::Weights).
void ToProto(const ModelSnapshot& weights, v1::GetWeightsResponse* out);

// What an Evaluate stream counted.
// With `confusion`, the confusion matrix too.
void ToProto(const Evaluation& evaluation, bool confusion,
             v1::EvaluateResponse* out);
// An upper bound on the size of ToProto's EvaluateResponse.
size_t EvaluateResponseBound(const Evaluation& evaluation, bool confusion);

// One prediction; `class_names` as above.
void ToProto(const Prediction& prediction,
             const std::vector<std::string>& class_names, v1::Prediction* out);

// What a core feature input made from a proto views besides the proto: its
// named features and its hashed groups, as core types.
struct NamedParts {
  std::vector<NamedFeature> named;
  std::vector<HashedGroup> hashed;
};

// A core example viewing the proto's data (which must outlive it); its named
// features and hashed groups go to `parts`, which must outlive it too and
// not be changed.
Example FromProto(const v1::Example& example, NamedParts& parts);

// A core feature input viewing the proto's data, as above.
FeatureInput FromProto(const v1::FeatureVector& x, NamedParts& parts);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CONVERT_H_
