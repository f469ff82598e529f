// Who may do what: bearer tokens, each granting permissions on the models
// whose names match a pattern.
//
// Tokens file (--tokens_file), one token a line, `#` starts a comment:
//
//   # token                          grants (permission:pattern ...)
//   4f6c0d1e9a2b7c83d5e6f70812a9b3c4 admin:*
//   pipeline-7d21c9e8a1f04b6d        train:spam-* predict:ham-* name=spam
//       calls_per_second=100 examples_per_second=50000
//   sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//                                    predict:* name=dashboard
//
// A token may be written as sha256:<its SHA-256, in hex>, so that the file
// holds no secret. Options beside the grants: name=NAME, the token's name
// in metrics and logs (never the secret; default line<N>); and its rate
// limits (see rate_limits.h), calls_per_second, calls_burst,
// examples_per_second, examples_burst (training examples; 0 or absent: no
// limit).
//
// Permissions, each including those before it:
//   predict  Predict, Evaluate, GetModel, ListModels (the models it may
//            see), GetWeights, GetRecentExamples, GetSourceSequence,
//            ExportModel, WatchModel
//   train    Train
//   admin    CreateModel, DeleteModel, ImportModel, SetWeights, RestoreModel,
//            RollBackModel, SetDriftDetection
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
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "server/rate_limits.h"

namespace halfspace {

enum class Permission { kPredict = 1, kTrain = 2, kAdmin = 3 };

// "predict", "train" or "admin".
const char* PermissionName(Permission permission);

struct Grant {
  Permission permission;
  std::string pattern;
};

// What the tokens file says of one token, but its secret.
struct TokenEntry {
  std::string name;
  std::vector<Grant> grants;
  CallerLimits limits;
};

class TokenPolicy {
 public:
  // INVALID_ARGUMENT naming the line for a token shorter than 16
  // characters (or a sha256: one not of 64 hex digits), one listed twice, a
  // line without grants, a grant that is not permission:pattern, or an
  // option it does not know.
  static absl::StatusOr<std::shared_ptr<const TokenPolicy>> Parse(
      absl::string_view text);

  // What the file says of `token`; null for a token the policy does not
  // hold. Compares in time independent of where a wrong token differs.
  const TokenEntry* Find(absl::string_view token) const;

  size_t size() const { return tokens_.size(); }

 private:
  struct Token {
    std::string secret;  // the token, or its SHA-256 (32 bytes) if hashed
    bool hashed = false;
    TokenEntry entry;
  };
  std::vector<Token> tokens_;
};

// What one call may do: everything (no policy), or a token's grants.
class Principal {
 public:
  // Allowed everything.
  Principal() = default;
  Principal(std::shared_ptr<const TokenPolicy> policy, const TokenEntry* token)
      : policy_(std::move(policy)), token_(token) {}

  // The token's entry; null without tokens (anyone may do everything).
  const TokenEntry* token() const { return token_; }

  // OK, or PERMISSION_DENIED naming the permission and the model.
  absl::Status Check(Permission permission, absl::string_view model) const;
  bool Allows(Permission permission, absl::string_view model) const {
    return Check(permission, model).ok();
  }

 private:
  std::shared_ptr<const TokenPolicy> policy_;  // keeps token_ alive
  const TokenEntry* token_ = nullptr;
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
  mutable Mutex mu_;
  std::shared_ptr<const TokenPolicy> policy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_AUTH_H_
