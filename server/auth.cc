#include "server/auth.h"

#include <fnmatch.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/quoted.h"
#include "core/storage/files.h"

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
    if (fields[0].size() < kMinTokenLength) {
      return bad(absl::StrCat("a token must have at least ", kMinTokenLength,
                              " characters"));
    }
    if (policy->Find(fields[0]) != nullptr)
      return bad("the token is listed twice");
    if (fields.size() < 2)
      return bad("the token grants nothing; add permission:pattern");
    Token token{std::string(fields[0]), {}};
    for (size_t i = 1; i < fields.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> grant =
          absl::StrSplit(fields[i], absl::MaxSplits(':', 1));
      absl::StatusOr<Permission> permission = ParsePermission(grant.first);
      if (!permission.ok()) return bad(permission.status().message());
      if (grant.second.empty()) {
        return bad(absl::StrCat(Quoted(fields[i]),
                                " has no pattern; write permission:pattern"));
      }
      token.grants.push_back({*permission, std::string(grant.second)});
    }
    policy->tokens_.push_back(std::move(token));
  }
  return policy;
}

const std::vector<Grant>* TokenPolicy::Find(absl::string_view token) const {
  const std::vector<Grant>* found = nullptr;
  for (const Token& t : tokens_) {  // every one, found or not
    if (SameSecret(t.secret, token)) found = &t.grants;
  }
  return found;
}

absl::Status Principal::Check(Permission permission,
                              absl::string_view model) const {
  if (policy_ == nullptr) return absl::OkStatus();
  const std::string name(model);
  for (const Grant& g : *grants_) {
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
  std::lock_guard lock(mu_);
  policy_ = *std::move(policy);
  return absl::OkStatus();
}

absl::StatusOr<Principal> Authenticator::Authenticate(
    const std::string* authorization) const {
  if (!enabled()) return Principal();
  std::shared_ptr<const TokenPolicy> policy;
  {
    std::lock_guard lock(mu_);
    policy = policy_;
  }
  absl::string_view token;
  if (authorization != nullptr) {
    token = *authorization;
    if (!absl::ConsumePrefix(&token, "Bearer ") &&
        !absl::ConsumePrefix(&token, "bearer ")) {
      token = {};
    }
  }
  const std::vector<Grant>* grants =
      token.empty() ? nullptr : policy->Find(token);
  if (grants == nullptr) {
    return absl::UnauthenticatedError(
        "this server needs a bearer token it knows: send the metadata "
        "'authorization: Bearer <token>'");
  }
  return Principal(std::move(policy), grants);
}

}  // namespace halfspace
