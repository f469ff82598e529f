// The server's log: spdlog lines of text, or JSON lines for log pipelines,
// and the request id that ties a call's lines together.
//
// A line about one call starts its message with "rid=<id> "; in JSON that
// becomes the "request_id" field:
//
//   {"time":"2026-11-30T16:40:00.123456Z","level":"info",
//    "request_id":"7f3a9c0e5b21d846","msg":"created model 'spam'"}
//
// The id is the caller's `x-request-id` metadata when it sends a usable one
// (1 to 64 characters from [A-Za-z0-9._-]), else one the server makes; the
// server returns it in the `x-request-id` initial metadata of the response.
// Nothing is logged per example: at info, only changes to models and ended
// streams; at debug, every finished call.

#ifndef HALFSPACE_SERVER_LOGGING_H_
#define HALFSPACE_SERVER_LOGGING_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "spdlog/formatter.h"

namespace halfspace {

// Sets the default logger's format: "text" or "json". INVALID_ARGUMENT
// for another.
absl::Status SetLogFormat(absl::string_view format);

// Formats one log line as a JSON object.
std::unique_ptr<spdlog::formatter> MakeJsonFormatter();

// The call's request id (see above); also sets it on the response.
std::string RequestId(grpc::CallbackServerContext& context);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_LOGGING_H_
