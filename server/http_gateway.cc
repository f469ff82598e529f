#include "server/http_gateway.h"

#include <sys/stat.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/base/mutex.h"
#include "google/protobuf/message.h"
#include "grpcpp/client_context.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/client_callback.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/console_files.h"
#include "server/http_routes.h"
#include "server/http_transcoder.h"
#include "server/open_inference_rest.h"
#include "server/peer.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace pb = google::protobuf;
using tcp = net::ip::tcp;
using Stub = grpc::TemplatedGenericStub<pb::Message, pb::Message>;

constexpr uint32_t kMaxHeaderBytes = 16 << 10;

std::chrono::steady_clock::duration Chrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

// The call's deadline a grpc-timeout header asks ("10S", "250m": an
// integer and a unit of H, M, S, m, u or n), as gRPC's own header says it;
// none for an absent or malformed one.
std::optional<absl::Duration> GrpcTimeout(absl::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t amount;
  if (!absl::SimpleAtoi(text.substr(0, text.size() - 1), &amount) ||
      amount < 0) {
    return std::nullopt;
  }
  switch (text.back()) {
    case 'H':
      return absl::Hours(amount);
    case 'M':
      return absl::Minutes(amount);
    case 'S':
      return absl::Seconds(amount);
    case 'm':
      return absl::Milliseconds(amount);
    case 'u':
      return absl::Microseconds(amount);
    case 'n':
      return absl::Nanoseconds(amount);
    default:
      return std::nullopt;
  }
}

// An error answer: the status as JSON, its HTTP code, and the headers it
// asks for.
struct Answer {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // name, value
};

Answer ErrorAnswer(absl::StatusCode code, absl::string_view message) {
  Answer answer;
  answer.status = HttpStatusOf(code);
  answer.body = StatusToJson(code, message);
  if (code == absl::StatusCode::kUnauthenticated) {
    answer.headers.emplace_back("WWW-Authenticate", "Bearer");
  }
  return answer;
}

// The web console (console_files.h), at /console/; "/" and "/console"
// lead there.
constexpr absl::string_view kConsolePrefix = "/console/";

bool IsConsolePath(absl::string_view path) {
  return path == "/" || path == "/console" ||
         absl::StartsWith(path, kConsolePrefix);
}

// A console file, or where the console is. Its pages run only the
// server's own scripts and styles and talk only to the server, and no
// other site may frame them.
Answer ConsoleAnswer(absl::string_view method, absl::string_view path) {
  Answer answer;
  if (method != "GET") {
    answer = ErrorAnswer(absl::StatusCode::kUnimplemented,
                         "the console is read with GET");
    answer.status = 405;
    answer.headers.emplace_back("Allow", "GET");
    return answer;
  }
  if (!absl::StartsWith(path, kConsolePrefix)) {
    answer.status = 302;
    answer.content_type = "text/plain; charset=utf-8";
    answer.headers.emplace_back("Location", kConsolePrefix);
    return answer;
  }
  const ConsoleFile* file = FindConsoleFile(path.substr(kConsolePrefix.size()));
  if (file == nullptr) {
    return ErrorAnswer(absl::StatusCode::kNotFound,
                       absl::StrCat("the console has no file ", path));
  }
  answer.content_type = std::string(file->media_type);
  answer.body = std::string(file->bytes);
  answer.headers.emplace_back("Cache-Control", "no-cache");
  answer.headers.emplace_back("Content-Security-Policy",
                              "default-src 'self'; img-src 'self' data:; "
                              "frame-ancestors 'none'; base-uri 'none'; "
                              "form-action 'none'");
  answer.headers.emplace_back("X-Content-Type-Options", "nosniff");
  answer.headers.emplace_back("Referrer-Policy", "no-referrer");
  return answer;
}

// An answer to a finished call: the response, or its error with the wait
// the server asks a refused caller to keep (Retry-After, in whole
// seconds).
Answer CallAnswer(const grpc::ClientContext& context,
                  const grpc::Status& status, std::string json) {
  if (status.ok()) {
    Answer answer;
    answer.body = std::move(json);
    return answer;
  }
  Answer answer =
      ErrorAnswer(static_cast<absl::StatusCode>(status.error_code()),
                  status.error_message());
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("grpc-retry-pushback-ms");
  int64_t ms = 0;
  if (it != trailers.end() &&
      absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                       &ms) &&
      ms >= 0) {
    answer.headers.emplace_back("Retry-After",
                                std::to_string((ms + 999) / 1000));
  }
  return answer;
}

