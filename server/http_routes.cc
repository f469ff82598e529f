#include "server/http_routes.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/api/annotations.pb.h"

namespace halfspace {
namespace {

namespace pb = google::protobuf;

absl::Status BadTemplate(absl::string_view pattern, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("HTTP path template \"", pattern, "\": ", why));
}

// One segment of a template, outside a variable: `*`, `**` or a literal.
absl::StatusOr<HttpRoute::Segment> ParseSegment(absl::string_view pattern,
                                                absl::string_view text) {
  HttpRoute::Segment segment;
  if (text == "*") {
    segment.kind = HttpRoute::Segment::kOne;
  } else if (text == "**") {
    segment.kind = HttpRoute::Segment::kRest;
  } else if (text.empty() ||
             text.find_first_of("{}*=:") != absl::string_view::npos) {
    return BadTemplate(pattern, absl::StrCat("bad segment \"", text, "\""));
  } else {
    segment.literal = std::string(text);
  }
  return segment;
}

// Splits `text` at the '/' outside braces.
std::vector<absl::string_view> SplitOutsideBraces(absl::string_view text) {
  std::vector<absl::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}') --depth;
    if (text[i] == '/' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// The field `path` ("a.b") names in `message`, or null.
const pb::FieldDescriptor* FieldAt(const pb::Descriptor& message,
                                   absl::string_view path) {
  const pb::Descriptor* in = &message;
  const pb::FieldDescriptor* field = nullptr;
  for (absl::string_view name : absl::StrSplit(path, '.')) {
    if (in == nullptr) return nullptr;
    field = in->FindFieldByName(std::string(name));
    if (field == nullptr) return nullptr;
    in = field->message_type();
  }
  return field;
}

// The verb of a request path's last segment (after its last ':'), and the
// path without it.
std::pair<absl::string_view, absl::string_view> SplitVerb(
    absl::string_view path) {
  const size_t slash = path.rfind('/');
  const size_t colon = path.rfind(':');
  if (colon == absl::string_view::npos ||
      (slash != absl::string_view::npos && colon < slash)) {
    return {path, absl::string_view()};
  }
  return {path.substr(0, colon), path.substr(colon + 1)};
}

// Binds `route` to `path`'s segments (already split from their verb) if it
// matches.
bool MatchSegments(const HttpRoute& route,
                   const std::vector<std::string>& segments,
                   std::vector<std::pair<std::string, std::string>>* out) {
  size_t i = 0;
  std::vector<std::pair<size_t, size_t>> spans(route.segments.size());
  for (size_t s = 0; s < route.segments.size(); ++s) {
    const HttpRoute::Segment& segment = route.segments[s];
    switch (segment.kind) {
      case HttpRoute::Segment::kLiteral:
        if (i >= segments.size() || segments[i] != segment.literal) {
          return false;
        }
        spans[s] = {i, i + 1};
        ++i;
        break;
      case HttpRoute::Segment::kOne:
        if (i >= segments.size() || segments[i].empty()) return false;
        spans[s] = {i, i + 1};
        ++i;
        break;
      case HttpRoute::Segment::kRest:
        spans[s] = {i, segments.size()};
        i = segments.size();
        break;
    }
  }
  if (i != segments.size()) return false;
  for (const HttpRoute::Variable& v : route.variables) {
    const size_t begin = spans[v.begin].first;
    const size_t end = v.end > v.begin ? spans[v.end - 1].second : begin;
    std::string value;
    for (size_t k = begin; k < end; ++k) {
      if (k > begin) value += '/';
      value += segments[k];
    }
    out->emplace_back(v.field_path, std::move(value));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> PercentDecode(absl::string_view text,
                                          bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else if (i + 2 < text.size() && absl::ascii_isxdigit(text[i + 1]) &&
               absl::ascii_isxdigit(text[i + 2])) {
      auto hex = [](char h) {
        return absl::ascii_isdigit(h) ? h - '0'
                                      : absl::ascii_tolower(h) - 'a' + 10;
      };
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("bad percent-encoding at byte ", i,
                       ": '%' must be followed by "
                       "two hex digits"));
    }
  }
  return out;
}

absl::StatusOr<HttpRoute> ParseHttpTemplate(absl::string_view pattern) {
  HttpRoute route;
  route.pattern = std::string(pattern);
  if (pattern.empty() || pattern[0] != '/') {
    return BadTemplate(pattern, "it must start with '/'");
  }
  absl::string_view rest = pattern.substr(1);
  // The verb: after a ':' outside braces and after the last '/'.
  int depth = 0;
  size_t verb_at = absl::string_view::npos;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '{') ++depth;
    if (rest[i] == '}') --depth;
    if (depth < 0 || depth > 1) return BadTemplate(pattern, "unbalanced '{'");
    if (depth == 0 && rest[i] == '/') verb_at = absl::string_view::npos;
    if (depth == 0 && rest[i] == ':') verb_at = i;
  }
  if (depth != 0) return BadTemplate(pattern, "unbalanced '{'");
  if (verb_at != absl::string_view::npos) {
    route.verb = std::string(rest.substr(verb_at + 1));
    rest = rest.substr(0, verb_at);
    if (route.verb.empty() ||
        route.verb.find_first_of("/{}*:") != std::string::npos) {
      return BadTemplate(pattern, "bad verb");
    }
  }
  for (absl::string_view part : SplitOutsideBraces(rest)) {
    if (!part.empty() && part.front() == '{') {
      if (part.back() != '}') {
        return BadTemplate(pattern, "a variable must be a whole segment");
      }
      absl::string_view inside = part.substr(1, part.size() - 2);
      HttpRoute::Variable variable;
      const size_t eq = inside.find('=');
      variable.field_path = std::string(inside.substr(0, eq));
      if (variable.field_path.empty()) {
        return BadTemplate(pattern, "a variable without a field");
      }
      variable.begin = route.segments.size();
      if (eq == absl::string_view::npos) {
        route.segments.push_back({HttpRoute::Segment::kOne, ""});
      } else {
        for (absl::string_view sub :
             absl::StrSplit(inside.substr(eq + 1), '/')) {
          if (sub.find('{') != absl::string_view::npos) {
            return BadTemplate(pattern, "a variable inside a variable");
          }
          absl::StatusOr<HttpRoute::Segment> s = ParseSegment(pattern, sub);
          if (!s.ok()) return s.status();
          route.segments.push_back(*std::move(s));
        }
      }
      variable.end = route.segments.size();
      route.variables.push_back(std::move(variable));
    } else {
      absl::StatusOr<HttpRoute::Segment> s = ParseSegment(pattern, part);
      if (!s.ok()) return s.status();
      route.segments.push_back(*std::move(s));
    }
  }
  for (size_t i = 0; i + 1 < route.segments.size(); ++i) {
    if (route.segments[i].kind == HttpRoute::Segment::kRest) {
      return BadTemplate(pattern, "'**' must be the last segment");
    }
  }
  return route;
}

