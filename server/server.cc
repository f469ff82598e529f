#include "server/server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "spdlog/spdlog.h"

namespace halfspace {

Server::Server(const ServerOptions& options,
               std::unique_ptr<FileModelStore> store)
    : options_(options),
      store_(std::move(store)),
      registry_(store_.get()),
      service_(&registry_, &gate_) {}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options) {
  absl::StatusOr<std::unique_ptr<FileModelStore>> store =
      FileModelStore::Open(options.data_dir);
  if (!store.ok()) return store.status();
  std::unique_ptr<Server> server(new Server(options, *std::move(store)));
  if (absl::Status s = server->registry_.Load(); !s.ok()) return s;
  spdlog::info("loaded {} model(s) from {}", server->registry_.List().size(),
               options.data_dir);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address,
                           grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(&server->service_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.listen_address,
        "; is the address valid and the port free?"));
  }
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(kServiceName,
                                                                  true);
  if (options.snapshot_interval > absl::ZeroDuration()) {
    server->snapshot_thread_ = std::thread([s = server.get()] {
      s->SnapshotLoop();
    });
  }
  spdlog::info("serving on port {}", server->port_);
  return server;
}

Server::~Server() {
  if (absl::Status s = Shutdown(); !s.ok()) {
    spdlog::error("storing models at shutdown failed: {}", s.ToString());
  }
}

absl::Status Server::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  if (grpc_server_ != nullptr) {
    grpc_server_->GetHealthCheckService()->SetServingStatus(false);
    gate_.Close();
    if (!gate_.WaitUntilIdle(options_.drain_timeout)) {
      spdlog::warn("calls still running after {}; cancelling them",
                   absl::FormatDuration(options_.drain_timeout));
    }
    grpc_server_->Shutdown(absl::ToChronoTime(absl::Now()));
    grpc_server_->Wait();
  }
  absl::Status status = registry_.SaveChanged();
  spdlog::info("stopped; models stored in {}", options_.data_dir);
  return status;
}

void Server::SnapshotLoop() {
  std::unique_lock lock(stop_mu_);
  const auto interval = absl::ToChronoNanoseconds(options_.snapshot_interval);
  while (!stop_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    if (absl::Status s = registry_.SaveChanged(); !s.ok()) {
      spdlog::error("storing changed models failed: {}", s.ToString());
    }
    lock.lock();
  }
}

}  // namespace halfspace