// The TLS context new connections take: built from the PEM files, and
// built again when they change (checked at most once a reload interval).
class TlsFiles {
 public:
  explicit TlsFiles(const HttpGatewayOptions& o) : options_(o) {}

  absl::Status Load() {
    absl::StatusOr<std::shared_ptr<ssl::context>> built = Build();
    if (!built.ok()) return built.status();
    current_ = *std::move(built);
    stamp_ = Stamp();
    checked_ = absl::Now();
    return absl::OkStatus();
  }

  // Called from the accepting strand only.
  std::shared_ptr<ssl::context> Current() {
    if (absl::Now() - checked_ < options_.tls_reload_interval) return current_;
    checked_ = absl::Now();
    std::string stamp = Stamp();
    if (stamp == stamp_) return current_;
    absl::StatusOr<std::shared_ptr<ssl::context>> built = Build();
    if (!built.ok()) {
      spdlog::warn(
          "HTTP: the TLS files changed but do not load, keeping the "
          "previous ones: {}",
          std::string(built.status().message()));
    } else {
      spdlog::info("HTTP: TLS certificates reloaded");
      current_ = *std::move(built);
    }
    stamp_ = std::move(stamp);
    return current_;
  }

 private:
  std::string Stamp() const {
    std::string stamp;
    for (const std::string* f :
         {&options_.cert_file, &options_.key_file, &options_.client_ca_file}) {
      struct stat st = {};
      if (!f->empty() && stat(f->c_str(), &st) == 0) {
        absl::StrAppend(&stamp, st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":",
                        st.st_size, ":", st.st_ino, ";");
      }
    }
    return stamp;
  }

  absl::StatusOr<std::shared_ptr<ssl::context>> Build() const {
    try {
      auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
      context->set_options(ssl::context::default_workarounds |
                           ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                           ssl::context::single_dh_use);
      context->use_certificate_chain_file(options_.cert_file);
      context->use_private_key_file(options_.key_file, ssl::context::pem);
      if (!options_.client_ca_file.empty()) {
        context->load_verify_file(options_.client_ca_file);
        context->set_verify_mode(ssl::verify_peer |
                                 ssl::verify_fail_if_no_peer_cert);
      }
      return context;
    } catch (const boost::system::system_error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS files for --http_listen: ", e.what()));
    }
  }

  const HttpGatewayOptions options_;
  std::shared_ptr<ssl::context> current_;
  std::string stamp_;
  absl::Time checked_;
};

// A streaming call (any of the three kinds, called as bidirectional):
// writes its requests, and hands each response, as JSON, to `sink` on a
// gRPC thread; the next response is read only once Resume is called, so a
// client that reads slowly slows the call down instead of piling up its
// responses. `sink` gets the final status last.
class StreamCall final
    : public grpc::ClientBidiReactor<pb::Message, pb::Message> {
 public:
  using Sink =
      std::function<void(std::string json, std::optional<grpc::Status> done)>;

  StreamCall(std::vector<std::unique_ptr<pb::Message>> requests,
             std::unique_ptr<pb::Message> response, Sink sink)
      : requests_(std::move(requests)),
        response_(std::move(response)),
        sink_(std::move(sink)) {}

  grpc::ClientContext& context() { return context_; }

  void Start(Stub& stub, const std::string& method,
             std::shared_ptr<StreamCall> self) {
    self_ = std::move(self);
    stub.PrepareBidiStreamingCall(&context_, method, grpc::StubOptions(), this);
    AddHold();
    {
      MutexLock lock(mu_);
      read_pending_ = true;
    }
    StartRead(response_.get());
    WriteNext();
    StartCall();
  }

  // Reads the next response (after the last one was written out), or,
  // with `cancel`, cancels the call and reads whatever is left.
  void Resume(bool cancel) {
    if (cancel) context_.TryCancel();
    {
      MutexLock lock(mu_);
      if (read_pending_ || reads_done_) return;
      read_pending_ = true;
    }
    // Not under the lock: gRPC may run OnReadDone before StartRead returns.
    StartRead(response_.get());
  }

 private:
  void WriteNext() {
    if (next_ + 1 < requests_.size()) {
      StartWrite(requests_[next_].get());
    } else {
      StartWriteLast(requests_[next_].get(), grpc::WriteOptions());
    }
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return;  // the call ended; OnDone says how
    if (++next_ < requests_.size()) WriteNext();
  }

  void OnReadDone(bool ok) override {
    std::string json;
    if (ok) json = MessageToJson(*response_);
    {
      MutexLock lock(mu_);
      read_pending_ = false;
      reads_done_ = !ok;
    }
    if (ok) {
      sink_(std::move(json), std::nullopt);
    } else {
      RemoveHold();
    }
  }

  void OnDone(const grpc::Status& status) override {
    Sink sink = std::move(sink_);
    std::shared_ptr<StreamCall> self = std::move(self_);
    sink("", status);
  }

  grpc::ClientContext context_;
  const std::vector<std::unique_ptr<pb::Message>> requests_;
  size_t next_ = 0;
  const std::unique_ptr<pb::Message> response_;
  Sink sink_;
  std::shared_ptr<StreamCall> self_;  // until OnDone
  Mutex mu_;
  bool read_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
};

