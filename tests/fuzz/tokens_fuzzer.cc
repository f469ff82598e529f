// A tokens file as the operator writes it (grants and rate options), and a
// token and model name as a caller sends them.

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/auth.h"
#include "server/rate_limits.h"

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
  const TokenEntry* entry = (*policy)->Find(token);
  if (entry == nullptr) return 0;
  // A rate the file sets is a number >= 0.
  for (const Rate& rate : {entry->limits.calls, entry->limits.examples}) {
    if (!(rate.per_second >= 0) || !(rate.burst >= 0)) __builtin_trap();
  }
  Principal principal(*policy, entry);
  const bool admin = principal.Allows(Permission::kAdmin, model);
  // Each permission includes those below it.
  if (admin && !principal.Allows(Permission::kPredict, model)) __builtin_trap();
  return 0;
}
