// A running halfspace server: the gRPC server, the model registry and its
// store, health and reflection, and a background thread that stores changed
// models periodically.
//
// Lifecycle: Start loads every stored model, then serves. Shutdown marks the
// service NOT_SERVING, turns new calls away with UNAVAILABLE, lets calls in
// flight finish for up to `drain_timeout` (then cancels them), stops gRPC,
// and stores every changed model.
// Shutdown is idempotent; the destructor calls it.
//
// Thread safety: Start and Shutdown from one thread; port() from any.

#ifndef HALFSPACE_SERVER_SERVER_H_
#define HALFSPACE_SERVER_SERVER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/storage/file_model_store.h"
#include "core/model_registry.h"
#include "grpcpp/server.h"
#include "server/call_gate.h"
#include "server/halfspace_service.h"

namespace halfspace {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free port (see Server::port).
  std::string listen_address = "0.0.0.0:50051";
  // Where models are stored, one file each; created if missing.
  std::string data_dir = "data";
  // How often changed models are stored in the background; zero disables it.
  absl::Duration snapshot_interval = absl::Seconds(30);
  // How long Shutdown lets calls in flight finish before cancelling them.
  absl::Duration drain_timeout = absl::Seconds(5);
  // The largest request or response message, in bytes.
  int max_message_bytes = 64 << 20;
};

class Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // The port the server listens on.
  int port() const { return port_; }

  // Drains calls and stores every changed model; returns the store's error,
  // if any. Later calls return OK and do nothing.
  absl::Status Shutdown();

 private:
  Server(const ServerOptions& options, std::unique_ptr<FileModelStore> store);
  void SnapshotLoop();

  const ServerOptions options_;
  std::unique_ptr<FileModelStore> store_;
  ModelRegistry registry_;
  CallGate gate_;
  HalfspaceService service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::thread snapshot_thread_;
  bool shut_down_ = false;
};

// The full name under which the service reports its health.
inline constexpr char kServiceName[] = "halfspace.v1.HalfspaceService";

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_SERVER_H_
