#include "server/logging.h"

#include <cstdint>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

constexpr absl::string_view kRequestIdPrefix = "rid=";

// Appends `text` as the contents of a JSON string.
void AppendEscaped(absl::string_view text, spdlog::memory_buf_t& out) {
  for (const char c : text) {
    switch (c) {
      case '"':
        out.append(absl::string_view("\\\""));
        break;
      case '\\':
        out.append(absl::string_view("\\\\"));
        break;
      case '\n':
        out.append(absl::string_view("\\n"));
        break;
      case '\r':
        out.append(absl::string_view("\\r"));
        break;
      case '\t':
        out.append(absl::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const std::string escaped = absl::StrFormat("\\u%04x", c);
          out.append(escaped.data(), escaped.data() + escaped.size());
        } else {
          out.push_back(c);
        }
    }
  }
}

void Append(absl::string_view text, spdlog::memory_buf_t& out) {
  out.append(text.data(), text.data() + text.size());
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    const std::string time =
        absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromChrono(msg.time),
                         absl::UTCTimeZone());
    Append("{\"time\":\"", dest);
    Append(time, dest);
    Append("\",\"level\":\"", dest);
    const auto level = spdlog::level::to_string_view(msg.level);
    Append(absl::string_view(level.data(), level.size()), dest);
    absl::string_view text(msg.payload.data(), msg.payload.size());
    if (absl::ConsumePrefix(&text, kRequestIdPrefix)) {
      const size_t space = text.find(' ');
      Append("\",\"request_id\":\"", dest);
      AppendEscaped(text.substr(0, space), dest);
      text = space == absl::string_view::npos ? "" : text.substr(space + 1);
    }
    Append("\",\"msg\":\"", dest);
    AppendEscaped(text, dest);
    Append("\"}\n", dest);
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

bool UsableId(absl::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<spdlog::formatter> MakeJsonFormatter() {
  return std::make_unique<JsonFormatter>();
}

absl::Status SetLogFormat(absl::string_view format) {
  if (format == "json") {
    spdlog::set_formatter(MakeJsonFormatter());
  } else if (format != "text") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_format=", format, ": use text or json"));
  }
  return absl::OkStatus();
}

std::string RequestId(grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("x-request-id");
  std::string id;
  if (it != metadata.end()) id.assign(it->second.data(), it->second.size());
  if (!UsableId(id)) {
    thread_local std::mt19937_64 random(std::random_device{}());
    id = absl::StrFormat("%016x", random());
  }
  context.AddInitialMetadata("x-request-id", id);
  return id;
}

}  // namespace halfspace
