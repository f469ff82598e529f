// One copy of each model specification in use, shared by the models made
// with it: a server's models are mostly made alike (the same algorithm,
// dimension and options), and a spec takes a few hundred bytes, a quarter
// of a small model's weights.
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

#include "core/model/model_spec.h"

namespace halfspace {

// The spec's fields as bytes: equal for specs whose every field is equal,
// different for specs that differ in any.
std::string SpecIdentity(const ModelSpec& spec);

// A spec equal to `spec`, the one other holders of an equal spec share.
std::shared_ptr<const ModelSpec> SharedSpec(const ModelSpec& spec);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_SHARED_SPEC_H_
