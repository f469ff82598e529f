// JSON over HTTP to and from the halfspace.v1 messages, in protobuf's JSON
// mapping, as Google's HTTP rules say (see http_routes.h):
//
// - The request message is the body (the route's `body`: "*" the whole
//   message, a field name that field, none: no body), then each path
//   variable sets its field, then each query parameter (`a.b=v`, repeated
//   for a repeated field) sets its field, where the body does not cover
//   the whole message. A path variable naming a field the body set to
//   another value is refused: nothing is silently overwritten.
// - A client-streaming RPC's body is newline-delimited JSON: a request
//   message a line (blank lines skipped), each bound as above.
// - A response is the message in JSON as the mapping writes it: a field at
//   its default (a score of 0, an empty list) is left out, as proto3 has
//   no way to tell it from one not set (a name-only view of a model would
//   otherwise claim a dimension of 0).
// - An error is google.rpc.Status in JSON ({"code": 5, "message": ...}),
//   with the HTTP status gRPC's HTTP mapping gives its code.
//
// Everything here is a pure function of its input: the HTTP decoding
// fuzzer runs it on arbitrary bytes.

#ifndef HALFSPACE_SERVER_HTTP_TRANSCODER_H_
#define HALFSPACE_SERVER_HTTP_TRANSCODER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "server/http_routes.h"

namespace halfspace {

// Fills `request` (empty, of the route's input type) from the body, the
// path's bindings and the query string (without '?'): INVALID_ARGUMENT
// naming what is wrong (JSON that is not the message, an unknown field, a
// value of the wrong type, a conflict between path and body, a query
// parameter where the body is the whole message).
absl::Status DecodeHttpRequest(const HttpMatch& match, absl::string_view query,
                               absl::string_view body,
                               google::protobuf::Message* request);

// A client-streaming route's body, one request a line, each decoded as
// DecodeHttpRequest does; INVALID_ARGUMENT naming the line (counted from 1)
// for the first that does not decode, or when there are more than
// `max_messages` (nothing is sent then). `prototype` is of the input type.
absl::StatusOr<std::vector<std::unique_ptr<google::protobuf::Message>>>
DecodeHttpStream(const HttpMatch& match, absl::string_view query,
                 absl::string_view body,
                 const google::protobuf::Message& prototype,
                 size_t max_messages);

// `message` in protobuf's JSON mapping (lowerCamelCase names, defaults
// left out, 64-bit integers as strings).
std::string MessageToJson(const google::protobuf::Message& message);

// The HTTP status gRPC's HTTP mapping gives `code` (NOT_FOUND 404,
// RESOURCE_EXHAUSTED 429, UNAVAILABLE 503, ...).
int HttpStatusOf(absl::StatusCode code);

// google.rpc.Status in JSON: `code` and `message`.
std::string StatusToJson(absl::StatusCode code, absl::string_view message);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_HTTP_TRANSCODER_H_
