// One copy of each model specification in use, and of the feature space it
// makes, shared by the models made with it: a server's models are mostly
// made alike (the same algorithm, dimension and options), and a spec with
// its space takes a few hundred bytes, a third of a small model's weights.
//
// A spec is shared while a model holds it and forgotten after; two specs
// are shared only if every field is equal (SpecIdentity), so a model never
// sees another's options.
//
// Thread safety: SharedSpec may be called concurrently.

#ifndef HALFSPACE_CORE_MODEL_SHARED_SPEC_H_
#define HALFSPACE_CORE_MODEL_SHARED_SPEC_H_

#include <memory>
#include <string>

#include "core/features/feature_space.h"
#include "core/model/model_spec.h"

namespace halfspace {

// The spec's fields as bytes: equal for specs whose every field is equal,
// different for specs that differ in any.
std::string SpecIdentity(const ModelSpec& spec);

// A spec, and the feature space it makes (which the spec fixes).
struct SpecAndSpace {
  explicit SpecAndSpace(const ModelSpec& s)
      : spec(s), space(MakeFeatureSpace(s)) {}

  const ModelSpec spec;
  const FeatureSpace space;
};

// A spec equal to `spec` with its space, the one other holders of an equal
// spec share.
std::shared_ptr<const SpecAndSpace> SharedSpec(const ModelSpec& spec);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_SHARED_SPEC_H_