// A unary call's parts, alive until its completion.
struct UnaryCall {
  grpc::ClientContext context;
  std::unique_ptr<pb::Message> request;
  std::unique_ptr<pb::Message> response;
};

}  // namespace

class HttpGateway::Impl {
 public:
  class ConnectionBase {
   public:
    virtual ~ConnectionBase() = default;
    virtual void Drain() = 0;
    virtual void Close() = 0;
  };
  template <class Stream>
  class Connection;

  Impl(const HttpGatewayOptions& options,
       std::shared_ptr<grpc::Channel> channel, Metrics* metrics,
       HttpRoutes routes)
      : options_(options),
        stub_(std::move(channel)),
        metrics_(metrics),
        routes_(std::move(routes)),
        work_(net::make_work_guard(io_)),
        acceptor_(net::make_strand(io_)) {}

  absl::Status Listen();
  void Accept();
  void Drain();
  void Stop(absl::Duration grace);
  int port() const { return port_; }

  const HttpGatewayOptions options_;
  Stub stub_;
  Metrics* const metrics_;
  const HttpRoutes routes_;
  std::unique_ptr<TlsFiles> tls_;
  std::atomic<int64_t> connections_{0};
  std::atomic<int64_t> calls_{0};  // calls in flight
  std::atomic<bool> draining_{false};
  Mutex mu_;
  std::vector<std::weak_ptr<ConnectionBase>> live_ ABSL_GUARDED_BY(mu_);
  bool stopped_ = false;
  int port_ = 0;
  // Last, so that handlers still queued are destroyed first.
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
};

