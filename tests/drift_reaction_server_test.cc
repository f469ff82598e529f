// A model's drift reaction over real gRPC: created with
// `drift { adwin {} challenge {} }`, it reports in each example's result
// when a challenger starts and when it replaces the model; ModelStats
// shows the challenger's paired counts and the switches; RollBackModel
// puts the replaced weights back, once; the metrics and the log tell of
// it; and a crash copy or a restart taken anywhere in the stream makes the
// same decisions at the same examples and ends with bit-identical weights.
// SetDriftDetection gives a model a detector and reaction later (or takes
// them away), durably, while its training streams go on.

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model_spec.h"
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
using Event = v1::DriftState::Reaction::Event;

// 4 features; the concept flips (y becomes −y) after 3000 examples.
std::vector<LabeledPoint> Reversal() {
  return Reversed(Stationary(6000, 4, 0.05, 11), 3000);
}

v1::CreateModelRequest ReactingModel(const std::string& name,
                                     const std::string& drift_text) {
  v1::CreateModelRequest request;
  request.set_model(name);
  *request.mutable_algorithm() = TextAlgorithm("averaged_perceptron");
  request.set_dimension(4);
  if (drift_text.empty()) return request;  // no detector
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      drift_text, request.mutable_drift()));
  return request;
}

// Each example's reaction event, and whether it was a mistake (+100),
// for points [from, to) sent in requests of 100.
std::vector<int> Events(Client& client, const std::string& model,
                        const std::vector<LabeledPoint>& points, size_t from,
                        size_t to) {
  std::vector<int> events;
  for (const v1::ExampleResult& r :
       TrainPoints(client, model, points, from, to)) {
    events.push_back(r.reaction() + (r.margin() <= 0 ? 100 : 0));
  }
  return events;
}

// The positions (1-based, from `from`) where `events` holds `event`.
std::vector<size_t> PositionsOf(const std::vector<int>& events, Event event,
                                size_t from = 0) {
  std::vector<size_t> at;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] % 100 == event) at.push_back(from + i + 1);
  }
  return at;
}

// The reaction's state without its times (each server logs its own).
std::string Untimed(v1::DriftState::Reaction r) {
  r.clear_started_time();
  r.clear_last_switch_time();
  return r.SerializeAsString();
}

std::vector<double> WeightsAt(const std::string& target,
                              const std::string& model) {
  std::unique_ptr<v1::HalfspaceService::Stub> stub =
      v1::HalfspaceService::NewStub(Connected(
          grpc::CreateChannel(target, grpc::InsecureChannelCredentials())));
  return Weights(*stub, model);
}