absl::StatusOr<HttpRoutes> HttpRoutes::FromService(
    const pb::ServiceDescriptor& service) {
  HttpRoutes routes;
  for (int m = 0; m < service.method_count(); ++m) {
    const pb::MethodDescriptor& method = *service.method(m);
    if (!method.options().HasExtension(google::api::http)) continue;
    const google::api::HttpRule& top =
        method.options().GetExtension(google::api::http);
    std::vector<const google::api::HttpRule*> rules = {&top};
    for (const auto& more : top.additional_bindings()) rules.push_back(&more);
    for (const google::api::HttpRule* rule : rules) {
      std::string verb, path;
      switch (rule->pattern_case()) {
        case google::api::HttpRule::kGet:
          verb = "GET", path = rule->get();
          break;
        case google::api::HttpRule::kPut:
          verb = "PUT", path = rule->put();
          break;
        case google::api::HttpRule::kPost:
          verb = "POST", path = rule->post();
          break;
        case google::api::HttpRule::kDelete:
          verb = "DELETE", path = rule->delete_();
          break;
        case google::api::HttpRule::kPatch:
          verb = "PATCH", path = rule->patch();
          break;
        case google::api::HttpRule::kCustom:
          verb = rule->custom().kind(), path = rule->custom().path();
          break;
        case google::api::HttpRule::PATTERN_NOT_SET:
          return absl::InvalidArgumentError(absl::StrCat(
              method.full_name(), ": an HTTP rule without a path"));
      }
      absl::StatusOr<HttpRoute> route = ParseHttpTemplate(path);
      if (!route.ok()) return route.status();
      route->method = &method;
      route->http_method = verb;
      route->body = rule->body();
      const pb::Descriptor& input = *method.input_type();
      for (const HttpRoute::Variable& v : route->variables) {
        const pb::FieldDescriptor* field = FieldAt(input, v.field_path);
        if (field == nullptr || field->is_repeated() ||
            field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
          return absl::InvalidArgumentError(absl::StrCat(
              method.full_name(), ": path variable ", v.field_path,
              " is not a singular scalar field of ", input.full_name()));
        }
      }
      if (!route->body.empty() && route->body != "*" &&
          input.FindFieldByName(route->body) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(method.full_name(), ": body ", route->body,
                         " is not a field of ", input.full_name()));
      }
      routes.routes_.push_back(*std::move(route));
    }
  }
  return routes;
}

