// halfspace-server: flags → ServerOptions → serve until SIGTERM or SIGINT,
// then drain and store every model. SIGHUP re-reads the tokens file.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "server/logging.h"
#include "server/server.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "",
          "host:port to listen on, or unix:PATH for a Unix-domain socket "
          "(this machine's clients, a little faster than TCP); by default "
          "0.0.0.0:50051 with TLS or tokens, 127.0.0.1:50051 (this machine "
          "only) without");
ABSL_FLAG(std::string, tls_cert, "",
          "the server's TLS certificate chain (PEM); with --tls_key, serve "
          "TLS. Re-read when it changes");
ABSL_FLAG(std::string, tls_key, "", "the private key of --tls_cert (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA certificates (PEM): require client certificates they signed "
          "(mutual TLS)");
ABSL_FLAG(absl::Duration, tls_reload_interval, absl::Minutes(1),
          "how often the TLS files are checked for changes");
ABSL_FLAG(std::string, tokens_file, "",
          "bearer tokens and their permissions per model name pattern, one "
          "'TOKEN permission:pattern...' a line (permissions: predict, "
          "train, admin); re-read on SIGHUP. Without it every caller may do "
          "everything");
ABSL_FLAG(bool, reflection, true, "serve gRPC server reflection");
ABSL_FLAG(absl::Duration, max_connection_age, absl::Minutes(30),
          "close connections this old (after their calls finish) so clients "
          "reconnect and load balancers spread them; 0 for never");
ABSL_FLAG(std::vector<std::string>, nats_url, {},
          "NATS servers of the JetStream cluster replicated models are "
          "ordered in, comma-separated (nats://h1:4222,nats://h2:4222); "
          "none: local models only");
ABSL_FLAG(std::string, nats_credentials, "",
          "a NATS credentials file (user JWT and NKey seed)");
ABSL_FLAG(std::string, nats_tls_ca, "",
          "the CA certificate that signs the NATS servers' (enables TLS)");
ABSL_FLAG(std::string, nats_tls_cert, "",
          "this server's client certificate for NATS (PEM)");
ABSL_FLAG(std::string, nats_tls_key, "", "the key of --nats_tls_cert (PEM)");
ABSL_FLAG(int, nats_replicas, 3,
          "how many NATS servers store the catalog of replicated models, "
          "when this server creates it");
ABSL_FLAG(std::string, replica_name, "",
          "this server's name in the NATS cluster, unique in it; default: "
          "one made once and kept in the data directory");
ABSL_FLAG(uint64_t, replica_snapshot_records, 10000,
          "share a snapshot of each replicated model every this many "
          "records of its stream, for replicas that join to start from, and "
          "trim the stream below the previous one; 0: none");
ABSL_FLAG(std::string, metrics_listen, "",
          "host:port to serve Prometheus metrics on (HTTP, /metrics), e.g. "
          "0.0.0.0:9464; none by default");
ABSL_FLAG(std::string, http_listen, "",
          "host:port to serve the API as JSON over HTTP/1.1 on, e.g. "
          "127.0.0.1:8080 (with the TLS, tokens and limits of gRPC); none by "
          "default");
ABSL_FLAG(int64_t, http_max_body_bytes, int64_t{16} << 20,
          "the largest HTTP request body; a larger one is answered 413 "
          "before it is read");
ABSL_FLAG(absl::Duration, http_timeout, absl::Seconds(30),
          "how long an HTTP request may take to arrive whole, and each write "
          "of an answer to be taken; a slower client is disconnected");
ABSL_FLAG(int64_t, http_max_connections, 1024,
          "HTTP connections open at once; past them a connection is answered "
          "503");
ABSL_FLAG(std::vector<std::string>, vw_listen, {},
          "host:port or unix:PATH to speak Vowpal Wabbit's daemon protocol "
          "on (a line of VW text in, its prediction line out; a labelled "
          "line learns), e.g. 127.0.0.1:26542; comma-separated for several, "
          "each ADDRESS=MODEL to send its lines to MODEL. It takes no "
          "tokens, so it listens only on loopback unless "
          "--vw_listen_remote");