// One client connection: reads a request, calls, writes the answer, and
// again while the client keeps it alive. Every handler runs on the
// connection's strand.
template <class Stream>
class HttpGateway::Impl::Connection final
    : public ConnectionBase,
      public std::enable_shared_from_this<Connection<Stream>> {
 public:
  Connection(Impl* gateway, std::shared_ptr<ssl::context> tls, Stream stream,
             std::string client, bool over_limit)
      : gateway_(gateway),
        tls_(std::move(tls)),
        stream_(std::move(stream)),
        client_(std::move(client)),
        over_limit_(over_limit) {}

  ~Connection() override { gateway_->connections_.fetch_sub(1); }

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(Chrono(gateway_->options_.timeout));
      stream_.async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) return self->CloseNow();
            self->Begin();
          });
    } else {
      Begin();
    }
  }

  void Drain() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      self->draining_ = true;
      if (self->state_ == kWaiting) self->CloseNow();
    });
  }

  void Close() override {
    net::post(stream_.get_executor(),
              [self = this->shared_from_this()] { self->CloseNow(); });
  }

 private:
  static constexpr bool kTls = !std::is_same<Stream, beast::tcp_stream>::value;
  enum State { kWaiting, kReading, kCalling, kWriting, kClosed };

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if (over_limit_) {
      keep_alive_ = false;
      return Write(
          ErrorAnswer(absl::StatusCode::kUnavailable,
                      absl::StrCat("the server has --http_max_connections=",
                                   gateway_->options_.max_connections,
                                   " connections open; retry later")));
    }
    ReadHeader();
  }

  void ReadHeader() {
    state_ = kWaiting;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(gateway_->options_.max_body_bytes);
    Lowest().expires_after(Chrono(gateway_->options_.timeout));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) {
          self->OnHeader(ec);
        });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return ReadFailed(ec);
    state_ = kReading;
    auto& request = parser_->get();
    const auto length = parser_->content_length();
    if (length && *length > gateway_->options_.max_body_bytes) {
      return BodyTooLarge();
    }
    if (beast::iequals(request[http::field::expect], "100-continue")) {
      auto to_continue = std::make_shared<http::response<http::empty_body>>(
          http::status::continue_, request.version());
      return http::async_write(stream_, *to_continue,
                               [self = this->shared_from_this(), to_continue](
                                   beast::error_code e, size_t) {
                                 if (e) return self->CloseNow();
                                 self->ReadBody();
                               });
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->ReadFailed(ec);
          self->Lowest().expires_never();
          self->Serve(self->parser_->release());
        });
  }

  void BodyTooLarge() {
    keep_alive_ = false;
    Answer answer = ErrorAnswer(
        absl::StatusCode::kResourceExhausted,
        absl::StrCat("the body is larger than --http_max_body_bytes=",
                     gateway_->options_.max_body_bytes,
                     "; send less per request"));
    answer.status = 413;
    Write(std::move(answer));
  }

  void ReadFailed(beast::error_code ec) {
    keep_alive_ = false;
    if (ec == http::error::body_limit) return BodyTooLarge();
    if (ec == http::error::header_limit) {
      Answer answer = ErrorAnswer(absl::StatusCode::kInvalidArgument,
                                  absl::StrCat("the request's headers pass ",
                                               kMaxHeaderBytes, " bytes"));
      answer.status = 431;
      return Write(std::move(answer));
    }
    // A request not whole within the timeout: the stream has closed the
    // socket already; the client sees the connection end.
    if (ec == beast::error::timeout) return CloseNow();
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || state_ == kClosed) {
      return CloseNow();
    }
    Write(ErrorAnswer(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("the request is not HTTP/1.1: ", ec.message())));
  }

  void Serve(http::request<http::string_body> request) {
    state_ = kCalling;
    keep_alive_ = request.keep_alive() && !draining_;
    const absl::string_view target(request.target().data(),
                                   request.target().size());
    const size_t question = target.find('?');
    const absl::string_view path = target.substr(0, question);
    const absl::string_view query = question == absl::string_view::npos
                                        ? absl::string_view()
                                        : target.substr(question + 1);
    const absl::string_view method(request.method_string().data(),
                                   request.method_string().size());
    if (IsRestPath(path)) return ServeRest(request, method, path);
    if (IsConsolePath(path)) return Write(ConsoleAnswer(method, path));
    absl::StatusOr<HttpMatch> match = gateway_->routes_.Match(method, path);
    if (!match.ok()) {
      Answer answer =
          ErrorAnswer(match.status().code(), match.status().message());
      if (match.status().code() == absl::StatusCode::kUnimplemented) {
        answer.status = 405;
        answer.headers.emplace_back(
            "Allow", absl::StrJoin(gateway_->routes_.MethodsFor(path), ", "));
      }
      return Write(std::move(answer));
    }
    const pb::MethodDescriptor& rpc = *match->route->method;
    const pb::Message* input =
        pb::MessageFactory::generated_factory()->GetPrototype(rpc.input_type());
    const pb::Message* output =
        pb::MessageFactory::generated_factory()->GetPrototype(
            rpc.output_type());
    const std::string full_method =
        absl::StrCat("/", rpc.service()->full_name(), "/", rpc.name());
    const std::string& body = request.body();
    server_streaming_ = rpc.server_streaming();
    if (!rpc.client_streaming() && !rpc.server_streaming()) {
      auto call = std::make_shared<UnaryCall>();
      call->request.reset(input->New());
      call->response.reset(output->New());
      if (absl::Status s =
              DecodeHttpRequest(*match, query, body, call->request.get());
          !s.ok()) {
        return Write(ErrorAnswer(s.code(), s.message()));
      }
      SetUp(request, call->context);
      return CallUnary(
          std::move(call), full_method,
          [](const grpc::ClientContext& context, const grpc::Status& status,
             const pb::Message& response) {
            return CallAnswer(
                context, status,
                status.ok() ? MessageToJson(response) : std::string());
          });
    }
    absl::StatusOr<std::vector<std::unique_ptr<pb::Message>>> requests =
        DecodeHttpStream(*match, query, body, *input,
                         gateway_->options_.max_stream_requests);
    if (!requests.ok()) {
      return Write(
          ErrorAnswer(requests.status().code(), requests.status().message()));
    }
    auto executor = stream_.get_executor();
    stream_call_ = std::make_shared<StreamCall>(
        *std::move(requests), std::unique_ptr<pb::Message>(output->New()),
        [self = this->shared_from_this(), executor](
            std::string json, std::optional<grpc::Status> done) {
          net::post(executor, [self, json = std::move(json), done]() mutable {
            self->OnStreamEvent(std::move(json), std::move(done));
          });
        });
    SetUp(request, stream_call_->context());
    gateway_->calls_.fetch_add(1);
    stream_call_->Start(gateway_->stub_, full_method, stream_call_);
  }

  // The answer a unary call's outcome makes (on a gRPC thread).
  using Encoder = std::function<Answer(
      const grpc::ClientContext&, const grpc::Status&, const pb::Message&)>;

  void CallUnary(std::shared_ptr<UnaryCall> call,
                 const std::string& full_method, Encoder encode) {
    unary_ = call;
    gateway_->calls_.fetch_add(1);
    gateway_->stub_.UnaryCall(
        &call->context, full_method, grpc::StubOptions(), call->request.get(),
        call->response.get(),
        [self = this->shared_from_this(), call,
         encode = std::move(encode)](grpc::Status status) {
          Answer answer = encode(call->context, status, *call->response);
          net::post(self->stream_.get_executor(),
                    [self, answer = std::move(answer)]() mutable {
                      self->unary_.reset();
                      self->Write(std::move(answer));
                      self->gateway_->calls_.fetch_sub(1);
                    });
        });
  }

  // The Open Inference Protocol's REST form (open_inference_rest.h),
  // called as its gRPC service.
  void ServeRest(const http::request<http::string_body>& request,
                 absl::string_view method, absl::string_view path) {
    absl::StatusOr<RestCall> rest =
        DecodeRestRequest(method, path, request.body());
    if (!rest.ok()) {
      Answer answer = ErrorAnswer(rest.status().code(), "");
      answer.body = RestError(rest.status().message());
      if (rest.status().code() == absl::StatusCode::kUnimplemented) {
        answer.status = 405;
      }
      return Write(std::move(answer));
    }
    const pb::Descriptor& output =
        *inference::ModelInferRequest::descriptor()
             ->file()
             ->FindServiceByName("GRPCInferenceService")
             ->FindMethodByName(rest->rpc)
             ->output_type();
    auto call = std::make_shared<UnaryCall>();
    call->request = std::move(rest->request);
    call->response.reset(
        pb::MessageFactory::generated_factory()->GetPrototype(&output)->New());
    SetUp(request, call->context);
    const bool by_answer = rest->status_by_answer;
    CallUnary(
        std::move(call),
        absl::StrCat("/inference.GRPCInferenceService/", rest->rpc),
        [by_answer](const grpc::ClientContext& context,
                    const grpc::Status& status, const pb::Message& response) {
          Answer answer = CallAnswer(context, status, "");
          if (!status.ok()) {
            answer.body = RestError(status.error_message());
            return answer;
          }
          bool ok = true;
          answer.body = EncodeRestResponse(response, &ok);
          if (by_answer && !ok) answer.status = 400;
          return answer;
        });
  }

  // The call's token, client address and deadline.
  void SetUp(const http::request<http::string_body>& request,
             grpc::ClientContext& context) {
    auto authorization = request.find(http::field::authorization);
    if (authorization != request.end()) {
      context.AddMetadata("authorization", std::string(authorization->value()));
    }
    context.AddMetadata(kHttpClientMetadata,
                        absl::StrCat(HttpGatewaySecret(), " ", client_));
    auto timeout = request.find("grpc-timeout");
    if (timeout != request.end()) {
      std::optional<absl::Duration> d = GrpcTimeout(
          absl::string_view(timeout->value().data(), timeout->value().size()));
      if (d) context.set_deadline(absl::ToChronoTime(absl::Now() + *d));
    }
  }

  // A response of a streaming call, or (with `done`) its end.
  void OnStreamEvent(std::string json, std::optional<grpc::Status> done) {
    if (done) {
      gateway_->calls_.fetch_sub(1);
      std::shared_ptr<StreamCall> call = std::move(stream_call_);
      if (state_ == kClosed) return;
      if (!server_streaming_ || !headers_sent_) {
        if (done->ok() && server_streaming_) {
          // No response at all: an empty stream.
          Answer answer;
          answer.content_type = "application/x-ndjson";
          return Write(std::move(answer));
        }
        return Write(CallAnswer(call->context(), *done, std::move(single_)));
      }
      std::string last;
      if (!done->ok()) {
        last = absl::StrCat(
            "{\"error\":",
            StatusToJson(static_cast<absl::StatusCode>(done->error_code()),
                         done->error_message()),
            "}\n");
      }
      return WriteChunk(std::move(last), /*last=*/true);
    }
    if (state_ == kClosed) return stream_call_->Resume(/*cancel=*/true);
    if (!server_streaming_) {
      single_ = std::move(json);
      return stream_call_->Resume(false);
    }
    WriteChunk(absl::StrCat("{\"result\":", json, "}\n"), /*last=*/false);
  }

  void WriteChunk(std::string text, bool last) {
    state_ = kWriting;
    auto self = this->shared_from_this();
    auto data = std::make_shared<std::string>(std::move(text));
    auto after = [self, data, last](beast::error_code ec, size_t) {
      if (ec) return self->CloseNow();  // which cancels the call
      if (last) return self->Written();
      if (self->stream_call_) self->stream_call_->Resume(false);
    };
    auto write_body = [self, data, last, after] {
      self->Lowest().expires_after(Chrono(self->gateway_->options_.timeout));
      if (last) {
        if (data->empty()) {
          return net::async_write(self->stream_, http::make_chunk_last(),
                                  after);
        }
        // The error line, then the end, in one write.
        auto both = std::make_shared<std::string>(*data);
        return net::async_write(
            self->stream_, http::make_chunk(net::buffer(*both)),
            [self, both, after](beast::error_code ec, size_t n) {
              if (ec) return after(ec, n);
              net::async_write(self->stream_, http::make_chunk_last(), after);
            });
      }
      net::async_write(self->stream_, http::make_chunk(net::buffer(*data)),
                       after);
    };
    if (headers_sent_) return write_body();
    headers_sent_ = true;
    gateway_->metrics_->RecordHttpResponse(200);
    header_.emplace(http::status::ok, 11);
    header_->set(http::field::content_type, "application/x-ndjson");
    header_->set(http::field::server, "halfspace");
    header_->chunked(true);
    header_->keep_alive(keep_alive_);
    serializer_.emplace(*header_);
    Lowest().expires_after(Chrono(gateway_->options_.timeout));
    http::async_write_header(
        stream_, *serializer_,
        [self, write_body, after](beast::error_code ec, size_t n) {
          if (ec) return after(ec, n);
          write_body();
        });
  }

  void Write(Answer answer) {
    if (state_ == kClosed) return;
    state_ = kWriting;
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(answer.status), 11);
    response->set(http::field::content_type, answer.content_type);
    response->set(http::field::server, "halfspace");
    for (auto& [field, value] : answer.headers) response->set(field, value);
    response->body() = std::move(answer.body);
    if (!response->body().empty() &&
        answer.content_type == "application/json") {
      response->body() += '\n';
    }
    response->keep_alive(keep_alive_);
    response->prepare_payload();
    Lowest().expires_after(Chrono(gateway_->options_.timeout));
    gateway_->metrics_->RecordHttpResponse(answer.status);
    http::async_write(stream_, *response,
                      [self = this->shared_from_this(), response](
                          beast::error_code ec, size_t) {
                        if (ec) return self->CloseNow();
                        self->Written();
                      });
  }

  void Written() {
    header_.reset();
    serializer_.reset();
    headers_sent_ = false;
    single_.clear();
    if (!keep_alive_ || draining_ || state_ == kClosed) return CloseNow();
    ReadHeader();
  }

  void CloseNow() {
    if (state_ == kClosed) return;
    state_ = kClosed;
    if (unary_) unary_->context.TryCancel();
    if (stream_call_) stream_call_->Resume(/*cancel=*/true);
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().close();
  }

  Impl* const gateway_;
  const std::shared_ptr<ssl::context> tls_;  // outlives stream_
  Stream stream_;
  const std::string client_;
  const bool over_limit_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  State state_ = kWaiting;
  bool keep_alive_ = true;
  bool draining_ = false;
  bool server_streaming_ = false;
  bool headers_sent_ = false;
  std::string single_;  // a client-streaming call's response
  std::optional<http::response<http::empty_body>> header_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::shared_ptr<UnaryCall> unary_;
  std::shared_ptr<StreamCall> stream_call_;
};

