// JSON over HTTP/1.1 for the whole halfspace.v1 API (--http_listen): each
// request is routed by the service's `google.api.http` rules
// (http_routes.h), transcoded to its RPC's message (http_transcoder.h) and
// called through the server's in-process gRPC channel, so it passes the
// same gate, tokens, rate limits, limits and metrics as a gRPC call: the
// `Authorization: Bearer` header is the call's token, and the HTTP
// client's address its client address.
//
// Streaming RPCs: the body is newline-delimited JSON, a request a line;
// a server-streaming RPC answers `application/x-ndjson`, a line
// {"result": ...} per response as it comes (chunked), and a last line
// {"error": {...}} if the call fails after its first response (before it,
// the error is the whole answer, with its HTTP status).
//
// Bounds: a request's headers (16 KiB) and body (max_body_bytes) are
// bounded before they are read: a Content-Length past the limit is
// answered 413 at once, and a body that grows past it is cut off. A
// request must arrive whole within `timeout` of the connection's last
// answer (or of its opening), and each write of an answer must finish
// within it: a client that sends or reads one byte a second is
// disconnected, and holds no thread meanwhile (every connection is served
// by asynchronous I/O on `threads` threads). At most `max_connections`
// are open; past them a connection is answered 503 and closed.
//
// Answers: the response message in JSON; errors as google.rpc.Status in
// JSON with the HTTP status gRPC's mapping gives (400, 401, 403, 404, 409,
// 429 with Retry-After, 503, ...); a path no rule has is 404, a method the
// path does not take 405 with Allow.
//
// TLS: with the server's certificate (and client CA, for mutual TLS), the
// same files gRPC uses, re-read when they change.

#ifndef HALFSPACE_SERVER_HTTP_GATEWAY_H_
#define HALFSPACE_SERVER_HTTP_GATEWAY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "server/metrics.h"

namespace halfspace {

struct HttpGatewayOptions {
  // host:port; port 0 picks a free one (see HttpGateway::port).
  std::string address;
  size_t max_body_bytes = size_t{16} << 20;
  // Lines of a streaming RPC's body.
  size_t max_stream_requests = 100000;
  absl::Duration timeout = absl::Seconds(30);
  int64_t max_connections = 1024;
  int threads = 2;
  // PEM files; no cert_file: plain HTTP.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  absl::Duration tls_reload_interval = absl::Minutes(1);
};

class HttpGateway {
 public:
  // Listens and serves; INVALID_ARGUMENT for an address that does not
  // parse or TLS files that do not load, UNAVAILABLE when the address
  // cannot be bound. REQUIRES: `metrics` outlives the gateway.
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(
      const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
      Metrics* metrics);

  HttpGateway(const HttpGateway&) = delete;
  HttpGateway& operator=(const HttpGateway&) = delete;
  ~HttpGateway();  // Stop(zero)

  int port() const;

  // Stops accepting and closes the connections waiting for a request;
  // the others close once their answer is written.
  void Drain();

  // Drains, gives the answers being written up to `grace`, then closes
  // every connection (cancelling their calls) and stops. Idempotent.
  void Stop(absl::Duration grace);

 private:
  class Impl;
  explicit HttpGateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_HTTP_GATEWAY_H_
