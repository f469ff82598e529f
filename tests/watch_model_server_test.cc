// WatchModel over real gRPC: a watcher is told first the model's drift
// state, then each warning, drift and step of its reaction at the position
// the examples' results report it, and a roll-back; a watch resumes from a
// position with the events kept there; it ends with NOT_FOUND when the
// model is deleted and with UNAVAILABLE when the server shuts down; after
// a restart the server says its history no longer reaches back before the
// snapshot.

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/drift_streams.h"
#include "tests/test_server.h"
#include "tests/train_points.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

v1::CreateModelRequest ReactingModel(const std::string& name) {
  v1::CreateModelRequest request;
  request.set_model(name);
  *request.mutable_algorithm() = TextAlgorithm("averaged_perceptron");
  request.set_dimension(4);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "adwin {} challenge {}", request.mutable_drift()));
  return request;
}

struct Seen {
  v1::ModelEvent::Kind kind;
  uint64_t position;
  bool operator==(const Seen& other) const {
    return kind == other.kind && position == other.position;
  }
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << v1::ModelEvent::Kind_Name(s.kind) << "@" << s.position;
}

// The drifts and the reaction's steps the results report, in order, for
// results of examples from + 1, from + 2, ...
std::vector<Seen> Reported(const std::vector<v1::ExampleResult>& results,
                           uint64_t from) {
  std::vector<Seen> seen;
  for (size_t i = 0; i < results.size(); ++i) {
    const v1::ExampleResult& r = results[i];
    const uint64_t at = from + i + 1;
    if (r.drift() == v1::DriftState::SIGNAL_DRIFT) {
      seen.push_back({v1::ModelEvent::KIND_DRIFT, at});
    }
    switch (r.reaction()) {
      case v1::DriftState::Reaction::EVENT_STARTED:
        seen.push_back({v1::ModelEvent::KIND_CHALLENGER_STARTED, at});
        break;
      case v1::DriftState::Reaction::EVENT_SWITCHED:
        seen.push_back({v1::ModelEvent::KIND_SWITCHED, at});
        break;
      case v1::DriftState::Reaction::EVENT_DROPPED:
        seen.push_back({v1::ModelEvent::KIND_CHALLENGER_DROPPED, at});
        break;
      default:
        break;
    }
  }
  return seen;
}

// Reads events until `count` that are not warnings and `warnings` warnings
// have come; returns those that are not warnings.
std::vector<Seen> ReadEvents(ModelWatch& watch, size_t count,
                             uint64_t warnings = 0,
                             std::vector<v1::ModelEvent>* all = nullptr) {
  std::vector<Seen> seen;
  while (seen.size() < count || warnings > 0) {
    absl::StatusOr<v1::ModelEvent> event = watch.Next();
    EXPECT_TRUE(event.ok()) << event.status();
    if (!event.ok()) break;
    if (all != nullptr) all->push_back(*event);
    if (event->kind() == v1::ModelEvent::KIND_WARNING) {
      EXPECT_GT(warnings, 0u) << "more warnings than the model counted";
      if (warnings-- == 0) break;
      continue;
    }
    seen.push_back({event->kind(), event->position()});
  }
  return seen;
}