absl::Status HttpGateway::Impl::Listen() {
  const std::string& address = options_.address;
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_listen=", address,
        ": give host:port with a port from 0 to 65535, e.g. 127.0.0.1:8080"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto found = resolver.resolve(
      host, std::to_string(port),
      tcp::resolver::numeric_service | tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_listen=", address, ": host \"", host, "\": ", ec.message()));
  }
  const tcp::endpoint endpoint = found.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on --http_listen=", address, ": ", ec.message()));
  }
  port_ = acceptor_.local_endpoint().port();
  if (!options_.cert_file.empty()) {
    tls_ = std::make_unique<TlsFiles>(options_);
    if (absl::Status s = tls_->Load(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void HttpGateway::Impl::Accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec,
                                                       tcp::socket socket) {
    if (ec == net::error::operation_aborted || draining_) return;
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      const tcp::endpoint peer = socket.remote_endpoint(ignored);
      const std::string client =
          peer.address().is_v4()
              ? absl::StrCat("ipv4:", peer.address().to_string())
              : absl::StrCat("ipv6:[", peer.address().to_string(), "]");
      const bool over_limit =
          connections_.fetch_add(1) >= options_.max_connections;
      std::shared_ptr<ConnectionBase> connection;
      if (tls_ != nullptr) {
        std::shared_ptr<ssl::context> context = tls_->Current();
        auto c =
            std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(
                this, context,
                beast::ssl_stream<beast::tcp_stream>(
                    beast::tcp_stream(std::move(socket)), *context),
                client, over_limit);
        c->Start();
        connection = c;
      } else {
        auto c = std::make_shared<Connection<beast::tcp_stream>>(
            this, nullptr, beast::tcp_stream(std::move(socket)), client,
            over_limit);
        c->Start();
        connection = c;
      }
      MutexLock lock(mu_);
      live_.erase(std::remove_if(live_.begin(), live_.end(),
                                 [](const auto& w) { return w.expired(); }),
                  live_.end());
      live_.push_back(connection);
    }
    Accept();
  });
}

