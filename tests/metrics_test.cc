// Metrics: Prometheus text over HTTP, and the same numbers from GetStats.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_get.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

v1::GetStatsResponse Stats(const TestServer& server,
                           const std::string& token = "") {
  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::GetStatsResponse stats;
  EXPECT_TRUE(stub->GetStats(&context, v1::GetStatsRequest(), &stats).ok());
  return stats;
}

const v1::CallStats* FindCalls(const v1::GetStatsResponse& stats,
                               const std::string& method,
                               const std::string& code) {
  for (const v1::CallStats& c : stats.calls()) {
    if (c.method() == method && c.code() == code) return &c;
  }
  return nullptr;
}

TEST(MetricsTest, PrometheusAndGetStatsCountTheSameThings) {
  TestServer server([](ServerOptions& o) {
    o.metrics_listen = "127.0.0.1:0";
    o.limits.max_examples_per_request = 3;
  });
  ASSERT_NE(server.server().metrics_port(), 0);
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  // Three examples, two mistakes: w = 0 predicts +1 for the first, then
  // w = -1 predicts -1 for x = 1 (right), then +1 for x = -1 (wrong).
  ASSERT_TRUE(stream->Send({{{1}, -1}, {{1}, -1}, {{-1}, -1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Send({{{1}, 1}, {{1}, 1}, {{1}, 1}, {{1}, 1}}).ok());
  EXPECT_FALSE(stream->Receive().ok());  // four examples: over the limit
  EXPECT_TRUE(absl::IsResourceExhausted(stream->Finish()));
  EXPECT_TRUE(absl::IsNotFound(client.GetModel("nope").status()));
  EXPECT_TRUE(client.Predict("m", {{1}, {2}}).ok());

  // A stream leaves the gauge when the server frees it, which may come a
  // moment after the client has its status.
  std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       text.find("halfspace_open_streams 0") == std::string::npos &&
       absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(10));
    text = HttpGet(server.server().metrics_port(), "/metrics");
  }
  EXPECT_THAT(text, HasSubstr("halfspace_model_examples_total{model=\"m\"} 3"));
  EXPECT_THAT(text, HasSubstr("halfspace_model_mistakes_total{model=\"m\"} 2"));
  EXPECT_THAT(text, HasSubstr("halfspace_rpc_duration_seconds_count{code=\"NOT_"
                              "FOUND\",method=\"GetModel\"} 1"));
  EXPECT_THAT(text, HasSubstr("halfspace_rpc_duration_seconds_count{code="
                              "\"RESOURCE_EXHAUSTED\",method=\"Train\"} 1"));
  EXPECT_THAT(text, HasSubstr("halfspace_limit_refusals_total{limit=\"max_"
                              "examples_per_request\"} 1"));
  EXPECT_THAT(text, HasSubstr("halfspace_log_sync_seconds_count"));
  EXPECT_THAT(text, HasSubstr("halfspace_open_streams 0"));
  EXPECT_THAT(text, HasSubstr("halfspace_models 1"));

  const v1::GetStatsResponse stats = Stats(server);
  ASSERT_EQ(stats.models_size(), 1);
  EXPECT_EQ(stats.models(0).name(), "m");
  EXPECT_EQ(stats.models(0).stats().examples_seen(), 3u);
  EXPECT_EQ(stats.models(0).stats().mistakes(), 2u);
  EXPECT_NEAR(stats.models(0).stats().progressive_accuracy(), 1.0 / 3, 1e-12);
  EXPECT_EQ(stats.models(0).memory_bytes(), stats.model_memory_bytes());
  EXPECT_GT(stats.model_memory_bytes(), 0);
  const v1::CallStats* not_found = FindCalls(stats, "GetModel", "NOT_FOUND");
  ASSERT_NE(not_found, nullptr);
  EXPECT_EQ(not_found->count(), 1u);
  ASSERT_NE(FindCalls(stats, "Predict", "OK"), nullptr);
  EXPECT_EQ(FindCalls(stats, "Predict", "OK")->count(), 1u);
  ASSERT_EQ(stats.refusals_size(), 1);
  EXPECT_EQ(stats.refusals(0).limit(), "max_examples_per_request");
  EXPECT_EQ(stats.refusals(0).count(), 1u);
  EXPECT_GE(stats.log_syncs(), 2u);  // the create and the first request
  EXPECT_EQ(stats.model_memory_limit_bytes(),
            DefaultServerLimits().max_total_model_bytes);
}

// The value of the sample `series` (its name and labels) in Prometheus
// text; NaN when the text has none.
double SampleValue(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    double value = 0;
    if (absl::ConsumePrefix(&line, series + " ") &&
        absl::SimpleAtod(line, &value)) {
      return value;
    }
  }
  return std::nan("");
}