TEST(DriftReactionServerTest, ReportsItsSettingsAndRefusesBadOnes) {
  TestServer server;
  Client client = server.NewClient();
  absl::StatusOr<v1::Model> model =
      client.CreateModel(ReactingModel("m", "adwin {} challenge {}"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->drift().challenge().alpha(), 0.05);
  ASSERT_TRUE(model->stats().drift().has_reaction());
  EXPECT_FALSE(model->stats().drift().reaction().challenging());
  model = client.CreateModel(
      ReactingModel("strict", "ddm {} challenge { alpha: 0.001 }"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->drift().challenge().alpha(), 0.001);
  model = client.CreateModel(ReactingModel("none", "adwin {}"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->drift().has_challenge());
  EXPECT_FALSE(model->stats().drift().has_reaction());

  model = client.CreateModel(
      ReactingModel("bad", "adwin {} challenge { alpha: 1.5 }"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("challenge.alpha is 1.5"));
  v1::CreateModelRequest multiclass =
      ReactingModel("bad", "adwin {} challenge {}");
  *multiclass.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  model = client.CreateModel(multiclass);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("binary models"));
}

// A crash copy taken while the challenger runs, and one after the switch,
// recover to the same decisions at the same examples, the same weights
// bit for bit, and the same reaction; a restart keeps them.
TEST(DriftReactionServerTest, ACrashOrARestartDecidesAlike) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(
      client.CreateModel(ReactingModel("m", "adwin {} challenge {}")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  const std::vector<int> first = Events(client, "m", points, 0, 3060);
  ASSERT_FALSE(
      PositionsOf(first, v1::DriftState::Reaction::EVENT_STARTED).empty());
  CrashCopy running(server.data_dir());
  const std::vector<int> rest =
      Events(client, "m", points, 3060, points.size());
  const std::vector<size_t> switches =
      PositionsOf(rest, v1::DriftState::Reaction::EVENT_SWITCHED, 3060);
  ASSERT_FALSE(switches.empty());
  EXPECT_LT(switches[0], 3700u);
  CrashCopy switched(server.data_dir());

  absl::StatusOr<v1::Model> expected = client.GetModel("m");
  ASSERT_TRUE(expected.ok());
  const v1::DriftState::Reaction& r = expected->stats().drift().reaction();
  EXPECT_EQ(r.switches(), switches.size());
  EXPECT_EQ(r.last_switch_at(), switches.back());
  EXPECT_LT(r.last_switch_p_value(), 0.05);
  EXPECT_TRUE(r.can_roll_back());
  EXPECT_TRUE(r.has_last_switch_time());
  const std::vector<double> weights = WeightsAt(server.target(), "m");

  Client recovered = running.Start();
  EXPECT_EQ(Events(recovered, "m", points, 3060, points.size()), rest);
  Client after_switch = switched.Start();
  server.Restart();
  client = server.NewClient();
  for (auto [c, target] :
       {std::pair<Client*, std::string>{&recovered, running.target()},
        {&after_switch, switched.target()},
        {&client, server.target()}}) {
    absl::StatusOr<v1::Model> m = c->GetModel("m");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(Untimed(m->stats().drift().reaction()), Untimed(r));
    EXPECT_TRUE(BitIdentical(WeightsAt(target, "m"), weights));
  }
}

TEST(DriftReactionServerTest, RollBackPutsTheReplacedWeightsBackOnce) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(
      client.CreateModel(ReactingModel("m", "adwin {} challenge {}")).ok());
  ASSERT_TRUE(client.CreateModel(ReactingModel("plain", "adwin {}")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  const std::vector<int> events = Events(client, "m", points, 0, 4000);
  ASSERT_FALSE(
      PositionsOf(events, v1::DriftState::Reaction::EVENT_SWITCHED).empty());
  const std::vector<double> switched = WeightsAt(server.target(), "m");

  absl::StatusOr<v1::Model> rolled = client.RollBackModel("m");
  ASSERT_TRUE(rolled.ok()) << rolled.status();
  EXPECT_FALSE(rolled->stats().drift().reaction().can_roll_back());
  EXPECT_EQ(rolled->stats().examples_seen(), 4000u);
  const std::vector<double> back = WeightsAt(server.target(), "m");
  EXPECT_FALSE(BitIdentical(back, switched));

  absl::StatusOr<v1::Model> again = client.RollBackModel("m");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("no weights to roll back"));
  EXPECT_EQ(client.RollBackModel("plain").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.RollBackModel("nobody").status().code(),
            absl::StatusCode::kNotFound);

  // The roll-back is in the log: a crash copy holds it.
  CrashCopy crash(server.data_dir());
  crash.Start();
  EXPECT_TRUE(BitIdentical(WeightsAt(crash.target(), "m"), back));
}

TEST(DriftReactionServerTest, MetricsAndTheLogTellOfTheSwitch) {
  std::ostringstream out;
  auto saved = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  spdlog::set_default_logger(logger);
  {
    TestServer server(
        [](ServerOptions& o) { o.metrics_listen = "127.0.0.1:0"; });
    Client client = server.NewClient();
    ASSERT_TRUE(
        client.CreateModel(ReactingModel("m", "adwin {} challenge {}")).ok());
    const std::vector<LabeledPoint> points = Reversal();
    const std::vector<int> events = Events(client, "m", points, 0, 4000);
    const std::vector<size_t> switches =
        PositionsOf(events, v1::DriftState::Reaction::EVENT_SWITCHED);
    ASSERT_FALSE(switches.empty());
    const std::string text =
        HttpGet(server.server().metrics_port(), "/metrics");
    EXPECT_THAT(text, HasSubstr(absl::StrCat(
                          "halfspace_model_challenger_switches_total{model="
                          "\"m\"} ",
                          switches.size())));
    EXPECT_THAT(text, HasSubstr("halfspace_model_challenging{model=\"m\"}"));
    EXPECT_THAT(out.str(),
                HasSubstr(absl::StrCat("model 'm': the challenger replaced "
                                       "the model's weights at example ",
                                       switches[0])));
    EXPECT_THAT(out.str(), HasSubstr("model 'm': a challenger starts"));
  }
  spdlog::set_default_logger(saved);
}

v1::DriftDetection DriftText(const std::string& text) {
  v1::DriftDetection drift;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &drift));
  return drift;
}

// Each example's reaction event (+100 for a mistake) of the responses to
// points [from, to) sent on `stream` in requests of 100.
std::vector<int> StreamEvents(TrainingStream& stream,
                              const std::vector<LabeledPoint>& points,
                              size_t from, size_t to) {
  std::vector<int> events;
  for (size_t i = from; i < to; i += 100) {
    v1::TrainRequest request;
    for (size_t j = i; j < std::min(to, i + 100); ++j) {
      AddExample(request, points[j].x, points[j].y);
    }
    EXPECT_TRUE(stream.Send(request).ok());
    absl::StatusOr<v1::TrainResponse> response = stream.Receive();
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) break;
    for (const v1::ExampleResult& r : response->results()) {
      events.push_back(r.reaction() + (r.margin() <= 0 ? 100 : 0));
    }
  }
  return events;
}

// A detector and reaction set after 500 examples, while a training
// stream stays open: the same stream's next examples meet them, the
// reversal at 3000 is detected and the challenger takes over; a crash
// copy taken right after the change, and a restart, decide alike.
TEST(DriftReactionServerTest, ADetectorSetLaterReactsOnTheOpenStream) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(ReactingModel("m", "")).ok());
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  const std::vector<int> before = StreamEvents(*stream, points, 0, 500);
  EXPECT_EQ(client.GetModel("m")->stats().has_drift(), false);

  absl::StatusOr<v1::Model> set = client.SetDriftDetection(
      "m", DriftText("adwin { delta: 0.002 } challenge { alpha: 0.05 }"));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->drift().adwin().delta(), 0.002);
  EXPECT_TRUE(set->drift().has_challenge());
  EXPECT_EQ(set->stats().examples_seen(), 500u);
  EXPECT_EQ(set->stats().drift().drifts(), 0u);
  EXPECT_FALSE(set->stats().drift().reaction().challenging());
  CrashCopy just_set(server.data_dir());

  const std::vector<int> after =
      StreamEvents(*stream, points, 500, points.size());
  EXPECT_TRUE(stream->Finish().ok());
  const std::vector<size_t> switches =
      PositionsOf(after, v1::DriftState::Reaction::EVENT_SWITCHED, 500);
  ASSERT_FALSE(switches.empty());
  EXPECT_GT(switches[0], 3000u);
  EXPECT_LT(switches[0], 3700u);
  absl::StatusOr<v1::Model> expected = client.GetModel("m");
  ASSERT_TRUE(expected.ok());
  const std::vector<double> weights = WeightsAt(server.target(), "m");

  Client recovered = just_set.Start();
  EXPECT_TRUE(recovered.GetModel("m")->drift().has_challenge());
  EXPECT_EQ(Events(recovered, "m", points, 500, points.size()), after);
  server.Restart();
  client = server.NewClient();
  for (auto [c, target] :
       {std::pair<Client*, std::string>{&recovered, just_set.target()},
        {&client, server.target()}}) {
    absl::StatusOr<v1::Model> m = c->GetModel("m");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->drift().SerializeAsString(),
              expected->drift().SerializeAsString());
    EXPECT_EQ(Untimed(m->stats().drift().reaction()),
              Untimed(expected->stats().drift().reaction()));
    EXPECT_TRUE(BitIdentical(WeightsAt(target, "m"), weights));
  }

  // Taken away: no detector, no roll-back, and so after a crash.
  absl::StatusOr<v1::Model> removed = client.SetDriftDetection("m", {});
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_FALSE(removed->has_drift());
  EXPECT_FALSE(removed->stats().has_drift());
  EXPECT_EQ(client.RollBackModel("m").status().code(),
            absl::StatusCode::kFailedPrecondition);
  CrashCopy crash(server.data_dir());
  Client crashed = crash.Start();
  EXPECT_FALSE(crashed.GetModel("m")->has_drift());
  EXPECT_TRUE(BitIdentical(WeightsAt(crash.target(), "m"), weights));
}