void HttpGateway::Impl::Drain() {
  if (draining_.exchange(true)) return;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  MutexLock lock(mu_);
  for (const auto& weak : live_) {
    if (auto c = weak.lock()) c->Drain();
  }
}

void HttpGateway::Impl::Stop(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  Drain();
  const absl::Time until = absl::Now() + grace;
  while (connections_.load() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  {
    MutexLock lock(mu_);
    for (const auto& weak : live_) {
      if (auto c = weak.lock()) c->Close();
    }
  }
  // Cancelled calls finish promptly; their completions need the loop.
  const absl::Time calls_until = absl::Now() + absl::Seconds(10);
  while (calls_.load() > 0 && absl::Now() < calls_until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  work_.reset();
  io_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
    Metrics* metrics) {
  const pb::ServiceDescriptor* service =
      v1::TrainRequest::descriptor()->file()->FindServiceByName(
          "HalfspaceService");
  absl::StatusOr<HttpRoutes> routes = HttpRoutes::FromService(*service);
  if (!routes.ok()) return routes.status();
  auto impl = std::make_unique<Impl>(options, std::move(channel), metrics,
                                     *std::move(routes));
  if (absl::Status s = impl->Listen(); !s.ok()) return s;
  impl->Accept();
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    impl->threads_.emplace_back([io = &impl->io_] { io->run(); });
  }
  return std::unique_ptr<HttpGateway>(new HttpGateway(std::move(impl)));
}

HttpGateway::HttpGateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpGateway::~HttpGateway() { Stop(absl::ZeroDuration()); }

int HttpGateway::port() const { return impl_->port(); }

void HttpGateway::Drain() { impl_->Drain(); }

void HttpGateway::Stop(absl::Duration grace) { impl_->Stop(grace); }

}  // namespace halfspace
