// Sharding by model name: three server processes behind a real nginx with
// the configuration in deploy/nginx/halfspace.conf. Every call about a model
// lands on that model's server; removing a server from the list moves only
// its own models, which come back by export and import; a server that is
// down fails its own models' calls and no others.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

constexpr int kModels = 60;

std::string ModelName(int i) { return absl::StrCat("model-", i); }

// nginx in the foreground, with the shipped configuration pointed at
// `backends` and listening on a free port.
class Nginx {
 public:
  Nginx(const TempDir& dir, const std::vector<int>& backends)
      : port_(FreePort()) {
    std::ifstream in(HALFSPACE_SOURCE_DIR "/deploy/nginx/halfspace.conf");
    std::stringstream shipped;
    shipped << in.rdbuf();
    // The shipped list of servers gives way to the test's, with the same
    // parameters.
    std::vector<std::string> lines = absl::StrSplit(shipped.str(), '\n');
    std::vector<std::string> edited;
    int replaced = 0;
    for (const std::string& line : lines) {
      if (!absl::StartsWith(line, "    server 127.0.0.1:5006")) {
        edited.push_back(absl::StrReplaceAll(
            line, {{"listen 127.0.0.1:50051",
                    absl::StrCat("listen 127.0.0.1:", port_)}}));
      } else if (replaced++ == 0) {
        for (int port : backends) {
          edited.push_back(
              absl::StrCat("    server 127.0.0.1:", port, " max_fails=0;"));
        }
      }
    }
    EXPECT_EQ(replaced, 3) << "the shipped configuration lists 3 servers";
    const std::string conf = absl::StrJoin(edited, "\n");
    std::ofstream(dir.File("halfspace.conf")) << conf;
    const std::string prefix = dir.path();
    std::ofstream(dir.File("nginx.conf")) << absl::StrCat(
        "daemon off;\nmaster_process off;\nworker_processes 1;\n", "pid ",
        prefix, "/nginx.pid;\nerror_log ", prefix, "/error.log warn;\n",
        "events { worker_connections 1024; }\n", "http {\n  access_log off;\n",
        "  client_body_temp_path ", prefix, "/body;\n", "  proxy_temp_path ",
        prefix, "/proxy;\n", "  fastcgi_temp_path ", prefix, "/fastcgi;\n",
        "  uwsgi_temp_path ", prefix, "/uwsgi;\n", "  scgi_temp_path ", prefix,
        "/scgi;\n", "  include ", prefix, "/halfspace.conf;\n}\n");
    pid_ = Spawn({"nginx", "-p", prefix, "-e", prefix + "/error.log", "-c",
                  dir.File("nginx.conf")},
                 dir.File("nginx.out"));
  }

  ~Nginx() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int port_;
  pid_t pid_;
};

class ShardingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int b = 0; b < 3; ++b) {
      dirs_.push_back(std::make_unique<TempDir>());
      backends_.push_back(std::make_unique<ServerProcess>(
          dirs_[b]->File("data"), dirs_[b]->File("log"),
          std::vector<std::string>{"--log_level=warn"}));
    }
    for (auto& backend : backends_) ASSERT_TRUE(backend->WaitUntilReady());
  }

  // Proxies to backends[b] for each b of `which`.
  std::unique_ptr<Nginx> StartProxy(const std::vector<int>& which) {
    std::vector<int> ports;
    for (int b : which) ports.push_back(backends_[b]->port());
    nginx_dirs_.push_back(std::make_unique<TempDir>());
    auto nginx = std::make_unique<Nginx>(*nginx_dirs_.back(), ports);
    // A new channel each time: one refused while nginx starts would back
    // off for seconds.
    for (int i = 0; i < 400; ++i) {
      if (absl::IsNotFound(Through(*nginx).GetModel("probe").status())) break;
      absl::SleepFor(absl::Milliseconds(25));
    }
    return nginx;
  }

  // A client through the proxy. (Not a FastReconnectingChannel: its short
  // connect timeout can end the proxy's handshake on a busy machine.)
  static Client Through(const Nginx& nginx) {
    return Client(
        grpc::CreateChannel(nginx.target(), grpc::InsecureChannelCredentials()),
        absl::Seconds(10));
  }

  Client Direct(int b) {
    return Client(FastReconnectingChannel(backends_[b]->target()),
                  absl::Seconds(10));
  }

  // Which backend holds each model, asked of the backends themselves.
  std::map<std::string, std::vector<int>> Homes() {
    std::map<std::string, std::vector<int>> homes;
    for (int b = 0; b < static_cast<int>(backends_.size()); ++b) {
      if (backends_[b] == nullptr) continue;
      absl::StatusOr<std::vector<v1::Model>> models = Direct(b).ListModels();
      EXPECT_TRUE(models.ok()) << models.status();
      if (!models.ok()) continue;
      for (const v1::Model& m : *models) homes[m.name()].push_back(b);
    }
    return homes;
  }

  std::vector<std::unique_ptr<TempDir>> dirs_;
  std::vector<std::unique_ptr<ServerProcess>> backends_;
  std::vector<std::unique_ptr<TempDir>> nginx_dirs_;
};

