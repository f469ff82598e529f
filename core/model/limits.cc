#include "core/model/limits.h"

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

// How a limit's error names its flag; LimitOf reads it back.
constexpr absl::string_view kSetBy = ", set by --";

}  // namespace

absl::Status LimitExceeded(absl::string_view what, int64_t limit,
                           absl::string_view flag) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what, "; the limit is ", limit, kSetBy, flag));
}

std::string LimitOf(const absl::Status& status) {
  if (!absl::IsResourceExhausted(status)) return "";
  const absl::string_view message = status.message();
  const size_t at = message.rfind(kSetBy);
  if (at == absl::string_view::npos) return "";
  const absl::string_view rest = message.substr(at + kSetBy.size());
  return std::string(rest.substr(0, rest.find_first_of(" ;)")));
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
      return LimitExceeded(
          absl::StrCat("model ", Quoted(model), " needs ", bytes,
                       " more bytes of memory, and the server's models hold ",
                       reserved,
                       " bytes; delete models or raise the limit "
                       "on what all models may hold together"),
          limit, "max_total_model_bytes");
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
