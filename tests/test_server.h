// An in-process halfspace server on 127.0.0.1 with its own data directory,
// and clients connected to it over real gRPC channels.

#ifndef HALFSPACE_TESTS_TEST_SERVER_H_
#define HALFSPACE_TESTS_TEST_SERVER_H_

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/halfspace_client.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/server.h"
#include "tests/connected.h"
#include "tests/temp_dir.h"

namespace halfspace {

// The algorithm that `text` names or describes (see ParseAlgorithm).
inline v1::Algorithm TextAlgorithm(const std::string& text) {
  absl::StatusOr<v1::Algorithm> algorithm = ParseAlgorithm(text);
  EXPECT_TRUE(algorithm.ok()) << algorithm.status();
  return algorithm.ok() ? *algorithm : v1::Algorithm();
}

using TrainStream =
    grpc::ClientReaderWriter<v1::TrainRequest, v1::TrainResponse>;

// Appends a dense example (x, y) to `request`.
inline void AddExample(v1::TrainRequest& request, std::vector<double> x,
                       int y) {
  v1::Example* e = request.add_examples();
  e->mutable_features()->mutable_dense()->Add(x.begin(), x.end());
  e->set_label(y);
}

// n deterministic examples of a noisy linear rule in three features.
// A binary model's weights, then its bias, as GetWeights gives them.
inline std::vector<double> Weights(v1::HalfspaceService::Stub& stub,
                                   const std::string& model) {
  grpc::ClientContext context;
  v1::GetWeightsRequest request;
  request.set_model(model);
  v1::GetWeightsResponse response;
  EXPECT_TRUE(stub.GetWeights(&context, request, &response).ok());
  std::vector<double> out(response.weights().begin(), response.weights().end());
  out.push_back(response.bias());
  return out;
}

// Predicts dense vectors `xs` with `model`, remembering them (under
// `ids`, if given) and answering label queries as asked.
inline absl::StatusOr<v1::PredictResponse> PredictVectors(
    v1::HalfspaceService::Stub& stub, const std::string& model,
    const std::vector<std::vector<double>>& xs, bool remember, bool query,
    const std::vector<std::string>& ids = {}) {
  grpc::ClientContext context;
  v1::PredictRequest request;
  request.set_model(model);
  request.set_remember(remember);
  request.set_query(query);
  for (const auto& x : xs) {
    request.add_instances()->mutable_dense()->Add(x.begin(), x.end());
  }
  for (const std::string& id : ids) request.add_example_ids(id);
  v1::PredictResponse response;
  const grpc::Status s = stub.Predict(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

inline bool BitIdentical(const std::vector<double>& a,
                         const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

inline std::vector<std::pair<std::vector<double>, int>> NoisyExamples(int n) {
  std::vector<std::pair<std::vector<double>, int>> out;
  for (int i = 0; i < n; ++i) {
    const std::vector<double> x = {std::sin(i * 1.3), std::cos(i * 0.7),
                                   (i % 5) * 0.25 - 0.5};
    const int y =
        x[0] - 0.5 * x[1] + 0.3 * x[2] + (i % 7 == 0 ? 0.9 : 0.0) > 0 ? 1 : -1;
    out.push_back({x, y});
  }
  return out;
}

class TestServer {
 public:
  explicit TestServer(absl::Duration drain_timeout = absl::Seconds(1))
      : drain_timeout_(drain_timeout) {
    Start();
  }

  // A server whose options `configure` adjusts.
  explicit TestServer(std::function<void(ServerOptions&)> configure)
      : drain_timeout_(absl::Seconds(1)), configure_(std::move(configure)) {
    Start();
  }

  // Stops the server (storing every model) and starts a new one on the same
  // data directory.
  void Restart() {
    ASSERT_TRUE(server_->Shutdown().ok());
    server_.reset();
    Start();
  }

  // A channel of its own (a distinct argument gives each its connection),
  // connected: a test's first call never races the connection's setup,
  // whose first attempt can fail on a busy machine, failing a call made
  // without wait_for_ready.
  std::shared_ptr<grpc::Channel> NewChannel() const {
    grpc::ChannelArguments args;
    args.SetInt("halfspace.test.channel", ++channels_);
    return Connected(grpc::CreateCustomChannel(
        target(), grpc::InsecureChannelCredentials(), args));
  }
  Client NewClient() const { return Client(NewChannel()); }
  std::unique_ptr<v1::HalfspaceService::Stub> NewStub() const {
    return v1::HalfspaceService::NewStub(NewChannel());
  }

  std::string target() const {
    return absl::StrCat("127.0.0.1:", server_->port());
  }
  const TempDir& data_dir() const { return dir_; }
  Server& server() { return *server_; }

 private:
  void Start() {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.data_dir = dir_.path();
    options.snapshot_interval = absl::ZeroDuration();
    options.drain_timeout = drain_timeout_;
    if (configure_) configure_(options);
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  const absl::Duration drain_timeout_;
  const std::function<void(ServerOptions&)> configure_;
  TempDir dir_;
  std::unique_ptr<Server> server_;
  mutable int channels_ = 0;
};

// A server on a copy of `data_dir`'s files taken now: the data directory as
// a crash at this moment would leave it.
class CrashCopy {
 public:
  explicit CrashCopy(const TempDir& data_dir) {
    std::filesystem::copy(
        data_dir.path(), copy_.path(),
        std::filesystem::copy_options::recursive |
            std::filesystem::copy_options::overwrite_existing);
  }

  // Starts the server on the copy (after any damage done to it), with
  // options `configure` adjusts.
  Client Start(const std::function<void(ServerOptions&)>& configure = {}) {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.data_dir = copy_.path();
    options.snapshot_interval = absl::ZeroDuration();
    if (configure) configure(options);
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    return Client(Connected(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                            grpc::InsecureChannelCredentials())));
  }

  // Stops the server as SIGTERM does (storing every model); Start serves
  // the copy again.
  void Stop() { server_.reset(); }

  std::string File(const std::string& name) const { return copy_.File(name); }
  std::string target() const {
    return absl::StrCat("127.0.0.1:", server_->port());
  }
  const TempDir& dir() const { return copy_; }

 private:
  TempDir copy_;
  std::unique_ptr<Server> server_;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_TEST_SERVER_H_
