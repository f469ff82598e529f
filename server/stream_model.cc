#include "server/stream_model.h"

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

bool NamesModel(const ModelRegistry& registry, absl::string_view requested,
                const Model& model) {
  if (requested.empty() || requested == model.name()) return true;
  absl::StatusOr<std::shared_ptr<Model>> found = registry.Lookup(requested);
  return found.ok() && found->get() == &model;
}

absl::Status BindStreamModel(const ModelRegistry& registry,
                             absl::string_view requested,
                             absl::string_view request_kind,
                             const Principal& principal, Permission permission,
                             std::shared_ptr<Model>& model) {
  if (model != nullptr) {
    if (NamesModel(registry, requested, *model)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "this stream works on '", model->name(), "'; a ", request_kind,
        " names ", Quoted(requested), ". Open one stream per model"));
  }
  if (requested.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the first ", request_kind, " must name the model"));
  }
  if (absl::Status s = principal.Check(permission, requested); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::shared_ptr<Model>> found = registry.Lookup(requested);
  if (!found.ok()) return found.status();
  model = *std::move(found);
  return absl::OkStatus();
}

}  // namespace halfspace