TEST(WatchModelServerTest, TellsEachEventWhereTheResultsReportIt) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(ReactingModel("m")).ok());
  ASSERT_TRUE(client.SetAlias("live", "m").ok());
  std::unique_ptr<ModelWatch> watch = client.WatchModel("live");
  absl::StatusOr<v1::WatchModelResponse> first = watch->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->model(), "m");
  EXPECT_TRUE(first->complete());
  EXPECT_EQ(first->drift().drifts(), 0u);
  EXPECT_TRUE(first->drift().has_reaction());

  const std::vector<LabeledPoint> points =
      Reversed(Stationary(6000, 4, 0.05, 11), 3000);
  const std::vector<Seen> expected =
      Reported(TrainPoints(client, "m", points, 0, points.size()), 0);
  ASSERT_GE(expected.size(), 3u);
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  const v1::DriftState& state = model->stats().drift();
  ASSERT_GE(state.warnings(), 1u);
  // Every warning the model counted, and nothing more.
  std::vector<v1::ModelEvent> all;
  EXPECT_THAT(ReadEvents(*watch, expected.size(), state.warnings(), &all),
              ::testing::ElementsAreArray(expected));
  const v1::ModelEvent* last_drift = nullptr;
  const v1::ModelEvent* last_switch = nullptr;
  for (const v1::ModelEvent& e : all) {
    if (e.kind() == v1::ModelEvent::KIND_DRIFT) last_drift = &e;
    if (e.kind() == v1::ModelEvent::KIND_SWITCHED) last_switch = &e;
  }
  ASSERT_NE(last_drift, nullptr);
  ASSERT_NE(last_switch, nullptr);
  EXPECT_EQ(last_drift->position(), state.last_drift_at());
  EXPECT_EQ(last_drift->time().seconds(), state.last_drift_time().seconds());
  EXPECT_EQ(last_drift->time().nanos(), state.last_drift_time().nanos());
  EXPECT_FALSE(last_drift->has_p_value());
  ASSERT_TRUE(last_switch->has_p_value());
  EXPECT_EQ(last_switch->p_value(), state.reaction().last_switch_p_value());

  ASSERT_TRUE(client.RollBackModel("m").ok());
  absl::StatusOr<v1::ModelEvent> rolled = watch->Next();
  ASSERT_TRUE(rolled.ok()) << rolled.status();
  EXPECT_EQ(rolled->kind(), v1::ModelEvent::KIND_ROLLED_BACK);
  EXPECT_EQ(rolled->position(), points.size());
  EXPECT_FALSE(rolled->has_time());

  // A watch that resumes from the first switch has every event kept from
  // there, the roll-back last.
  const uint64_t from = last_switch->position();
  std::unique_ptr<ModelWatch> resumed = client.WatchModel("m", from);
  first = resumed->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->complete());
  EXPECT_EQ(first->drift().reaction().switches(), state.reaction().switches());
  std::vector<Seen> tail;
  for (const Seen& s : expected) {
    if (s.position >= from) tail.push_back(s);
  }
  tail.push_back({v1::ModelEvent::KIND_ROLLED_BACK, points.size()});
  uint64_t tail_warnings = 0;
  for (const v1::ModelEvent& e : all) {
    if (e.kind() == v1::ModelEvent::KIND_WARNING && e.position() >= from) {
      ++tail_warnings;
    }
  }
  EXPECT_THAT(ReadEvents(*resumed, tail.size(), tail_warnings),
              ::testing::ElementsAreArray(tail));

  // Deleting the model ends both watches.
  ASSERT_TRUE(client.DeleteAlias("live").ok());
  ASSERT_TRUE(client.DeleteModel("m").ok());
  absl::StatusOr<v1::ModelEvent> after = watch->Next();
  EXPECT_EQ(after.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(after.status().message(), HasSubstr("was deleted"));
  EXPECT_EQ(resumed->Next().status().code(), absl::StatusCode::kNotFound);
}

TEST(WatchModelServerTest, EndsWhenTheServerStopsAndSaysWhatItNoLongerKeeps) {
  TestServer server;
  Client client = server.NewClient();
  EXPECT_EQ(client.WatchModel("nothing")->Start().status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(client.CreateModel(ReactingModel("m")).ok());
  v1::CreateModelRequest plain = ReactingModel("plain");
  plain.clear_drift();
  ASSERT_TRUE(client.CreateModel(plain).ok());
  std::unique_ptr<ModelWatch> quiet = client.WatchModel("plain");
  absl::StatusOr<v1::WatchModelResponse> first = quiet->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->has_drift());

  const std::vector<LabeledPoint> points =
      Reversed(Stationary(4000, 4, 0.05, 5), 2000);
  TrainPoints(client, "m", points, 0, points.size());
  TrainPoints(client, "plain", points, 0, points.size());
  std::unique_ptr<ModelWatch> watch = client.WatchModel("m", 1);
  first = watch->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->complete());
  ASSERT_GE(first->drift().drifts(), 1u);

  // The shutdown drains both watches; the plain model's had no event.
  server.Restart();
  EXPECT_EQ(quiet->Next().status().code(), absl::StatusCode::kUnavailable);
  absl::Status end;
  for (;;) {
    absl::StatusOr<v1::ModelEvent> event = watch->Next();
    if (!event.ok()) {
      end = event.status();
      break;
    }
  }
  EXPECT_EQ(end.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(end.message(), HasSubstr("shutting down"));

  // The restarted server loaded the model's snapshot: it knows no event
  // at or before it, and says so to a watch that asks from there.
  client = server.NewClient();
  watch = client.WatchModel("m", 1);
  first = watch->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->complete());
  EXPECT_GE(first->drift().drifts(), 1u);
  watch = client.WatchModel("m", points.size() + 1);
  first = watch->Start();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->complete());
  watch->Cancel();
  EXPECT_EQ(watch->Next().status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace halfspace
