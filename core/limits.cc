#include "core/limits.h"

#include "absl/strings/str_cat.h"
#include "core/quoted.h"

namespace halfspace {

absl::Status LimitExceeded(absl::string_view what, int64_t limit,
                           absl::string_view flag) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what, "; the limit is ", limit, ", set by --", flag));
}

absl::Status CheckExamplesPerRequest(int64_t examples, const Limits& limits,
                                     absl::string_view request) {
  if (examples <= limits.max_examples_per_request) return absl::OkStatus();
  return LimitExceeded(absl::StrCat("the ", request, " has ", examples,
                                    " examples; send fewer per request"),
                       limits.max_examples_per_request,
                       "max_examples_per_request");
}

absl::Status ResourceBudget::Reserve(int64_t bytes, absl::string_view model) {
  const int64_t limit = limits_.max_total_model_bytes;
  int64_t reserved = reserved_.load(std::memory_order_relaxed);
  do {
    if (enforcing() && bytes > limit - reserved) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "model ", Quoted(model), " needs ", bytes,
          " more bytes of memory, but the server's models hold ", reserved,
          " of the ", limit, " bytes all models may hold together (set by "
          "--max_total_model_bytes); delete models or raise the limit"));
    }
  } while (!reserved_.compare_exchange_weak(reserved, reserved + bytes,
                                            std::memory_order_acq_rel));
  return absl::OkStatus();
}

void ResourceBudget::Release(int64_t bytes) {
  reserved_.fetch_sub(bytes, std::memory_order_acq_rel);
}

std::shared_ptr<ResourceBudget> UnlimitedBudget() {
  return std::make_shared<ResourceBudget>();
}

}  // namespace halfspace
