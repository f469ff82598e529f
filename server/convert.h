// Conversions between the halfspace.v1 protos and core's types. Pure
// functions: no I/O, no locks beyond what the core calls they make take.

#ifndef HALFSPACE_SERVER_CONVERT_H_
#define HALFSPACE_SERVER_CONVERT_H_

#include "absl/status/statusor.h"
#include "core/model.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The spec a CreateModel request asks for, defaults filled in; validation of
// the values is left to core.
absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req);

// The model's name, spec and current statistics.
void ToProto(const Model& model, v1::Model* out);

// One training result.
void ToProto(const ExampleOutcome& outcome, v1::ExampleResult* out);

// One prediction.
void ToProto(const Prediction& prediction, v1::Prediction* out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_CONVERT_H_
