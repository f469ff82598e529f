// A running halfspace server: the gRPC server, the model registry with its
// snapshots and write-ahead log, health and reflection, and a background
// thread that checkpoints: it snapshots changed models and drops the log
// segments the snapshots cover.
//
// Lifecycle: Start locks the data directory and listens, health NOT_SERVING
// and calls turned away with UNAVAILABLE, while it loads every snapshot and
// replays the log over them; then it serves. Shutdown marks the service
// NOT_SERVING, turns new calls away with UNAVAILABLE, lets calls in flight
// finish for up to `drain_timeout` (then cancels them), stops gRPC, and
// checkpoints. Shutdown is idempotent; the destructor calls it.
//
// Thread safety: Start and Shutdown from one thread; port() from any.

#ifndef HALFSPACE_SERVER_SERVER_H_
#define HALFSPACE_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/model/limits.h"
#include "core/registry/data_directory.h"
#include "core/registry/model_registry.h"
#include "core/replication/jetstream_log.h"
#include "core/replication/replica_set.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "server/auth.h"
#include "server/call_gate.h"
#include "server/halfspace_service.h"
#include "server/http_gateway.h"
#include "server/metrics.h"
#include "server/open_inference.h"
#include "server/rate_limits.h"
#include "server/service_parts.h"
#include "server/vw_listener.h"

namespace halfspace {

// When a change counts as stored, and so when its call is answered.
enum class Durability {
  // On stable storage (the log is synced; group commit shares one sync
  // among all changes waiting): survives a crash of the process or the
  // machine.
  kSync,
  // Written to the log (the OS holds it): survives a crash of the process,
  // not of the machine.
  kWrite,
  // In periodic snapshots only: a crash loses the changes since the last
  // snapshot (up to `snapshot_interval`).
  kSnapshot,
};

// "sync", "write" or "snapshot".
absl::StatusOr<Durability> ParseDurability(absl::string_view text);

// The server's default limits.
inline Limits DefaultServerLimits() {
  Limits limits;
  limits.max_model_bytes = int64_t{128} << 20;
  limits.max_total_model_bytes = int64_t{768} << 20;
  limits.max_models = 10000;
  limits.max_classes = kMaxClasses;
  limits.max_named_features = 10000;
  limits.max_interaction_products = 100000;
  limits.max_examples_per_request = 100000;
  return limits;
}

inline StreamLimits DefaultStreamLimits() {
  StreamLimits limits;
  limits.max_streams = 256;
  limits.max_streams_per_client = 64;
  return limits;
}

// Transport security: TLS with the server's certificate chain and key,
// mutual TLS with a client CA; PEM files, re-read when they change.
struct TlsOptions {
  std::string cert_file;       // the server's certificate chain; "" for no TLS
  std::string key_file;        // its private key
  std::string client_ca_file;  // "" accepts any client; else clients must
                               // present a certificate this CA signed
  absl::Duration reload_interval = absl::Minutes(1);
};

struct ServerOptions {
  // host:port to listen on; port 0 picks a free port (see Server::port).
  // Empty: port 50051 on every interface with TLS or tokens, on loopback
  // only without either.
  std::string listen_address;
  // Where models are stored (a snapshot file each, and the log in wal/);
  // created if missing.
  std::string data_dir = "data";
  Durability durability = Durability::kSync;
  // How often changed models are snapshotted in the background; zero
  // disables it (and so, with a log, lets the log grow until shutdown unless
  // checkpoint_bytes triggers).
  absl::Duration snapshot_interval = absl::Seconds(30);
  // A checkpoint also starts once the log grew this much since the last,
  // which bounds recovery time; zero disables it.
  int64_t checkpoint_bytes = int64_t{64} << 20;
  // The log's segment size.
  int64_t log_segment_bytes = int64_t{64} << 20;
  // How long Shutdown lets calls in flight finish before cancelling them.
  absl::Duration drain_timeout = absl::Seconds(5);
  // The largest request or response message, in bytes.
  int max_message_bytes = 16 << 20;
  // What one request, example, model and the server may take (see
  // core/model/limits.h); the defaults fit a 2 GiB container (see README).
  Limits limits = DefaultServerLimits();
  StreamLimits streams = DefaultStreamLimits();
  // The rate limits of callers without a token, per client address (a
  // token's are in the tokens file; see rate_limits.h): none by default.
  CallerLimits anonymous;
  // Failed authentications a second per client address, and their burst;
  // past them the address is refused until it slows down.
  Rate auth_failures = {5, 20};
  // The memory gRPC may use for connections and messages in flight (its
  // resource quota).
  int64_t grpc_memory_bytes = int64_t{512} << 20;
  TlsOptions tls;
  // Bearer tokens and their permissions (see auth.h); "" lets every caller
  // do everything.
  std::string tokens_file;
  // Whether gRPC server reflection is served.
  bool reflection = true;
  // host:port to serve Prometheus metrics on (HTTP, /metrics); "" for none.
  std::string metrics_listen;
  // Connections are closed (GOAWAY) once this old, after their calls
  // finish, so clients reconnect and load balancers spread them; zero for
  // never.
  absl::Duration max_connection_age = absl::Minutes(30);
  // The NATS JetStream cluster replicated models are ordered in (see
  // core/replication/); no urls: none, and only local models.
  NatsOptions nats;
  // This server's name in the cluster (its durable consumers'); empty: one
  // made once and kept in the data directory.
  std::string replica_name;
  // How many records a replicated model's stream grows by between the
  // snapshots this server shares (and the stream is trimmed below the
  // previous one); 0: none.
  uint64_t replica_snapshot_records = 10000;
  // Listeners speaking Vowpal Wabbit's daemon protocol (see
  // vw_listener.h), each on its address, its lines going to its model (or
  // to the model each line's tag names); none by default.
  std::vector<VwListenerOptions> vw;
  // JSON over HTTP (see http_gateway.h): no address, none. Its TLS files
  // are `tls`'s.
  HttpGatewayOptions http;
};

// The address the server listens on: `options.listen_address`, or its
// default.
std::string ListenAddress(const ServerOptions& options);

// INVALID_ARGUMENT naming the first option out of range and the flag that
// sets it: the listen address (host:port, port 0 to 65535), negative
// durations or sizes, a message limit under 1 KiB, a log segment under
// 4 KiB, a limit under 1 (max_classes: over kMaxClasses), a model limit
// over the total.
absl::Status ValidateServerOptions(const ServerOptions& options);

class Server {
 public:
  // Starts serving; INVALID_ARGUMENT for options ValidateServerOptions
  // refuses, UNAVAILABLE when the address cannot be bound (e.g. a port in
  // use: the server never shares a port).
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // The port the server listens on.
  int port() const { return port_; }