namespace {

// The percent-decoded segments of `path` (which starts with '/'), split
// before decoding so that %2F stays inside its segment.
absl::StatusOr<std::vector<std::string>> DecodedSegments(
    absl::string_view path) {
  std::vector<std::string> segments;
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError("the path must start with '/'");
  }
  for (absl::string_view raw : absl::StrSplit(path.substr(1), '/')) {
    absl::StatusOr<std::string> s = PercentDecode(raw, false);
    if (!s.ok()) return s.status();
    segments.push_back(*std::move(s));
  }
  return segments;
}

}  // namespace

absl::StatusOr<HttpMatch> HttpRoutes::Match(absl::string_view http_method,
                                            absl::string_view path) const {
  const auto [rest, verb] = SplitVerb(path);
  absl::StatusOr<std::vector<std::string>> segments = DecodedSegments(rest);
  if (!segments.ok()) return segments.status();
  absl::StatusOr<std::string> decoded_verb = PercentDecode(verb, false);
  if (!decoded_verb.ok()) return decoded_verb.status();
  std::vector<std::string> allowed;
  for (const HttpRoute& route : routes_) {
    HttpMatch match;
    if (route.verb != *decoded_verb ||
        !MatchSegments(route, *segments, &match.bindings)) {
      continue;
    }
    if (route.http_method != http_method) {
      if (std::find(allowed.begin(), allowed.end(), route.http_method) ==
          allowed.end()) {
        allowed.push_back(route.http_method);
      }
      continue;
    }
    match.route = &route;
    return match;
  }
  if (!allowed.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("method ", http_method, " is not allowed on ", path,
                     "; it takes ", absl::StrJoin(allowed, ", ")));
  }
  return absl::NotFoundError(
      absl::StrCat("no route for ", http_method, " ", path));
}

std::vector<std::string> HttpRoutes::MethodsFor(absl::string_view path) const {
  std::vector<std::string> methods;
  const auto [rest, verb] = SplitVerb(path);
  absl::StatusOr<std::vector<std::string>> segments = DecodedSegments(rest);
  absl::StatusOr<std::string> decoded_verb = PercentDecode(verb, false);
  if (!segments.ok() || !decoded_verb.ok()) return methods;
  for (const HttpRoute& route : routes_) {
    std::vector<std::pair<std::string, std::string>> ignored;
    if (route.verb == *decoded_verb &&
        MatchSegments(route, *segments, &ignored) &&
        std::find(methods.begin(), methods.end(), route.http_method) ==
            methods.end()) {
      methods.push_back(route.http_method);
    }
  }
  return methods;
}

}  // namespace halfspace
