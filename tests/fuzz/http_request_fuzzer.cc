// HTTP requests as the JSON-over-HTTP gateway decodes them: the bytes
// framed by Beast's parser with the gateway's bounds (or, when they are not
// HTTP, read as "METHOD PATH\nBODY", to reach the decoding behind it), the
// path matched against the API's HTTP rules, and the body, path and query
// transcoded to the RPC's request message (newline-delimited for a
// streaming RPC), or, under /v2, to the Open Inference Protocol's request
// (its tensors' data flat or nested). A request that decodes prints as
// JSON that decodes to the same message; every error is an INVALID_ARGUMENT,
// NOT_FOUND or UNIMPLEMENTED status with a message.

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/http_routes.h"
#include "server/http_transcoder.h"
#include "server/open_inference_rest.h"

namespace halfspace {
namespace {

namespace pb = google::protobuf;
namespace http = boost::beast::http;

void Check(bool invariant) {
  if (!invariant) __builtin_trap();
}

const HttpRoutes& Routes() {
  static const HttpRoutes* routes = [] {
    // From a message's file, which links the file's descriptors in (the
    // generated pool alone finds only files something else linked).
    const pb::ServiceDescriptor* service =
        v1::TrainRequest::descriptor()->file()->FindServiceByName(
            "HalfspaceService");
    Check(service != nullptr);
    absl::StatusOr<HttpRoutes> r = HttpRoutes::FromService(*service);
    Check(r.ok());
    return new HttpRoutes(*std::move(r));
  }();
  return *routes;
}

void CheckError(const absl::Status& status) {
  Check(!status.ok() && !status.message().empty());
  Check(status.code() == absl::StatusCode::kInvalidArgument ||
        status.code() == absl::StatusCode::kNotFound ||
        status.code() == absl::StatusCode::kUnimplemented);
}

// The JSON of `message` decodes back to it.
void CheckRoundTrip(const HttpMatch& match, const pb::Message& message) {
  std::unique_ptr<pb::Message> again(message.New());
  HttpMatch whole = match;
  whole.bindings.clear();
  HttpRoute body_route = *match.route;
  body_route.body = "*";
  whole.route = &body_route;
  Check(DecodeHttpRequest(whole, "", MessageToJson(message), again.get()).ok());
  Check(message.SerializeAsString() == again->SerializeAsString());
}

void Decode(absl::string_view method, absl::string_view target,
            absl::string_view body) {
  const size_t question = target.find('?');
  const absl::string_view path = target.substr(0, question);
  const absl::string_view query = question == absl::string_view::npos
                                      ? absl::string_view()
                                      : target.substr(question + 1);
  if (IsRestPath(path)) {  // the Open Inference Protocol's
    absl::StatusOr<RestCall> call = DecodeRestRequest(method, path, body);
    if (!call.ok()) return CheckError(call.status());
    Check(call->request != nullptr && !call->rpc.empty());
    return;
  }
  absl::StatusOr<HttpMatch> match = Routes().Match(method, path);
  if (!match.ok()) return CheckError(match.status());
  Check(match->route->http_method == method);
  const pb::MethodDescriptor& rpc = *match->route->method;
  const pb::Message* input =
      pb::MessageFactory::generated_factory()->GetPrototype(rpc.input_type());
  if (!rpc.client_streaming()) {
    std::unique_ptr<pb::Message> request(input->New());
    const absl::Status s =
        DecodeHttpRequest(*match, query, body, request.get());
    if (!s.ok()) return CheckError(s);
    CheckRoundTrip(*match, *request);
    return;
  }
  auto requests = DecodeHttpStream(*match, query, body, *input, 64);
  if (!requests.ok()) return CheckError(requests.status());
  Check(!requests->empty() && requests->size() <= 64);
  for (const auto& request : *requests) CheckRoundTrip(*match, *request);
}

}  // namespace
}  // namespace halfspace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 << 10);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && parser.is_done()) {
    const auto& request = parser.get();
    Decode(absl::string_view(request.method_string().data(),
                             request.method_string().size()),
           absl::string_view(request.target().data(), request.target().size()),
           request.body());
    return 0;
  }
  // Not HTTP: "METHOD PATH\nBODY".
  const size_t space = input.find(' ');
  const size_t newline = input.find('\n');
  if (space == absl::string_view::npos || newline == absl::string_view::npos ||
      newline < space) {
    return 0;
  }
  Decode(input.substr(0, space), input.substr(space + 1, newline - space - 1),
         input.substr(newline + 1));
  return 0;
}
