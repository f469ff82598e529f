#include "server/http_transcoder.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "google/rpc/status.pb.h"

namespace halfspace {
namespace {

namespace pb = google::protobuf;

absl::Status Invalid(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

// The first 64 bytes of `value`, as messages quote what a request sent.
std::string Quote(absl::string_view value) {
  std::string quoted(value.substr(0, 64));
  return absl::StrCat("\"", absl::CHexEscape(quoted), "\"",
                      value.size() > 64 ? "..." : "");
}

// The field `path` names below `message` (by its proto or JSON name),
// with the message that holds it (created as needed).
absl::StatusOr<std::pair<pb::Message*, const pb::FieldDescriptor*>> FieldAt(
    pb::Message* message, absl::string_view path) {
  const pb::FieldDescriptor* field = nullptr;
  std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  for (size_t i = 0; i < names.size(); ++i) {
    const pb::Descriptor& type = *message->GetDescriptor();
    const std::string name(names[i]);
    field = type.FindFieldByName(name);
    for (int f = 0; field == nullptr && f < type.field_count(); ++f) {
      if (type.field(f)->json_name() == name) field = type.field(f);
    }
    if (field == nullptr) {
      return Invalid(path, absl::StrCat("no such field in ", type.full_name()));
    }
    if (i + 1 < names.size()) {
      if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE ||
          field->is_repeated()) {
        return Invalid(path,
                       absl::StrCat(field->name(), " is not a message field"));
      }
      message = message->GetReflection()->MutableMessage(message, field);
    }
  }
  if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE || field->is_map()) {
    return Invalid(path, "only scalar fields can be set in a path or query");
  }
  return std::make_pair(message, field);
}

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF), as a proto3 string must be.
bool IsUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length;
    uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, code = c & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kLeast[length] || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

// Sets (or, for a repeated field, adds) `text` as the value of `field`.
absl::Status SetScalar(pb::Message* message, const pb::FieldDescriptor* field,
                       absl::string_view path, absl::string_view text) {
  const pb::Reflection& r = *message->GetReflection();
  const bool repeated = field->is_repeated();
  auto bad = [&](absl::string_view type) {
    return Invalid(path, absl::StrCat(Quote(text), " is not ", type));
  };
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      std::string value(text);
      if (field->type() == pb::FieldDescriptor::TYPE_STRING && !IsUtf8(text)) {
        return bad("UTF-8");
      }
      if (field->type() == pb::FieldDescriptor::TYPE_BYTES &&
          !absl::WebSafeBase64Unescape(text, &value) &&
          !absl::Base64Unescape(text, &value)) {
        return bad("base64");
      }
      repeated ? r.AddString(message, field, std::move(value))
               : r.SetString(message, field, std::move(value));
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("a 32-bit integer");
      repeated ? r.AddInt32(message, field, v) : r.SetInt32(message, field, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("a 64-bit integer");
      repeated ? r.AddInt64(message, field, v) : r.SetInt64(message, field, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("an unsigned 32-bit integer");
      repeated ? r.AddUInt32(message, field, v)
               : r.SetUInt32(message, field, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("an unsigned 64-bit integer");
      repeated ? r.AddUInt64(message, field, v)
               : r.SetUInt64(message, field, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      double v;
      if (!absl::SimpleAtod(text, &v)) return bad("a number");
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT) {
        repeated ? r.AddFloat(message, field, static_cast<float>(v))
                 : r.SetFloat(message, field, static_cast<float>(v));
      } else {
        repeated ? r.AddDouble(message, field, v)
                 : r.SetDouble(message, field, v);
      }
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (text == "true" || text == "1") {
        v = true;
      } else if (text == "false" || text == "0") {
        v = false;
      } else {
        return bad("true or false");
      }
      repeated ? r.AddBool(message, field, v) : r.SetBool(message, field, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumDescriptor& type = *field->enum_type();
      const pb::EnumValueDescriptor* value =
          type.FindValueByName(std::string(text));
      int number;
      if (value == nullptr && absl::SimpleAtoi(text, &number)) {
        value = type.FindValueByNumber(number);
      }
      if (value == nullptr) {
        return bad(absl::StrCat("a value of ", type.full_name()));
      }
      repeated ? r.AddEnum(message, field, value)
               : r.SetEnum(message, field, value);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return Invalid(path, "not a scalar field");
}

// Whether singular `field` holds a value other than `text` already (a
// field of another type: any value at all).
bool Conflicts(const pb::Message& message, const pb::FieldDescriptor* field,
               absl::string_view text) {
  const pb::Reflection& r = *message.GetReflection();
  if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) {
    return r.HasField(message, field);
  }
  const std::string& value = r.GetString(message, field);
  return !value.empty() && value != text;
}

absl::Status ParseJson(absl::string_view json, pb::Message* message) {
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = pb::util::JsonStringToMessage(
      pb::StringPiece(json.data(), json.size()), message, options);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the body is not a ", message->GetDescriptor()->name(),
                   " in JSON: ", std::string(status.message())));
}

}  // namespace