ABSL_FLAG(std::string, vw_model, "",
          "the model of the --vw_listen lines (of an address that names "
          "none); empty: each line's tag names its model ('ctr |f a b)");
ABSL_FLAG(std::string, vw_answer, "score",
          "what a --vw_listen answer gives of a binary model: score (f(x)), "
          "label (-1 or 1) or probability; a multiclass model's is its class");
ABSL_FLAG(bool, vw_listen_remote, false,
          "let --vw_listen listen on an address other than loopback: whoever "
          "reaches it predicts with and trains every model");
ABSL_FLAG(int64_t, vw_max_line_bytes, int64_t{1} << 20,
          "the longest --vw_listen line; a longer one is answered with an "
          "error and skipped");
ABSL_FLAG(std::string, data_dir, "data",
          "directory where models are stored: a snapshot file each, and the "
          "write-ahead log in wal/");
ABSL_FLAG(std::string, durability, "sync",
          "when a change counts as stored and its call is answered: sync (on "
          "stable storage; survives a machine crash), write (in the log; "
          "survives a process crash) or snapshot (periodic snapshots only; a "
          "crash loses up to --snapshot_interval of changes)");
ABSL_FLAG(absl::Duration, snapshot_interval, absl::Seconds(30),
          "how often changed models are snapshotted (and the log trimmed); 0 "
          "snapshots only at shutdown and when the log grows by "
          "--checkpoint_bytes");
ABSL_FLAG(int64_t, checkpoint_bytes, int64_t{64} << 20,
          "snapshot once the log grew this much since the last snapshot, "
          "which bounds recovery time; 0 disables it");
ABSL_FLAG(int64_t, log_segment_bytes, int64_t{64} << 20,
          "the write-ahead log's segment size");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(5),
          "how long calls in flight may finish at shutdown");
ABSL_FLAG(int, max_message_bytes, 16 << 20,
          "largest request or response message in bytes");
ABSL_FLAG(int64_t, max_model_bytes, int64_t{128} << 20,
          "memory one model may take: weights and algorithm state of every "
          "class (dimension + 2^hash_bits per class)");
ABSL_FLAG(int64_t, max_total_model_bytes, int64_t{768} << 20,
          "memory all models may take together");
ABSL_FLAG(int64_t, max_models, 10000, "how many models the server holds");
ABSL_FLAG(int64_t, max_classes, 4096,
          "classes of one multiclass model (at most 4096)");
ABSL_FLAG(int64_t, max_named_features, 10000, "named features in one example");
ABSL_FLAG(int64_t, max_interaction_products, 100000,
          "products one example's interactions make (n features crossed "
          "with m make n*m; a group of n with itself n(n-1)/2)");
ABSL_FLAG(int64_t, max_examples_per_request, 100000,
          "examples or instances in one Train, Evaluate or Predict request");
ABSL_FLAG(int64_t, max_pending_examples, halfspace::kDefaultMaxPendingExamples,
          "examples one model keeps remembered for delayed feedback (Predict "
          "with remember); past it the oldest are dropped");
ABSL_FLAG(int64_t, max_pending_bytes, halfspace::kDefaultMaxPendingBytes,
          "bytes one model's remembered examples may take; past it the "
          "oldest are dropped");
ABSL_FLAG(absl::Duration, pending_ttl,
          absl::Seconds(halfspace::kDefaultPendingTtlSeconds),
          "how long a remembered example waits for its feedback");
ABSL_FLAG(int64_t, max_streams, 256,
          "Train, Evaluate and PredictStream streams open at once");
ABSL_FLAG(int64_t, max_streams_per_client, 64,
          "Train and Evaluate streams open at once from one client address");
ABSL_FLAG(double, anonymous_calls_per_second, 0,
          "without --tokens_file: calls a second one client address may make "
          "(0: no limit; a stream's opening and each PredictStream request "
          "count as calls)");
ABSL_FLAG(double, anonymous_calls_burst, 0,
          "the calls one client address may make at once (default: one "
          "second's worth)");
ABSL_FLAG(double, anonymous_examples_per_second, 0,
          "without --tokens_file: training examples a second one client "
          "address may send (0: no limit)");
