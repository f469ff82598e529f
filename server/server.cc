#include "server/server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/base/files.h"
#include "core/base/quoted.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "grpcpp/server_builder.h"
#include "server/replication.h"
#include "server/train_batch.h"
#include "spdlog/spdlog.h"

namespace halfspace {

absl::StatusOr<Durability> ParseDurability(absl::string_view text) {
  if (text == "sync") return Durability::kSync;
  if (text == "write") return Durability::kWrite;
  if (text == "snapshot") return Durability::kSnapshot;
  return absl::InvalidArgumentError(absl::StrCat(
      "durability ", Quoted(text), " is not one of sync, write, snapshot"));
}

namespace {

bool Secured(const ServerOptions& o) {
  return !o.tls.cert_file.empty() || !o.tokens_file.empty();
}

// Whether `address` (host:port) is reachable from this machine only.
bool IsLoopback(absl::string_view address) {
  const absl::string_view host = address.substr(0, address.rfind(':'));
  return absl::StartsWith(host, "127.") || host == "localhost" ||
         host == "[::1]" || host == "::1" || absl::StartsWith(address, "unix:");
}

// OK when `path` names a file this process can read.
absl::Status Readable(absl::string_view flag, const std::string& path) {
  if (access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", path, ": ", ErrnoError("cannot read", path).message()));
}

// Leaves gRPC's reflection plugin out of a server.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const auto& plugin) {
                                    return plugin->name() ==
                                           "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

absl::Status ValidateTls(const TlsOptions& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key: give both (the certificate chain and its "
        "key) or neither");
  }
  if (!tls.client_ca_file.empty() && tls.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key: mutual TLS is TLS "
        "first");
  }
  if (tls.reload_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_reload_interval=", absl::FormatDuration(tls.reload_interval),
        ": must be at least 1s"));
  }
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"tls_cert", tls.cert_file},
        {"tls_key", tls.key_file},
        {"tls_client_ca", tls.client_ca_file}}) {
    if (path.empty()) continue;
    if (absl::Status s = Readable(flag, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Whether something accepts connections on the Unix socket at `path`.
bool Answers(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return false;
  path.copy(address.sun_path, path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool answers = connect(fd, reinterpret_cast<const sockaddr*>(&address),
                               sizeof(address)) == 0;
  close(fd);
  return answers;
}

}  // namespace

std::string ListenAddress(const ServerOptions& options) {
  if (!options.listen_address.empty()) return options.listen_address;
  return Secured(options) ? "0.0.0.0:50051" : "127.0.0.1:50051";
}

namespace {

// INVALID_ARGUMENT: "--<flag>=<value>: <rule>".
template <typename Value>
absl::Status InvalidFlag(absl::string_view flag, const Value& value,
                         absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", rule));
}

// host:port, or unix:PATH of a path a socket address holds.
absl::Status ValidateListen(const std::string& listen) {
  constexpr size_t kMaxPath = sizeof(sockaddr_un{}.sun_path) - 1;
  if (absl::StartsWith(listen, "unix:")) {
    if (listen.size() == 5 || listen.size() - 5 > kMaxPath) {
      return InvalidFlag(
          "listen", listen,
          absl::StrCat("give unix:PATH with a path of 1 to ", kMaxPath,
                       " bytes, e.g. unix:/run/halfspace.sock"));
    }
    return absl::OkStatus();
  }
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return InvalidFlag("listen", listen,
                       "give host:port with a port from 0 to 65535, e.g. "
                       "0.0.0.0:50051, or unix:PATH for a Unix-domain socket");
  }
  return absl::OkStatus();
}

// Durations that may be 0 but not negative.
absl::Status ValidateDurations(const ServerOptions& o) {
  const std::tuple<const char*, absl::Duration, const char*> durations[] = {
      {"max_connection_age", o.max_connection_age,
       "must be 0 (never) or positive"},
      {"snapshot_interval", o.snapshot_interval, "must be 0 (off) or positive"},
      {"drain_timeout", o.drain_timeout, "must be 0 or positive"},
  };
  for (const auto& [flag, value, rule] : durations) {
    if (value < absl::ZeroDuration()) {
      return InvalidFlag(flag, absl::FormatDuration(value), rule);
    }
  }
  return absl::OkStatus();
}

// Sizes and counts: each at least its least, and the limits consistent.
absl::Status ValidateSizes(const ServerOptions& o) {
  const Limits& l = o.limits;
  const std::tuple<const char*, int64_t, int64_t> at_least[] = {
      {"max_message_bytes", o.max_message_bytes, 1024},
      {"checkpoint_bytes", o.checkpoint_bytes, 0},
      {"log_segment_bytes", o.log_segment_bytes, 4096},
      {"max_model_bytes", l.max_model_bytes, 1},
      {"max_total_model_bytes", l.max_total_model_bytes, 1},
      {"max_models", l.max_models, 1},
      {"max_classes", l.max_classes, 1},
      {"max_named_features", l.max_named_features, 1},
      {"max_interaction_products", l.max_interaction_products, 1},
      {"max_examples_per_request", l.max_examples_per_request, 1},
      {"max_pending_examples", l.max_pending_examples, 1},
      {"max_pending_bytes", l.max_pending_bytes, 1},
      {"pending_ttl", l.pending_ttl_seconds, 1},
      {"max_streams", o.streams.max_streams, 1},
      {"max_streams_per_client", o.streams.max_streams_per_client, 1},
      {"grpc_memory_bytes", o.grpc_memory_bytes, 1},
  };
  for (const auto& [flag, value, least] : at_least) {
    if (value < least) {
      return InvalidFlag(flag, value,
                         least == 0 ? "must be 0 (off) or positive"
                                    : absl::StrCat("must be at least ", least));
    }
  }
  for (const VwListenerOptions& vw : o.vw) {
    if (vw.max_line_bytes < 1024) {
      return InvalidFlag("vw_max_line_bytes", vw.max_line_bytes,
                         "must be at least 1024");
    }
  }
  if (l.max_classes > kMaxClasses) {
    return InvalidFlag("max_classes", l.max_classes,
                       absl::StrCat("must be at most ", kMaxClasses));
  }
  if (l.max_model_bytes > l.max_total_model_bytes) {
    return InvalidFlag("max_model_bytes", l.max_model_bytes,
                       "must not exceed --max_total_model_bytes");
  }
  return absl::OkStatus();
}

// Rates and bursts: finite and not negative.
absl::Status ValidateRates(const ServerOptions& o) {
  const std::pair<const char*, double> rates[] = {
      {"anonymous_calls_per_second", o.anonymous.calls.per_second},
      {"anonymous_calls_burst", o.anonymous.calls.burst},
      {"anonymous_examples_per_second", o.anonymous.examples.per_second},
      {"anonymous_examples_burst", o.anonymous.examples.burst},
      {"auth_failures_per_second", o.auth_failures.per_second},
      {"auth_failures_burst", o.auth_failures.burst},
  };
  for (const auto& [flag, value] : rates) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return InvalidFlag(flag, value, "must be a number >= 0");
    }
  }
  return absl::OkStatus();
}

// The HTTP gateway's bounds (its address is checked as it listens).
absl::Status ValidateHttp(const HttpGatewayOptions& http) {
  if (http.timeout <= absl::ZeroDuration()) {
    return InvalidFlag("http_timeout", absl::FormatDuration(http.timeout),
                       "must be positive");
  }
  if (http.max_body_bytes < 1024) {
    return InvalidFlag("http_max_body_bytes",
                       std::to_string(http.max_body_bytes),
                       "must be at least 1024");
  }
  if (http.max_connections < 1) {
    return InvalidFlag("http_max_connections",
                       std::to_string(http.max_connections),
                       "must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateServerOptions(const ServerOptions& o) {
  if (absl::Status s = ValidateListen(ListenAddress(o)); !s.ok()) return s;
  if (absl::Status s = ValidateTls(o.tls); !s.ok()) return s;
  if (!o.tokens_file.empty()) {
    if (absl::Status s = Readable("tokens_file", o.tokens_file); !s.ok()) {
      return s;
    }
  }
  if (o.data_dir.empty())
    return InvalidFlag("data_dir", "", "give a directory");
  if (absl::Status s = ValidateDurations(o); !s.ok()) return s;
  if (absl::Status s = ValidateSizes(o); !s.ok()) return s;
  if (absl::Status s = ValidateHttp(o.http); !s.ok()) return s;
  return ValidateRates(o);
}

Server::Server(const ServerOptions& options,
               std::unique_ptr<DataDirectory> data,
               std::unique_ptr<Authenticator> auth)
    : options_(options),
      auth_(std::move(auth)),
      data_(std::move(data)),
      budget_(std::make_shared<ResourceBudget>(options.limits)),
      registry_(data_->store(), nullptr, budget_),
      gate_(options.streams, /*loading=*/true),
      limiter_({options.auth_failures}),
      metrics_(&registry_, &gate_) {}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options) {
  if (absl::Status s = ValidateServerOptions(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Authenticator>> auth =
      Authenticator::Open(options.tokens_file);
  if (!auth.ok()) return auth.status();
  absl::StatusOr<std::unique_ptr<DataDirectory>> data =
      DataDirectory::Open(options.data_dir);
  if (!data.ok()) return data.status();
  std::unique_ptr<Server> server(
      new Server(options, *std::move(data), *std::move(auth)));
  // Listen first, NOT_SERVING, turning calls away while the models load:
  // a port in use fails at once, and probes see the server come up.
  if (absl::Status s = server->Listen(); !s.ok()) return s;
  if (absl::Status s = server->Recover(); !s.ok()) return s;
  // Snapshot what the log replayed, so that a server killed again and again
  // before its first checkpoint still keeps its log (and recovery) short.
  if (absl::Status s = server->Checkpoint(); !s.ok()) {
    spdlog::error("checkpoint after recovery failed: {}", s.ToString());
  }
  server->parts_.log = server->data_->journal();
  if (absl::Status s = server->StartReplicas(); !s.ok()) return s;
  server->gate_.Open();
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(true);
  server->checkpoint_thread_ =
      std::thread([s = server.get()] { s->CheckpointLoop(); });
  const std::string listen = ListenAddress(options);
  if (absl::StartsWith(listen, "unix:")) {
    spdlog::info("serving on {}", listen);
  } else {
    spdlog::info("serving on port {}", server->port_);
  }
  return server;
}

absl::Status Server::Listen() {
  parts_.registry = &registry_;
  parts_.gate = &gate_;
  parts_.auth = auth_.get();
  parts_.metrics = &metrics_;
  parts_.limiter = &limiter_;
  parts_.anonymous = options_.anonymous;
  parts_.max_message_bytes = options_.max_message_bytes;
  service_ = std::make_unique<HalfspaceService>(&parts_);
  if (!options_.metrics_listen.empty()) {
    if (absl::Status s = metrics_.Serve(options_.metrics_listen); !s.ok()) {
      return s;
    }
    spdlog::info("metrics on http://{}/metrics", options_.metrics_listen);
  }
  for (const VwListenerOptions& options : options_.vw) {
    absl::StatusOr<std::unique_ptr<VwListener>> vw =
        VwListener::Start(options, &parts_);
    if (!vw.ok()) return vw.status();
    vw_.push_back(*std::move(vw));
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string listen = ListenAddress(options_);
  // gRPC replaces a socket file left at the path; refuse one in use (as
  // for a TCP port, below), leaving stale ones to be replaced.
  if (absl::StartsWith(listen, "unix:") && Answers(listen.substr(5))) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", listen, ": a server is answering there"));
  }
  builder.AddListeningPort(listen, Credentials(), &port_);
  if (!options_.reflection) {
    builder.SetOption(std::make_unique<WithoutReflection>());
  }
  builder.RegisterService(service_.get());
  open_inference_ = std::make_unique<OpenInferenceService>(HALFSPACE_VERSION);
  builder.RegisterService(open_inference_.get());
  // gRPC would let a second server share a port in use and split the
  // traffic with it; refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (options_.max_connection_age > absl::ZeroDuration()) {
    // Clients reconnect, so a load balancer can spread them anew; calls in
    // flight finish on the old connection.
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(std::min<int64_t>(
            absl::ToInt64Milliseconds(options_.max_connection_age), INT_MAX)));
  }
  grpc::ResourceQuota quota("halfspace");
  quota.Resize(options_.grpc_memory_bytes);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  grpc_server_ = builder.BuildAndStart();
  if (grpc_server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen,
                     "; is the address valid and the port free?"));
  }
  grpc::HealthCheckServiceInterface* health =
      grpc_server_->GetHealthCheckService();
  health->SetServingStatus(kServiceName, false);
  health->SetServingStatus(false);  // "" too
  LogExposure(listen);
  // The Open Inference Protocol's calls become halfspace.v1 calls on the
  // in-process channel.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  open_inference_->Connect(grpc_server_->InProcessChannel(args));
  return ListenHttp();
}

