// Drift detection over real gRPC: a model created with a detector reports
// its settings in effect, a signal in every example's result and its
// findings in ModelStats; the same stream after a crash (the log replayed)
// or a restart (the snapshot read) detects at the same examples.

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/drift_streams.h"
#include "tests/http_get.h"
#include "tests/test_server.h"
#include "tests/train_points.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 4 features; the concept flips (y becomes −y) after 3000 examples.
std::vector<LabeledPoint> Reversal() {
  return Reversed(Stationary(6000, 4, 0.05, 11), 3000);
}

v1::CreateModelRequest DriftModel(const std::string& name,
                                  const std::string& drift_text) {
  v1::CreateModelRequest request;
  request.set_model(name);
  *request.mutable_algorithm() = TextAlgorithm("averaged_perceptron");
  request.set_dimension(4);
  if (!drift_text.empty()) {
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        drift_text, request.mutable_drift()));
  }
  return request;
}

// What each example's result said of drift (-1: nothing), for points
// [from, to), sent in requests of 100.
std::vector<int> Signals(Client& client, const std::string& model,
                         const std::vector<LabeledPoint>& points, size_t from,
                         size_t to) {
  std::vector<int> signals;
  for (const v1::ExampleResult& r :
       TrainPoints(client, model, points, from, to)) {
    signals.push_back(r.has_drift() ? r.drift() : -1);
  }
  return signals;
}

// The positions (1-based, from `from`) of the drifts `signals` holds.
std::vector<size_t> Drifts(const std::vector<int>& signals, size_t from) {
  std::vector<size_t> at;
  for (size_t i = 0; i < signals.size(); ++i) {
    if (signals[i] == v1::DriftState::SIGNAL_DRIFT) at.push_back(from + i + 1);
  }
  return at;
}

TEST(DriftServerTest, ReportsTheSettingsInEffect) {
  TestServer server;
  Client client = server.NewClient();
  absl::StatusOr<v1::Model> model =
      client.CreateModel(DriftModel("m", "adwin { delta: 0.001 }"));
  ASSERT_TRUE(model.ok()) << model.status();
  const v1::DriftDetection& d = model->drift();
  EXPECT_EQ(d.adwin().delta(), 0.001);
  EXPECT_EQ(d.adwin().warning_delta(), 0.01);
  EXPECT_EQ(d.adwin().clock(), 32u);
  EXPECT_EQ(d.input(), v1::DriftDetection::INPUT_MISTAKES);
  model =
      client.CreateModel(DriftModel("p", "page_hinkley {} input: INPUT_LOSS"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->drift().page_hinkley().threshold(), 50);
  EXPECT_EQ(model->drift().page_hinkley().alpha(), 1 - 0.0001);
  EXPECT_EQ(model->drift().input(), v1::DriftDetection::INPUT_LOSS);
  model = client.CreateModel(DriftModel("none", ""));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->has_drift());
  EXPECT_FALSE(model->stats().has_drift());
}