// Passive-aggressive updates on a right prediction with a margin under 1:
// the accuracy counts the mistakes, not the updates. And the memory gauge
// without a label is all models' memory.
TEST(MetricsTest, AccuracyCountsMistakesAndMemoryAddsUp) {
  TestServer server([](ServerOptions& o) { o.metrics_listen = "127.0.0.1:0"; });
  Client client = server.NewClient();
  ASSERT_TRUE(
      client.CreateModel("pa", TextAlgorithm("passive_aggressive"), 1).ok());
  ASSERT_TRUE(client.CreateModel("p", TextAlgorithm("perceptron"), 4).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("pa");
  // f = 0 predicts +1: right, and updated (margin 0 < 1).
  ASSERT_TRUE(stream->Send({{{1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Finish().ok());
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_EQ(SampleValue(text, "halfspace_model_updates_total{model=\"pa\"}"),
            1);
  EXPECT_EQ(
      SampleValue(text, "halfspace_model_progressive_accuracy{model=\"pa\"}"),
      1.0);
  const v1::GetStatsResponse stats = Stats(server);
  ASSERT_EQ(stats.models_size(), 2);
  EXPECT_EQ(SampleValue(text, "halfspace_model_memory_bytes"),
            static_cast<double>(stats.model_memory_bytes()));
  EXPECT_EQ(stats.model_memory_bytes(),
            stats.models(0).memory_bytes() + stats.models(1).memory_bytes());
}

TEST(MetricsTest, RememberedExamplesAreCountedPerModel) {
  TestServer server([](ServerOptions& o) { o.metrics_listen = "127.0.0.1:0"; });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();
  grpc::ClientContext predict;
  v1::PredictRequest request;
  request.set_model("m");
  request.set_remember(true);
  request.add_instances()->add_dense(1);
  request.add_instances()->add_dense(2);
  v1::PredictResponse predicted;
  ASSERT_TRUE(stub->Predict(&predict, request, &predicted).ok());
  grpc::ClientContext feedback;
  v1::FeedbackRequest labels;
  labels.set_model("m");
  labels.add_feedback()->set_example_id(predicted.predictions(0).example_id());
  labels.mutable_feedback(0)->set_label(1);
  v1::FeedbackResponse learned;
  ASSERT_TRUE(stub->Feedback(&feedback, labels, &learned).ok());
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_THAT(text,
              HasSubstr("halfspace_model_pending_examples{model=\"m\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("halfspace_model_pending_joined_total{model=\"m\"} 1"));
  EXPECT_THAT(
      text, HasSubstr("halfspace_model_pending_expired_total{model=\"m\"} 0"));
  EXPECT_THAT(text, HasSubstr("halfspace_model_examples_total{model=\"m\"} 1"));
}

TEST(MetricsTest, InBandRefusalsAreCountedByLimit) {
  TestServer server([](ServerOptions& o) { o.limits.max_classes = 2; });
  Client client = server.NewClient();
  v1::CreateModelRequest create;
  create.set_model("m");
  *create.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  create.set_dimension(1);
  ASSERT_TRUE(client.CreateModel(create).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream
                  ->Send({{{1}, 0, 1.0, "a"},
                          {{1}, 0, 1.0, "b"},
                          {{1}, 0, 1.0, "c"},
                          {{1}, 0, 1.0, "d"}})
                  .ok());
  ASSERT_TRUE(stream->Receive().ok());
  const v1::GetStatsResponse stats = Stats(server);
  ASSERT_EQ(stats.refusals_size(), 1);
  EXPECT_EQ(client.GetStats()->refusals(0).count(), 2u);  // the client's call
  EXPECT_EQ(stats.refusals(0).limit(), "max_classes");
  EXPECT_EQ(stats.refusals(0).count(), 2u);
  EXPECT_EQ(stats.open_streams(), 1);
}

TEST(MetricsTest, AServerWhoseMetricsPortIsTakenDoesNotStart) {
  TestServer first([](ServerOptions& o) { o.metrics_listen = "127.0.0.1:0"; });
  ServerOptions options;
  TempDir dir;
  options.listen_address = "127.0.0.1:0";
  options.data_dir = dir.path();
  options.metrics_listen =
      absl::StrCat("127.0.0.1:", first.server().metrics_port());
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(options);
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("--metrics_listen"));
}

}  // namespace
}  // namespace halfspace