absl::Status Server::ListenHttp() {
  if (options_.http.address.empty()) return absl::OkStatus();
  HttpGatewayOptions http = options_.http;
  http.cert_file = options_.tls.cert_file;
  http.key_file = options_.tls.key_file;
  http.client_ca_file = options_.tls.client_ca_file;
  http.tls_reload_interval = options_.tls.reload_interval;
  http.max_stream_requests = static_cast<size_t>(
      std::max<int64_t>(1, options_.limits.max_examples_per_request));
  // The server's own limits apply to what the gateway sends and receives.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway =
      HttpGateway::Start(http, grpc_server_->InProcessChannel(args), &metrics_);
  if (!gateway.ok()) return gateway.status();
  http_ = *std::move(gateway);
  spdlog::info("JSON over HTTP on {}://{} (port {})",
               http.cert_file.empty() ? "http" : "https", http.address,
               http_->port());
  return absl::OkStatus();
}

void Server::LogExposure(const std::string& listen) const {
  const bool tls = !options_.tls.cert_file.empty();
  const bool tokens = auth_->enabled();
  spdlog::info(
      "listening on {}: {}, {}{}", listen,
      tls ? (options_.tls.client_ca_file.empty() ? "TLS" : "mutual TLS")
          : "no TLS",
      tokens ? "bearer tokens" : "no tokens",
      options_.reflection ? ", reflection on" : "");
  if (IsLoopback(listen)) {
    if (!tls && !tokens && absl::StartsWith(listen, "unix:")) {
      spdlog::info(
          "the server takes calls from this machine only, from whoever the "
          "socket file's permissions let connect");
    } else if (!tls && !tokens) {
      spdlog::info(
          "without TLS or tokens the server takes calls from this "
          "machine only; give --listen=0.0.0.0:50051 to take them "
          "from anywhere");
    }
  } else if (!tokens) {
    spdlog::warn(
        "anyone who can reach {} may read, train and delete every "
        "model: give --tokens_file (and --tls_cert, --tls_key)",
        listen);
  } else if (!tls) {
    spdlog::warn(
        "tokens cross the network in clear text: give --tls_cert "
        "and --tls_key");
  }
}

