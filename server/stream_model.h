// Which model a Train or Evaluate stream works on: the first request names
// it, later requests may repeat the name but not name another.

#ifndef HALFSPACE_SERVER_STREAM_MODEL_H_
#define HALFSPACE_SERVER_STREAM_MODEL_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/registry/model_registry.h"
#include "server/auth.h"

namespace halfspace {

// Whether `requested` (a name or an alias) names `model`, or is empty: a
// later request of a stream may repeat its model's name or alias.
bool NamesModel(const ModelRegistry& registry, absl::string_view requested,
                const Model& model);

// Binds `model` (null before the first request) to the model `requested`
// names (or the alias `requested` points to): INVALID_ARGUMENT if the first
// request names none or a later one names another, PERMISSION_DENIED (before
// the model is looked up) unless `principal` has `permission` on it, NOT_FOUND
// for an unknown model. `request_kind` names the message in errors, e.g.
// "TrainRequest".
absl::Status BindStreamModel(const ModelRegistry& registry,
                             absl::string_view requested,
                             absl::string_view request_kind,
                             const Principal& principal, Permission permission,
                             std::shared_ptr<Model>& model);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_STREAM_MODEL_H_