ABSL_FLAG(double, anonymous_examples_burst, 0,
          "the training examples one client address may send at once "
          "(default: one second's worth)");
ABSL_FLAG(double, auth_failures_per_second, 5,
          "failed authentications a second one client address may make "
          "before it is refused (0: no limit)");
ABSL_FLAG(double, auth_failures_burst, 20,
          "the failed authentications one client address may make at once");
ABSL_FLAG(int64_t, grpc_memory_bytes, int64_t{512} << 20,
          "memory gRPC may use for connections and messages in flight");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off (debug: a line per call)");
ABSL_FLAG(std::string, log_format, "text",
          "text, or json: one JSON object a line (time, level, request_id, "
          "msg)");

// Exit code for flags that are not valid.
constexpr int kBadFlags = 2;

namespace {

// The usage message, and --help listing this file's flags.
void SetUpUsage() {
  absl::SetProgramUsageMessage(
      "Serves named online linear classifiers over gRPC.\n"
      "  halfspace-server --data_dir=data   (this machine only)\n"
      "  halfspace-server --listen=0.0.0.0:50051 --tls_cert=cert.pem "
      "--tls_key=key.pem --tokens_file=tokens\n"
      "  halfspace-server --flagfile=halfspace.flags   (one --flag=value a "
      "line)");
  // Debian's Abseil checks every absl::Mutex acquisition (gRPC's included)
  // for lock-order cycles, a debugging aid that costs on every call.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // --help lists this file's flags (by default, absl lists those of files
  // named after the binary).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
}

// The log's level and format from the flags; false (having said why) for
// a value that is neither.
bool SetUpLogging() {
  const std::string level = absl::GetFlag(FLAGS_log_level);
  if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
    spdlog::critical(
        "--log_level={}: use trace, debug, info, warn, error or off", level);
    return false;
  }
  spdlog::set_level(spdlog::level::from_str(level));
  if (absl::Status s = halfspace::SetLogFormat(absl::GetFlag(FLAGS_log_format));
      !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return false;
  }
  return true;
}

// The server's options, as the flags give them (validated by the server).
halfspace::ServerOptions OptionsFromFlags(halfspace::Durability durability) {
  halfspace::ServerOptions options;
  options.durability = durability;
  options.checkpoint_bytes = absl::GetFlag(FLAGS_checkpoint_bytes);
  options.log_segment_bytes = absl::GetFlag(FLAGS_log_segment_bytes);
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.snapshot_interval = absl::GetFlag(FLAGS_snapshot_interval);
  options.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  halfspace::Limits& limits = options.limits;
  limits.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  limits.max_total_model_bytes = absl::GetFlag(FLAGS_max_total_model_bytes);
  limits.max_models = absl::GetFlag(FLAGS_max_models);
  limits.max_classes = absl::GetFlag(FLAGS_max_classes);
  limits.max_named_features = absl::GetFlag(FLAGS_max_named_features);
  limits.max_interaction_products =
      absl::GetFlag(FLAGS_max_interaction_products);
  limits.max_examples_per_request =
      absl::GetFlag(FLAGS_max_examples_per_request);
  limits.max_pending_examples = absl::GetFlag(FLAGS_max_pending_examples);
  limits.max_pending_bytes = absl::GetFlag(FLAGS_max_pending_bytes);
  limits.pending_ttl_seconds =
      absl::ToInt64Seconds(absl::GetFlag(FLAGS_pending_ttl));
  options.streams.max_streams = absl::GetFlag(FLAGS_max_streams);
  options.streams.max_streams_per_client =
      absl::GetFlag(FLAGS_max_streams_per_client);
  options.anonymous.calls = {absl::GetFlag(FLAGS_anonymous_calls_per_second),
                             absl::GetFlag(FLAGS_anonymous_calls_burst)};
  options.anonymous.examples = {
      absl::GetFlag(FLAGS_anonymous_examples_per_second),
      absl::GetFlag(FLAGS_anonymous_examples_burst)};
  options.auth_failures = {absl::GetFlag(FLAGS_auth_failures_per_second),
                           absl::GetFlag(FLAGS_auth_failures_burst)};
  options.grpc_memory_bytes = absl::GetFlag(FLAGS_grpc_memory_bytes);
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.tls.reload_interval = absl::GetFlag(FLAGS_tls_reload_interval);
  options.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  options.reflection = absl::GetFlag(FLAGS_reflection);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  options.nats.urls = absl::GetFlag(FLAGS_nats_url);
  options.nats.credentials_file = absl::GetFlag(FLAGS_nats_credentials);
  options.nats.ca_file = absl::GetFlag(FLAGS_nats_tls_ca);
  options.nats.cert_file = absl::GetFlag(FLAGS_nats_tls_cert);
  options.nats.key_file = absl::GetFlag(FLAGS_nats_tls_key);
  options.nats.catalog_replicas = absl::GetFlag(FLAGS_nats_replicas);
  options.replica_name = absl::GetFlag(FLAGS_replica_name);
  options.replica_snapshot_records =
      absl::GetFlag(FLAGS_replica_snapshot_records);
  options.http.address = absl::GetFlag(FLAGS_http_listen);
  options.http.max_body_bytes = static_cast<size_t>(
      std::max<int64_t>(absl::GetFlag(FLAGS_http_max_body_bytes), 0));
  options.http.timeout = absl::GetFlag(FLAGS_http_timeout);
  options.http.max_connections = absl::GetFlag(FLAGS_http_max_connections);
  for (const std::string& listen : absl::GetFlag(FLAGS_vw_listen)) {
    halfspace::VwListenerOptions& vw = options.vw.emplace_back();
    const size_t equals = listen.rfind('=');
    vw.address = listen.substr(0, equals);
    vw.model = equals == std::string::npos ? absl::GetFlag(FLAGS_vw_model)
                                           : listen.substr(equals + 1);
    vw.remote = absl::GetFlag(FLAGS_vw_listen_remote);
    vw.max_line_bytes =
        std::max<int64_t>(absl::GetFlag(FLAGS_vw_max_line_bytes), 0);
  }
  return options;
}

