#include "server/auth.h"

#include <fnmatch.h>
#include <openssl/sha.h>

#include <cmath>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/files.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

constexpr size_t kMinTokenLength = 16;

// Whether a == b, in time that depends on their lengths only.
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// The SHA-256 of `text`, 32 bytes.
std::string Sha256(absl::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// Sets `option` (name=value) of `entry`; INVALID_ARGUMENT if unknown.
absl::Status ParseOption(absl::string_view option, TokenEntry& entry) {
  const auto [key, value] = std::pair<absl::string_view, absl::string_view>(
      absl::StrSplit(option, absl::MaxSplits('=', 1)));
  if (key == "name") {
    if (value.empty()) return absl::InvalidArgumentError("name= is empty");
    entry.name = std::string(value);
    return absl::OkStatus();
  }
  double* target = key == "calls_per_second" ? &entry.limits.calls.per_second
                   : key == "calls_burst"    ? &entry.limits.calls.burst
                   : key == "examples_per_second"
                       ? &entry.limits.examples.per_second
                   : key == "examples_burst" ? &entry.limits.examples.burst
                                             : nullptr;
  if (target == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown option ", Quoted(key),
        "; use name, calls_per_second, calls_burst, examples_per_second or "
        "examples_burst"));
  }
  if (!absl::SimpleAtod(value, target) || !(*target >= 0) ||
      !std::isfinite(*target)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(option), ": the value must be a number >= 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Permission> ParsePermission(absl::string_view name) {
  if (name == "predict") return Permission::kPredict;
  if (name == "train") return Permission::kTrain;
  if (name == "admin") return Permission::kAdmin;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown permission ", Quoted(name), "; use predict, train or admin"));
}

}  // namespace

const char* PermissionName(Permission permission) {
  switch (permission) {
    case Permission::kPredict:
      return "predict";
    case Permission::kTrain:
      return "train";
    case Permission::kAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<std::shared_ptr<const TokenPolicy>> TokenPolicy::Parse(
    absl::string_view text) {
  auto policy = std::make_shared<TokenPolicy>();
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokens file line ", number, ": ", why));
    };
    Token token;
    absl::string_view secret = fields[0];
    if (absl::ConsumePrefix(&secret, "sha256:")) {
      if (secret.size() != 64 || !absl::c_all_of(secret, [](char c) {
            return absl::ascii_isxdigit(c);
          })) {
        return bad("a sha256: token must be 64 hexadecimal digits");
      }
      token.secret = absl::HexStringToBytes(absl::AsciiStrToLower(secret));
      token.hashed = true;
    } else if (secret.size() < kMinTokenLength) {
      return bad(absl::StrCat("a token must have at least ", kMinTokenLength,
                              " characters"));
    } else {
      token.secret = std::string(secret);
    }
    for (const Token& other : policy->tokens_) {
      if (other.hashed == token.hashed && other.secret == token.secret) {
        return bad("the token is listed twice");
      }
    }
    token.entry.name = absl::StrCat("line", number);
    for (size_t i = 1; i < fields.size(); ++i) {
      if (absl::StrContains(fields[i], '=')) {
        if (absl::Status s = ParseOption(fields[i], token.entry); !s.ok()) {
          return bad(s.message());
        }
        continue;
      }
      std::pair<absl::string_view, absl::string_view> grant =
          absl::StrSplit(fields[i], absl::MaxSplits(':', 1));
      absl::StatusOr<Permission> permission = ParsePermission(grant.first);
      if (!permission.ok()) return bad(permission.status().message());
      if (grant.second.empty()) {
        return bad(absl::StrCat(Quoted(fields[i]),
                                " has no pattern; write permission:pattern"));
      }
      token.entry.grants.push_back({*permission, std::string(grant.second)});
    }
    if (token.entry.grants.empty()) {
      return bad("the token grants nothing; add permission:pattern");
    }
    policy->tokens_.push_back(std::move(token));
  }
  return policy;
}

const TokenEntry* TokenPolicy::Find(absl::string_view token) const {
  const TokenEntry* found = nullptr;
  std::string digest;               // of `token`, once a hashed entry needs it
  for (const Token& t : tokens_) {  // every one, found or not
    if (t.hashed && digest.empty()) digest = Sha256(token);
    if (SameSecret(t.secret, t.hashed ? digest : token)) found = &t.entry;
  }
  return found;
}

absl::Status Principal::Check(Permission permission,
                              absl::string_view model) const {
  if (policy_ == nullptr) return absl::OkStatus();
  const std::string name(model);
  for (const Grant& g : token_->grants) {
    if (g.permission >= permission &&
        fnmatch(g.pattern.c_str(), name.c_str(), 0) == 0) {
      return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("this token has no ", PermissionName(permission),
                   " permission on model ", Quoted(model)));
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Open(
    const std::string& tokens_file) {
  std::unique_ptr<Authenticator> auth(new Authenticator(tokens_file));
  if (auth->enabled()) {
    if (absl::Status s = auth->Reload(); !s.ok()) return s;
  }
  return auth;
}

absl::Status Authenticator::Reload() {
  absl::StatusOr<std::string> text = ReadFile(tokens_file_);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::shared_ptr<const TokenPolicy>> policy =
      TokenPolicy::Parse(*text);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tokens_file_, ": ", policy.status().message()));
  }
  MutexLock lock(mu_);
  policy_ = *std::move(policy);
  return absl::OkStatus();
}

absl::StatusOr<Principal> Authenticator::Authenticate(
    const std::string* authorization) const {
  if (!enabled()) return Principal();
  std::shared_ptr<const TokenPolicy> policy;
  {
    MutexLock lock(mu_);
    policy = policy_;
  }
  absl::string_view token;
  if (authorization != nullptr) {
    // The scheme's case does not matter (RFC 9110, section 11.1).
    token = *authorization;
    if (absl::StartsWithIgnoreCase(token, "Bearer ")) {
      token.remove_prefix(7);
    } else {
      token = {};
    }
  }
  const TokenEntry* entry = token.empty() ? nullptr : policy->Find(token);
  if (entry == nullptr) {
    return absl::UnauthenticatedError(
        "this server needs a bearer token it knows: send the metadata "
        "'authorization: Bearer <token>'");
  }
  return Principal(std::move(policy), entry);
}

}  // namespace halfspace