std::shared_ptr<grpc::ServerCredentials> Server::Credentials() const {
  const TlsOptions& tls = options_.tls;
  if (tls.cert_file.empty()) return grpc::InsecureServerCredentials();
  auto certificates =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          tls.key_file, tls.cert_file, tls.client_ca_file,
          static_cast<unsigned>(absl::ToInt64Seconds(tls.reload_interval)));
  grpc::experimental::TlsServerCredentialsOptions credentials(certificates);
  credentials.watch_identity_key_cert_pairs();
  if (tls.client_ca_file.empty()) {
    credentials.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    credentials.watch_root_certs();
    credentials.set_cert_request_type(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(credentials);
}

absl::Status Server::Recover() {
  // What was accepted once is recovered whatever the limits are now.
  budget_->set_enforcing(false);
  absl::Status status = RecoverModels();
  budget_->set_enforcing(true);
  if (!status.ok()) return status;
  recovered_ = true;
  spdlog::info(
      "models hold {} bytes of the {} all models may hold "
      "(--max_total_model_bytes)",
      budget_->reserved(), options_.limits.max_total_model_bytes);
  return absl::OkStatus();
}

absl::Status Server::RecoverModels() {
  const absl::Time start = absl::Now();
  DataDirectory::LogOptions log;
  log.enabled = options_.durability != Durability::kSnapshot;
  log.sync = options_.durability == Durability::kSync;
  log.segment_bytes = options_.log_segment_bytes;
  log.on_sync = [this](absl::Duration elapsed) {
    metrics_.RecordSync(elapsed);
  };
  absl::StatusOr<DataDirectory::Recovery> recovery =
      data_->Recover(registry_, log, ReplayTrainBatch, TrainBatchExamples);
  if (!recovery.ok()) return recovery.status();
  for (const std::string& name : recovery->set_aside) {
    spdlog::warn(
        "model '{}': its snapshot is damaged (set aside); recovered from its "
        "previous snapshot and the log, nothing lost",
        name);
  }
  for (const DataDirectory::Damage& damage : recovery->damages) {
    metrics_.RecordLogDamage();
    spdlog::error(
        "the log is damaged: {}; model {}; the bytes are kept in "
        "{}{}",
        damage.where,
        damage.model.empty() ? "unknown (any model's)"
                             : absl::StrCat("'", damage.model, "'"),
        damage.kept,
        damage.applies ? "" : "; its snapshot already holds the record");
  }
  for (const Listing& listing : registry_.ListAll()) {
    if (!listing.unavailable.ok()) {
      spdlog::error("model '{}' is unavailable: {}", listing.name,
                    listing.unavailable.ToString());
    }
  }
  spdlog::info("recovered {} model(s) from {} ({} log records) in {}",
               registry_.List().size(), options_.data_dir, recovery->records,
               absl::FormatDuration(absl::Now() - start));
  return absl::OkStatus();
}

Server::~Server() {
  if (absl::Status s = Shutdown(); !s.ok()) {
    spdlog::error("storing models at shutdown failed: {}", s.ToString());
  }
}

// How long gRPC's shutdown may flush what finished calls sent.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);

absl::Status Server::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  {
    MutexLock lock(stop_mu_);
    stopping_ = true;
  }
  stop_.SignalAll();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  if (grpc_server_ != nullptr) {
    grpc_server_->GetHealthCheckService()->SetServingStatus(false);
    if (http_ != nullptr) http_->Drain();
    gate_.Close();
    if (!gate_.WaitUntilIdle(options_.drain_timeout)) {
      spdlog::warn("calls still running after {}; cancelling them",
                   absl::FormatDuration(options_.drain_timeout));
    }
    // Answers of HTTP calls that finished are written out before the
    // in-process channel goes.
    if (http_ != nullptr) {
      http_->Stop(std::min(options_.drain_timeout, kShutdownGrace));
    }
    // The calls are done, but their last bytes (a stream's final responses
    // and status) may still be on their way out: a short grace before the
    // connections close, not the seconds an idle client may take to
    // acknowledge gRPC's GOAWAY.
    grpc_server_->Shutdown(absl::ToChronoTime(
        absl::Now() + std::min(options_.drain_timeout, kShutdownGrace)));
    grpc_server_->Wait();
  }
  for (auto& vw : vw_) vw->Stop();  // drained with the calls
  // Stop following before the last snapshots, so that they hold each
  // replica's last position.
  parts_.replicas = nullptr;
  metrics_.FollowReplicas(nullptr);
  replicas_.reset();
  if (!recovered_) return absl::OkStatus();  // nothing to store
  absl::Status status = Checkpoint();
  spdlog::info("stopped; models stored in {}", options_.data_dir);
  return status;
}