  // The TCP port VW listener `i` (of options.vw) listens on; 0 for a Unix
  // socket.
  int vw_port(size_t i = 0) const { return vw_.at(i)->port(); }

  // The port JSON over HTTP is served on; 0 if none.
  int http_port() const { return http_ == nullptr ? 0 : http_->port(); }

  // The port metrics are served on; 0 if none.
  int metrics_port() const { return metrics_.port(); }

  // Everything the server has counted (see metrics.h).
  const Metrics& metrics() const { return metrics_; }

  // Reads the tokens file again (as SIGHUP asks); on error the tokens in
  // force stay.
  absl::Status ReloadTokens() { return auth_->Reload(); }

  // Drains calls and checkpoints; returns the store's error, if any. Later
  // calls return OK and do nothing.
  absl::Status Shutdown();

  // Snapshots every changed model, then drops the log segments the
  // snapshots cover (keeping the records of models whose snapshot failed or
  // that are unavailable).
  absl::Status Checkpoint();

 private:
  Server(const ServerOptions& options, std::unique_ptr<DataDirectory> data,
         std::unique_ptr<Authenticator> auth);
  // Builds the service and starts gRPC (and the metrics endpoint),
  // NOT_SERVING, the gate still loading.
  absl::Status Listen();
  // Starts the HTTP gateway, if asked for, on the in-process channel.
  absl::Status ListenHttp();
  // Says in the log who can reach the server and how it is protected.
  void LogExposure(const std::string& listen) const;
  // The credentials the options ask for: TLS or none.
  std::shared_ptr<grpc::ServerCredentials> Credentials() const;
  // Loads the snapshots and replays the log over them, with the limits off.
  absl::Status Recover();
  absl::Status RecoverModels();
  // Connects to NATS and follows the replicated models (with --nats_url).
  absl::Status StartReplicas();
  // Checkpoints when one is due (by time or by the log's growth), until
  // Shutdown.
  void CheckpointLoop();
  // Waits up to `wait` for Shutdown to begin; whether it has.
  bool StopsWithin(absl::Duration wait);

  const ServerOptions options_;
  const std::unique_ptr<Authenticator> auth_;
  const std::unique_ptr<DataDirectory> data_;
  const std::shared_ptr<ResourceBudget> budget_;
  ModelRegistry registry_;
  CallGate gate_;
  RateLimiter limiter_;
  Metrics metrics_;
  ServiceParts parts_;  // the log is set once recovery has opened it
  std::unique_ptr<JetStreamLog> nats_;
  std::unique_ptr<ReplicaSet> replicas_;  // after the registry: goes first
  std::unique_ptr<HalfspaceService> service_;
  std::unique_ptr<OpenInferenceService> open_inference_;
  std::vector<std::unique_ptr<VwListener>> vw_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<HttpGateway> http_;  // after gRPC: stops first
  int port_ = 0;
  Mutex stop_mu_;
  CondVar stop_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread checkpoint_thread_;
  bool shut_down_ = false;
  bool recovered_ = false;  // Recover succeeded: the models may be stored
};

// The full name under which the service reports its health.
inline constexpr char kServiceName[] = "halfspace.v1.HalfspaceService";

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_SERVER_H_
