// Who may do what: bearer tokens, each granting permissions on the models
// whose names match a pattern.
//
// Tokens file (--tokens_file), one token a line, `#` starts a comment:
//
//   # token                          grants (permission:pattern ...)
//   4f6c0d1e9a2b7c83d5e6f70812a9b3c4 admin:*
//   pipeline-7d21c9e8a1f04b6d        train:spam-* predict:ham-*
//
// Permissions, each including those before it:
//   predict  Predict, Evaluate, GetModel, ListModels (the models it may
//            see), GetWeights, GetSourceSequence, ExportModel
//   train    Train
//   admin    CreateModel, DeleteModel, ImportModel, SetWeights, RestoreModel
// Patterns are shell globs on model names (`*`, `?`, `[...]`), as fnmatch.
//
// A call carries its token in the `authorization` metadata as
// `Bearer <token>`. No token, or one the file does not hold:
// UNAUTHENTICATED. A token without the permission on the model:
// PERMISSION_DENIED, whether the model exists or not.
//
// Thread safety: a TokenPolicy is immutable; Authenticator swaps in a new
// policy on Reload while calls hold the old one.

#ifndef HALFSPACE_SERVER_AUTH_H_
#define HALFSPACE_SERVER_AUTH_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace halfspace {

enum class Permission { kPredict = 1, kTrain = 2, kAdmin = 3 };

// "predict", "train" or "admin".
const char* PermissionName(Permission permission);

struct Grant {
  Permission permission;
  std::string pattern;
};

class TokenPolicy {
 public:
  // INVALID_ARGUMENT naming the line for a token shorter than 16
  // characters, one listed twice, a line without grants, or a grant that is
  // not permission:pattern.
  static absl::StatusOr<std::shared_ptr<const TokenPolicy>> Parse(
      absl::string_view text);

  // The grants of `token`; null for a token the policy does not hold.
  // Compares in time independent of where a wrong token differs.
  const std::vector<Grant>* Find(absl::string_view token) const;

  size_t size() const { return tokens_.size(); }

 private:
  struct Token {
    std::string secret;
    std::vector<Grant> grants;
  };
  std::vector<Token> tokens_;
};

// What one call may do: everything (no policy), or a token's grants.
class Principal {
 public:
  // Allowed everything.
  Principal() = default;
  Principal(std::shared_ptr<const TokenPolicy> policy,
            const std::vector<Grant>* grants)
      : policy_(std::move(policy)), grants_(grants) {}

  // OK, or PERMISSION_DENIED naming the permission and the model.
  absl::Status Check(Permission permission, absl::string_view model) const;
  bool Allows(Permission permission, absl::string_view model) const {
    return Check(permission, model).ok();
  }

 private:
  std::shared_ptr<const TokenPolicy> policy_;  // keeps grants_ alive
  const std::vector<Grant>* grants_ = nullptr;
};

class Authenticator {
 public:
  // Without a tokens file every call may do everything.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Open(
      const std::string& tokens_file);

  bool enabled() const { return !tokens_file_.empty(); }

  // The principal of a call whose `authorization` metadata is
  // `authorization` (null if absent); UNAUTHENTICATED without a known
  // bearer token.
  absl::StatusOr<Principal> Authenticate(
      const std::string* authorization) const;

  // Reads the tokens file again; on error the policy in force stays.
  absl::Status Reload();

 private:
  explicit Authenticator(std::string tokens_file)
      : tokens_file_(std::move(tokens_file)) {}

  const std::string tokens_file_;
  mutable std::mutex mu_;
  std::shared_ptr<const TokenPolicy> policy_;  // guarded by mu_
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_AUTH_H_
