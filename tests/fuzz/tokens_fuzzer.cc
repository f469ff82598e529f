// A tokens file as the operator writes it, and a token and model name as a
// caller sends them.

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  const std::string input(reinterpret_cast<const char*>(data), size);
  // file \0 token \0 model
  const size_t a = input.find('\0');
  const size_t b = a == std::string::npos ? a : input.find('\0', a + 1);
  absl::StatusOr<std::shared_ptr<const TokenPolicy>> policy =
      TokenPolicy::Parse(input.substr(0, a));
  if (!policy.ok() || b == std::string::npos) return 0;
  const std::string token = input.substr(a + 1, b - a - 1);
  const std::string model = input.substr(b + 1, 64);
  const std::vector<Grant>* grants = (*policy)->Find(token);
  if (grants == nullptr) return 0;
  Principal principal(*policy, grants);
  const bool admin = principal.Allows(Permission::kAdmin, model);
  // Each permission includes those below it.
  if (admin && !principal.Allows(Permission::kPredict, model)) __builtin_trap();
  return 0;
}
