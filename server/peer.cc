#include "server/peer.h"

#include <openssl/rand.h>

#include <cstdint>
#include <cstdlib>

#include "absl/strings/escaping.h"

namespace halfspace {

const std::string& HttpGatewaySecret() {
  static const std::string* secret = [] {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) std::abort();
    return new std::string(absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes)));
  }();
  return *secret;
}

bool ForwardedByGateway(absl::string_view value, std::string* client) {
  const std::string& secret = HttpGatewaySecret();
  if (value.size() <= secret.size() || value[secret.size()] != ' ') {
    return false;
  }
  // In time independent of where a guess differs.
  unsigned char differ = 0;
  for (size_t i = 0; i < secret.size(); ++i) {
    differ |= static_cast<unsigned char>(value[i] ^ secret[i]);
  }
  if (differ != 0) return false;
  *client = std::string(value.substr(secret.size() + 1));
  return true;
}

}  // namespace halfspace