absl::Status DecodeHttpRequest(const HttpMatch& match, absl::string_view query,
                               absl::string_view body, pb::Message* request) {
  const HttpRoute& route = *match.route;
  // An empty body is the empty message.
  const bool has_body =
      !absl::StripAsciiWhitespace(body).empty() && !route.body.empty();
  if (route.body.empty() && !absl::StripAsciiWhitespace(body).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        route.http_method, " ", route.pattern, " takes no body; its ",
        "fields go in the path and the query string"));
  }
  if (has_body) {
    if (route.body == "*") {
      if (absl::Status s = ParseJson(body, request); !s.ok()) return s;
    } else {
      const pb::FieldDescriptor* field =
          request->GetDescriptor()->FindFieldByName(route.body);
      pb::Message* part =
          request->GetReflection()->MutableMessage(request, field);
      if (absl::Status s = ParseJson(body, part); !s.ok()) return s;
    }
  }
  for (const auto& [path, value] : match.bindings) {
    auto field = FieldAt(request, path);
    if (!field.ok()) return field.status();
    if (Conflicts(*field->first, field->second, value)) {
      return Invalid(path, absl::StrCat("the path says ", Quote(value),
                                        " and the body another value"));
    }
    if (absl::Status s = SetScalar(field->first, field->second, path, value);
        !s.ok()) {
      return s;
    }
  }
  if (query.empty()) return absl::OkStatus();
  if (route.body == "*") {
    return absl::InvalidArgumentError(absl::StrCat(
        route.http_method, " ", route.pattern, " takes its fields in the ",
        "body; the query string must be empty"));
  }
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    absl::StatusOr<std::string> name =
        PercentDecode(pair.substr(0, eq), /*plus_is_space=*/true);
    absl::StatusOr<std::string> value =
        PercentDecode(eq == absl::string_view::npos ? absl::string_view()
                                                    : pair.substr(eq + 1),
                      /*plus_is_space=*/true);
    if (!name.ok()) return Invalid("query", name.status().message());
    if (!value.ok()) return Invalid(*name, value.status().message());
    auto field = FieldAt(request, *name);
    if (!field.ok()) return field.status();
    if (!route.body.empty() && *name == route.body) {
      return Invalid(*name, "is the body; it cannot be a query parameter");
    }
    for (const auto& bound : match.bindings) {
      if (bound.first == *name) {
        return Invalid(*name,
                       "is set by the path; it cannot be a query "
                       "parameter");
      }
    }
    if (absl::Status s = SetScalar(field->first, field->second, *name, *value);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<pb::Message>>> DecodeHttpStream(
    const HttpMatch& match, absl::string_view query, absl::string_view body,
    const pb::Message& prototype, size_t max_messages) {
  std::vector<std::unique_ptr<pb::Message>> messages;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (messages.size() == max_messages) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", max_messages,
                       " requests in one body; send them in "
                       "more calls"));
    }
    std::unique_ptr<pb::Message> message(prototype.New());
    if (absl::Status s = DecodeHttpRequest(match, query, line, message.get());
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", s.message()));
    }
    messages.push_back(std::move(message));
  }
  if (messages.empty()) {
    // No line at all: one request with what the path says, so that the
    // call still names its model (and fails or succeeds as an empty
    // stream would).
    std::unique_ptr<pb::Message> message(prototype.New());
    if (absl::Status s = DecodeHttpRequest(match, query, "", message.get());
        !s.ok()) {
      return s;
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

std::string MessageToJson(const pb::Message& message) {
  std::string json;
  const auto status = pb::util::MessageToJsonString(message, &json);
  if (!status.ok()) {
    return StatusToJson(absl::StatusCode::kInternal,
                        absl::StrCat("the response does not print as JSON: ",
                                     std::string(status.message())));
  }
  return json;
}

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnknown:
      return 500;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kInternal:
      return 500;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDataLoss:
      return 500;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    default:
      return 500;
  }
}

std::string StatusToJson(absl::StatusCode code, absl::string_view message) {
  google::rpc::Status status;
  status.set_code(static_cast<int>(code));
  status.set_message(std::string(message));
  std::string json;
  (void)pb::util::MessageToJsonString(status, &json);
  return json;
}

}  // namespace halfspace
