#include "server/status.h"

#include <string>

#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

// A status's payloads (the path of a file it concerns, say) are detail for
// the server's own log: they are logged, and never sent.
void LogDetail(const absl::Status& status) {
  bool detailed = false;
  status.ForEachPayload(
      [&](absl::string_view, const absl::Cord&) { detailed = true; });
  if (detailed) spdlog::warn("answered {}", status.ToString());
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  LogDetail(status);
  // absl::StatusCode and grpc::StatusCode share the canonical numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

void ToRpcStatus(const absl::Status& status, google::rpc::Status* out) {
  LogDetail(status);
  out->set_code(static_cast<int>(status.code()));
  out->set_message(std::string(status.message()));
}

}  // namespace halfspace
