// An algorithm's parameters to and from halfspace.v1.Algorithm. Each
// algorithm names its parameters beside its update rule (see
// core/algorithms/parameters.h), and the API's messages use the same names:
// the algorithm is the field of Algorithm's oneof named as the algorithm,
// each parameter that message's field of its name. So an algorithm added to
// core and to the proto converts with no code here.

#ifndef HALFSPACE_SERVER_ALGORITHM_PROTO_H_
#define HALFSPACE_SERVER_ALGORITHM_PROTO_H_

#include "absl/status/statusor.h"
#include "core/model/model_spec.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// The algorithm the message sets, with every parameter it leaves unset at
// its default; an enum's zero value (UNSPECIFIED) is the default too.
// INVALID_ARGUMENT when no algorithm is set, or an enum has a value this
// server does not know. The values' ranges are left to core.
absl::StatusOr<AlgorithmParams> FromProto(const v1::Algorithm& algorithm);

// Every parameter, with the value in effect.
void ToProto(const AlgorithmParams& params, v1::Algorithm* out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_ALGORITHM_PROTO_H_
