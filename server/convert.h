// Conversions between the halfspace.v1 protos and core's types. Pure
// functions: no I/O, no locks beyond what the core calls they make take.

#ifndef HALFSPACE_SERVER_CONVERT_H_
#define HALFSPACE_SERVER_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The spec a CreateModel request asks for, defaults filled in; validation of
// the values is left to core.
absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req);

// The model's name, spec, classes and current statistics.
void ToProto(const Model& model, v1::Model* out);

// One training result. `class_names` names the class indices of a
// multiclass outcome.
void ToProto(const ExampleOutcome& outcome,
             const std::vector<std::string>& class_names,
             v1::ExampleResult* out);

// One prediction; `class_names` as above.
void ToProto(const Prediction& prediction,
             const std::vector<std::string>& class_names, v1::Prediction* out);

// A core example viewing the proto's data (which must outlive it); its named
// features go to `named`, which must outlive it too and not be resized.
Example FromProto(const v1::Example& example,
                  std::vector<NamedFeature>& named);

// A core feature input viewing the proto's data, as above.
FeatureInput FromProto(const v1::FeatureVector& x,
                       std::vector<NamedFeature>& named);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CONVERT_H_
