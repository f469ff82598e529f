// Google's HTTP rules (google/api/http.proto), read from the
// `google.api.http` options of a service's methods: which RPC an HTTP
// method and path call, and which request fields the path binds.
//
// A path template is "/" segments [":" verb], each segment a literal, `*`
// (one segment), `**` (the rest, last) or a variable `{field.path}` (one
// segment) / `{field.path=segments}`; what a variable matched is
// percent-decoded and set in the request's field (see http_transcoder.h).
// Matching is by segments, not by prefix, and takes the first rule that
// matches in the order the service declares them.
//
// Thread safety: a built HttpRoutes is immutable.

#ifndef HALFSPACE_SERVER_HTTP_ROUTES_H_
#define HALFSPACE_SERVER_HTTP_ROUTES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace halfspace {

// One HTTP binding of one RPC.
struct HttpRoute {
  const google::protobuf::MethodDescriptor* method = nullptr;
  std::string http_method;  // "GET", "POST", "PUT", "DELETE", "PATCH", ...
  std::string pattern;      // the path template as written
  // "" (no body), "*" (the whole request) or a top-level field's name.
  std::string body;

  struct Segment {
    enum Kind { kLiteral, kOne, kRest } kind = kLiteral;
    std::string literal;
  };
  struct Variable {
    std::string field_path;  // "model", "a.b"
    size_t begin = 0;        // the segments it spans, [begin, end)
    size_t end = 0;
  };
  std::vector<Segment> segments;
  std::string verb;  // after the last ':'; empty for none
  std::vector<Variable> variables;
};

// A request matched to a route: the fields its path binds and their
// percent-decoded values.
struct HttpMatch {
  const HttpRoute* route = nullptr;
  std::vector<std::pair<std::string, std::string>> bindings;
};

// "/v1/models/{model}:predict" parsed; INVALID_ARGUMENT saying what is wrong
// with a template that does not follow the grammar above.
absl::StatusOr<HttpRoute> ParseHttpTemplate(absl::string_view pattern);

// %XX decoded; `plus_is_space` for query strings. INVALID_ARGUMENT for a %
// not followed by two hex digits.
absl::StatusOr<std::string> PercentDecode(absl::string_view text,
                                          bool plus_is_space);

class HttpRoutes {
 public:
  // Every binding of every method of `service` (additional bindings
  // included); INVALID_ARGUMENT for a template that does not parse or a
  // variable or body naming no field of the request.
  static absl::StatusOr<HttpRoutes> FromService(
      const google::protobuf::ServiceDescriptor& service);

  // The route `path` (without its query) takes for `http_method`:
  // NOT_FOUND when no rule has the path, UNIMPLEMENTED (the HTTP method is
  // not allowed) when rules have it for other methods only, naming them;
  // INVALID_ARGUMENT for a path that does not percent-decode.
  absl::StatusOr<HttpMatch> Match(absl::string_view http_method,
                                  absl::string_view path) const;

  // The HTTP methods rules allow on `path` (for a 405's Allow header).
  std::vector<std::string> MethodsFor(absl::string_view path) const;

  const std::vector<HttpRoute>& routes() const { return routes_; }

 private:
  std::vector<HttpRoute> routes_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_HTTP_ROUTES_H_