TEST_F(ShardingTest, EachModelLivesOnOneServerAndMovesOnlyWithItsServer) {
  auto proxy = StartProxy({0, 1, 2});
  Client client = Through(*proxy);
  const std::vector<LabeledExample> data = {
      {{1, 2}, 1}, {{2, 1}, -1}, {{0, 0}, -1}, {{-1, 3}, 1}};
  for (int i = 0; i < kModels; ++i) {
    ASSERT_TRUE(
        client.CreateModel(ModelName(i), TextAlgorithm("perceptron"), 2).ok());
  }
  // Every call about a model reaches the server that has it: on any other,
  // it would fail with NOT_FOUND.
  for (int i = 0; i < kModels; ++i) {
    std::unique_ptr<TrainingStream> stream = client.Train(ModelName(i));
    ASSERT_TRUE(stream->Send(data).ok());
    ASSERT_TRUE(stream->Receive().ok());
    ASSERT_TRUE(stream->Finish().ok()) << ModelName(i);
    EXPECT_TRUE(client.Predict(ModelName(i), {{1, 1}}).ok()) << ModelName(i);
    std::unique_ptr<PredictionStream> predictions =
        client.PredictStream(ModelName(i));
    v1::PredictStreamRequest request;
    request.set_model(ModelName(i));
    request.add_instances()->mutable_dense()->Add(1.0);
    request.mutable_instances(0)->mutable_dense()->Add(-1.0);
    EXPECT_TRUE(predictions->Predict(request).ok()) << ModelName(i);
    EXPECT_TRUE(predictions->Finish().ok());
    EXPECT_EQ(client.GetModel(ModelName(i))->stats().examples_seen(),
              data.size());
  }
  const std::map<std::string, std::vector<int>> homes = Homes();
  ASSERT_EQ(homes.size(), static_cast<size_t>(kModels));
  std::vector<int> per_backend(3);
  for (const auto& [name, where] : homes) {
    ASSERT_EQ(where.size(), 1u) << name << " is on more than one server";
    ++per_backend[where[0]];
    EXPECT_EQ(Direct(where[0]).GetModel(name)->stats().examples_seen(),
              data.size());
  }
  for (int b = 0; b < 3; ++b) {
    EXPECT_GT(per_backend[b], 0) << "server " << b << " got no models";
  }

  // Server 2 leaves the list: its models, and only they, route elsewhere.
  proxy.reset();
  proxy = StartProxy({0, 1});
  Client two = Through(*proxy);
  for (const auto& [name, where] : homes) {
    absl::StatusOr<v1::Model> model = two.GetModel(name);
    if (where[0] == 2) {
      EXPECT_TRUE(absl::IsNotFound(model.status())) << name;
      // Restored by its export, through the proxy, to its new server.
      absl::StatusOr<std::string> file = Direct(2).ExportModel(name);
      ASSERT_TRUE(file.ok()) << file.status();
      ASSERT_TRUE(two.ImportModel(name, *file).ok()) << name;
      EXPECT_EQ(two.GetModel(name)->stats().examples_seen(), data.size());
    } else {
      EXPECT_TRUE(model.ok()) << name << " moved: " << model.status();
    }
  }
  backends_[2].reset();
  for (const auto& [name, where] : Homes()) {
    EXPECT_EQ(where.size(), 1u) << name;
  }
}

TEST_F(ShardingTest, AServerThatIsDownFailsOnlyItsOwnModels) {
  auto proxy = StartProxy({0, 1, 2});
  Client client = Through(*proxy);
  for (int i = 0; i < kModels; ++i) {
    ASSERT_TRUE(
        client.CreateModel(ModelName(i), TextAlgorithm("perceptron"), 2).ok());
  }
  const std::map<std::string, std::vector<int>> homes = Homes();
  const int down_port = backends_[1]->port();
  backends_[1]->Stop(SIGKILL);
  backends_[1].reset();
  Client::RetryPolicy once;
  once.max_attempts = 1;
  client.set_retry_policy(once);
  for (const auto& [name, where] : homes) {
    absl::StatusOr<v1::Model> model = client.GetModel(name);
    if (where[0] == 1) {
      // A gRPC UNAVAILABLE from the proxy, naming the shard, not an HTTP
      // error page.
      EXPECT_TRUE(absl::IsUnavailable(model.status())) << name;
      EXPECT_THAT(model.status().message(),
                  HasSubstr(absl::StrCat("the halfspace server for this "
                                         "model (127.0.0.1:",
                                         down_port, ") is down")))
          << name;
      // Not created on another server in its place.
      EXPECT_TRUE(absl::IsUnavailable(
          client.CreateModel(name, TextAlgorithm("perceptron"), 2).status()))
          << name;
    } else {
      EXPECT_TRUE(model.ok()) << name << ": " << model.status();
    }
  }
  for (const auto& [name, where] : Homes()) {
    EXPECT_EQ(where.size(), 1u) << name;
  }
}

}  // namespace
}  // namespace halfspace