// Serves until SIGTERM or SIGINT (SIGHUP reloads the tokens), then shuts
// down: the exit code.
int ServeUntilStopped(halfspace::Server& server, const sigset_t& stop_signals) {
  int signal = 0;
  while (sigwait(&stop_signals, &signal) == 0 && signal == SIGHUP) {
    if (absl::Status s = server.ReloadTokens(); s.ok()) {
      spdlog::info("SIGHUP: tokens reloaded");
    } else {
      spdlog::error("SIGHUP: tokens not reloaded, the old ones stay: {}",
                    s.ToString());
    }
  }
  spdlog::info("received signal {}; shutting down", signal);
  absl::Status status = server.Shutdown();
  if (!status.ok()) {
    spdlog::critical("shutdown: {}", status.ToString());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  SetUpUsage();
  absl::ParseCommandLine(argc, argv);
  if (!SetUpLogging()) return kBadFlags;

  // Block the stop signals before any thread starts, so only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<halfspace::Durability> durability =
      halfspace::ParseDurability(absl::GetFlag(FLAGS_durability));
  if (!durability.ok()) {
    spdlog::critical("--durability: {}",
                     std::string(durability.status().message()));
    return kBadFlags;
  }
  halfspace::ServerOptions options = OptionsFromFlags(*durability);
  absl::StatusOr<halfspace::VwAnswer> vw_answer =
      halfspace::ParseVwAnswer(absl::GetFlag(FLAGS_vw_answer));
  if (!vw_answer.ok()) {
    spdlog::critical("--vw_answer: {}",
                     std::string(vw_answer.status().message()));
    return kBadFlags;
  }
  for (halfspace::VwListenerOptions& vw : options.vw) vw.answer = *vw_answer;
  if (absl::Status s = halfspace::ValidateServerOptions(options); !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return kBadFlags;
  }
  absl::StatusOr<std::unique_ptr<halfspace::Server>> server =
      halfspace::Server::Start(options);
  if (!server.ok()) {
    spdlog::critical("cannot start: {}", server.status().ToString());
    // A flag's file that does not read or parse is a bad flag too.
    return absl::IsInvalidArgument(server.status()) ? kBadFlags : 1;
  }
  return ServeUntilStopped(**server, stop_signals);
}