TEST(DriftServerTest, RefusesBadSettingsNamingThem) {
  TestServer server;
  Client client = server.NewClient();
  absl::StatusOr<v1::Model> model =
      client.CreateModel(DriftModel("m", "input: INPUT_LOSS"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("no method"));
  model = client.CreateModel(DriftModel("m", "adwin { delta: 2 }"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("drift.adwin.delta is 2"));
  model = client.CreateModel(DriftModel("m", "ddm {} input: INPUT_LOSS"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  model = client.CreateModel(
      DriftModel("m", "page_hinkley { threshold: 5 warning_threshold: 9 }"));
  EXPECT_THAT(model.status().message(), HasSubstr("warning_threshold"));
}

TEST(DriftServerTest, EachResultCarriesTheSignalAndStatsTheFindings) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(DriftModel("m", "ddm {}")).ok());
  ASSERT_TRUE(client.CreateModel(DriftModel("plain", "")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  const std::vector<int> signals = Signals(client, "m", points, 0, 3500);
  ASSERT_EQ(signals.size(), 3500u);
  for (int s : signals) EXPECT_GT(s, v1::DriftState::SIGNAL_UNSPECIFIED);
  const std::vector<size_t> drifts = Drifts(signals, 0);
  ASSERT_FALSE(drifts.empty());
  EXPECT_GT(drifts[0], 3000u);
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  ASSERT_TRUE(model.ok());
  const v1::DriftState& state = model->stats().drift();
  EXPECT_EQ(state.drifts(), drifts.size());
  EXPECT_EQ(state.last_drift_at(), drifts.back());
  EXPECT_GE(state.warnings(), 1u);
  EXPECT_LE(state.last_warning_at(), drifts.front());
  EXPECT_EQ(state.state(), v1::DriftState::SIGNAL_DRIFT);  // within 1000
  EXPECT_EQ(state.width(), static_cast<int64_t>(3500 - drifts.back()));
  for (int s : Signals(client, "plain", points, 0, 200)) {
    EXPECT_EQ(s, -1);
  }
}

// The detector's state is in the log's replay and in the snapshots: a
// crash copy taken mid-stream, and a restart, go on detecting exactly as
// the server that never stopped; and the times of its findings are the
// logged times of their requests, so a crash or a restart reports the same.
TEST(DriftServerTest, ACrashOrARestartDetectsAtTheSamePositions) {
  for (const char* method :
       {"adwin { clock: 1 }", "page_hinkley {}", "ddm {}"}) {
    SCOPED_TRACE(method);
    const int64_t start = absl::ToUnixSeconds(absl::Now());
    TestServer server;
    Client client = server.NewClient();
    ASSERT_TRUE(client.CreateModel(DriftModel("m", method)).ok());
    const std::vector<LabeledPoint> points = Reversal();
    Signals(client, "m", points, 0, 3010);
    CrashCopy crash(server.data_dir());
    const std::vector<int> expected =
        Signals(client, "m", points, 3010, points.size());
    ASSERT_FALSE(Drifts(expected, 3010).empty());
    Client recovered = crash.Start();
    EXPECT_EQ(Signals(recovered, "m", points, 3010, points.size()), expected);
    absl::StatusOr<v1::Model> a = client.GetModel("m");
    absl::StatusOr<v1::Model> b = recovered.GetModel("m");
    ASSERT_TRUE(a.ok() && b.ok());
    const v1::DriftState found = a->stats().drift();
    ASSERT_TRUE(found.has_last_drift_time());
    EXPECT_GE(found.last_drift_time().seconds(), start);
    EXPECT_LE(found.last_drift_time().seconds(),
              absl::ToUnixSeconds(absl::Now()));
    // The same findings; the times are of the requests each server took.
    v1::DriftState found_again = b->stats().drift();
    ASSERT_TRUE(found_again.has_last_drift_time());
    for (v1::DriftState* state :
         {a->mutable_stats()->mutable_drift(), &found_again}) {
      state->clear_last_warning_time();
      state->clear_last_drift_time();
    }
    EXPECT_EQ(a->stats().drift().SerializeAsString(),
              found_again.SerializeAsString());
    // After a crash now, and after a restart, the times too.
    CrashCopy later(server.data_dir());
    Client after_crash = later.Start();
    server.Restart();
    client = server.NewClient();
    for (Client* c : {&client, &after_crash}) {
      absl::StatusOr<v1::Model> m = c->GetModel("m");
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->stats().drift().SerializeAsString(),
                found.SerializeAsString());
    }
  }
}

TEST(DriftServerTest, MetricsCountWhatEachDetectorFound) {
  TestServer server([](ServerOptions& o) { o.metrics_listen = "127.0.0.1:0"; });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(DriftModel("m", "ddm {}")).ok());
  ASSERT_TRUE(client.CreateModel(DriftModel("plain", "")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  Signals(client, "m", points, 0, 3500);
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  ASSERT_TRUE(model.ok());
  const v1::DriftState& state = model->stats().drift();
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_THAT(text, HasSubstr("halfspace_model_drift_state{model=\"m\"} 2"));
  EXPECT_THAT(
      text, HasSubstr(absl::StrCat("halfspace_model_drifts_total{model=\"m\"} ",
                                   state.drifts())));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "halfspace_model_drift_warnings_total{model=\"m\"} ",
                        state.warnings())));
  EXPECT_THAT(text, Not(HasSubstr("drift_state{model=\"plain\"}")));
}

// The lines the server logs while it lives, in place of the default
// logger's.
class CapturedLog {
 public:
  CapturedLog() : saved_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(saved_); }

  // How many lines hold `text`.
  int Count(const std::string& text) const {
    std::istringstream lines(out_.str());
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      n += line.find(text) != std::string::npos ? 1 : 0;
    }
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> saved_;
};

// A line for each drift and for each warning zone, where it began; none
// again when recovery replays them.
TEST(DriftServerTest, LogsEachDetectionOnce) {
  CapturedLog log;
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(DriftModel("m", "ddm {}")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  Signals(client, "m", points, 0, points.size());
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  ASSERT_TRUE(model.ok());
  const v1::DriftState& state = model->stats().drift();
  ASSERT_GT(state.drifts(), 0u);
  EXPECT_EQ(log.Count("model 'm': drift detected at example"),
            static_cast<int>(state.drifts()));
  EXPECT_EQ(log.Count(absl::StrCat("warning model 'm': drift detected at "
                                   "example ",
                                   state.last_drift_at())),
            1);
  EXPECT_EQ(log.Count("model 'm': drift warning at example"),
            static_cast<int>(state.warnings()));
  EXPECT_EQ(log.Count(absl::StrCat("info model 'm': drift warning at example ",
                                   state.last_warning_at())),
            1);
  CrashCopy crash(server.data_dir());
  Client recovered = crash.Start();
  ASSERT_TRUE(recovered.GetModel("m").ok());
  EXPECT_EQ(log.Count("model 'm': drift detected at example"),
            static_cast<int>(state.drifts()));
}

}  // namespace
}  // namespace halfspace