TEST(DriftReactionServerTest, SetDriftDetectionRefusesWhatCreateModelWould) {
  // Room for a model of dimension 100000, not for its reaction's two more
  // weight vectors.
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  spec.dimension = 100000;
  const int64_t limit = 2 * ClassBytes(spec);
  TestServer server(
      [limit](ServerOptions& o) { o.limits.max_model_bytes = limit; });
  Client client = server.NewClient();
  v1::CreateModelRequest big = ReactingModel("big", "");
  big.set_dimension(100000);
  ASSERT_TRUE(client.CreateModel(big).ok());
  absl::StatusOr<v1::Model> r =
      client.SetDriftDetection("big", DriftText("adwin {} challenge {}"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("max_model_bytes"));
  EXPECT_FALSE(client.GetModel("big")->has_drift());
  r = client.SetDriftDetection("big", DriftText("ddm {}"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->drift().has_ddm());

  v1::CreateModelRequest multiclass = ReactingModel("classes", "");
  *multiclass.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  ASSERT_TRUE(client.CreateModel(multiclass).ok());
  r = client.SetDriftDetection("classes", DriftText("adwin {} challenge {}"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("binary models"));
  r = client.SetDriftDetection("big",
                               DriftText("adwin { delta: 1.5 } challenge {}"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      client.SetDriftDetection("nobody", DriftText("adwin {}")).status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace halfspace