absl::Status Server::Checkpoint() { return data_->Checkpoint(registry_); }

namespace {

// This server's name in the NATS cluster: `given`, or one made at random
// the first time and kept in the data directory as `replica_name`.
absl::StatusOr<std::string> ReplicaName(const std::string& given,
                                        const std::string& data_dir) {
  if (!given.empty()) return given;
  const std::filesystem::path path =
      std::filesystem::path(data_dir) / "replica_name";
  absl::StatusOr<std::string> kept = ReadFile(path.string());
  if (kept.ok() && !kept->empty()) {
    return std::string(absl::StripAsciiWhitespace(*kept));
  }
  std::random_device random;
  const std::string made =
      absl::StrCat("hs_", absl::Hex(random(), absl::kZeroPad8),
                   absl::Hex(random(), absl::kZeroPad8));
  if (absl::Status s = WriteFileSynced(path.string(), made); !s.ok()) {
    return s;
  }
  return made;
}

}  // namespace

absl::Status Server::StartReplicas() {
  if (options_.nats.urls.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> name =
      ReplicaName(options_.replica_name, options_.data_dir);
  if (!name.ok()) return name.status();
  NatsOptions nats = options_.nats;
  nats.name = absl::StrCat("halfspace ", *name);
  absl::StatusOr<std::unique_ptr<JetStreamLog>> log = JetStreamLog::Connect(
      nats, nats.catalog_replicas, absl::Now() + absl::Seconds(30));
  if (!log.ok()) return log.status();
  nats_ = *std::move(log);
  ReplicaOptions replica_options = ServerReplicaOptions(*name, &metrics_);
  replica_options.snapshot_every = options_.replica_snapshot_records;
  replicas_ = std::make_unique<ReplicaSet>(&registry_, nats_.get(),
                                           std::move(replica_options));
  replicas_->Start();
  parts_.replicas = replicas_.get();
  metrics_.FollowReplicas(replicas_.get());
  spdlog::info("following replicated models on NATS as {}", *name);
  return absl::OkStatus();
}

void Server::CheckpointLoop() {
  // Wakes every second to see whether a checkpoint is due: by time, or by
  // the log's growth.
  const absl::Duration interval = options_.snapshot_interval;
  absl::Time last = absl::Now();
  int64_t last_bytes = 0;
  while (!StopsWithin(absl::Seconds(1))) {
    const int64_t bytes = data_->log_bytes();
    const bool due_by_time =
        interval > absl::ZeroDuration() && absl::Now() - last >= interval;
    const bool due_by_size = options_.checkpoint_bytes > 0 &&
                             bytes - last_bytes >= options_.checkpoint_bytes;
    if (!due_by_time && !due_by_size) continue;
    last = absl::Now();
    last_bytes = bytes;
    if (absl::Status s = Checkpoint(); !s.ok()) {
      spdlog::error("checkpoint failed: {}", s.ToString());
    }
  }
}

bool Server::StopsWithin(absl::Duration wait) {
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(wait);
  MutexLock lock(stop_mu_);
  while (!stopping_ && stop_.WaitUntil(stop_mu_, deadline)) {
  }
  return stopping_;
}

}  // namespace halfspace
