// A model's events (core/monitors/event_feed.h): the feed hands each
// watcher every event added after it began, and first the kept ones from
// a position; it keeps the last kKept and says when its history no longer
// reaches back far enough; it ends once, for every watcher. A model adds
// one event for each drift, warning and step of its reaction, at the
// positions its outcomes report, and a restored model adds the same ones
// after its snapshot.

#include "core/monitors/event_feed.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/model/model.h"
#include "core/storage/snapshot_codec.h"
#include "gtest/gtest.h"
#include "tests/drift_streams.h"
#include "tests/reacting_spec.h"

namespace halfspace {
namespace {

class Recorder final : public EventFeed::Watcher {
 public:
  void Deliver(const ModelEvent& event) override { events.push_back(event); }
  void Closed(const absl::Status& why) override {
    ++closings;
    closed = why;
  }

  std::vector<ModelEvent> events;
  int closings = 0;
  absl::Status closed;
};

ModelEvent At(uint64_t position, ModelEventKind kind = ModelEventKind::kDrift) {
  ModelEvent event;
  event.kind = kind;
  event.position = position;
  event.micros = static_cast<int64_t>(position) * 1000;
  return event;
}

std::vector<uint64_t> Positions(const std::vector<ModelEvent>& events) {
  std::vector<uint64_t> at;
  for (const ModelEvent& e : events) at.push_back(e.position);
  return at;
}

TEST(EventFeedTest, HandsEachWatcherWhatComesAfterItBegan) {
  EventFeed feed;
  const ModelEvent two[] = {At(5, ModelEventKind::kWarning), At(5)};
  feed.Add(two, 2);
  Recorder late;
  EXPECT_TRUE(feed.Watch(&late, std::nullopt));
  EXPECT_TRUE(late.events.empty());
  Recorder resumed;
  EXPECT_TRUE(feed.Watch(&resumed, 5));
  EXPECT_EQ(resumed.events.size(), 2u);
  EXPECT_EQ(resumed.events[0].kind, ModelEventKind::kWarning);
  EXPECT_EQ(resumed.events[1].kind, ModelEventKind::kDrift);
  Recorder after;
  EXPECT_TRUE(feed.Watch(&after, 6));
  EXPECT_TRUE(after.events.empty());

  const ModelEvent next = At(9, ModelEventKind::kSwitched);
  feed.Add(&next, 1);
  EXPECT_EQ(Positions(late.events), std::vector<uint64_t>({9}));
  EXPECT_EQ(Positions(resumed.events), std::vector<uint64_t>({5, 5, 9}));
  EXPECT_EQ(after.events.back(), next);

  feed.Unwatch(&late);
  feed.Add(&next, 1);
  EXPECT_EQ(late.events.size(), 1u);
  EXPECT_EQ(after.events.size(), 2u);
  feed.Unwatch(&resumed);
  feed.Unwatch(&after);
}

TEST(EventFeedTest, KeepsTheLastEventsAndSaysWhenItsHistoryIsShort) {
  EventFeed feed;
  for (uint64_t p = 1; p <= EventFeed::kKept + 10; ++p) {
    const ModelEvent e = At(p);
    feed.Add(&e, 1);
  }
  const std::vector<ModelEvent> kept = feed.Kept();
  ASSERT_EQ(kept.size(), EventFeed::kKept);
  EXPECT_EQ(kept.front().position, 11u);
  EXPECT_EQ(kept.back().position, EventFeed::kKept + 10);
  Recorder short_history;
  EXPECT_FALSE(feed.Watch(&short_history, 10));
  EXPECT_EQ(short_history.events.size(), EventFeed::kKept);
  Recorder whole;
  EXPECT_TRUE(feed.Watch(&whole, 11));
  EXPECT_EQ(whole.events.size(), EventFeed::kKept);
  feed.Unwatch(&short_history);
  feed.Unwatch(&whole);

  // A restored model's feed knows nothing at or before its snapshot.
  EventFeed restored(100);
  Recorder before;
  EXPECT_FALSE(restored.Watch(&before, 100));
  Recorder since;
  EXPECT_TRUE(restored.Watch(&since, 101));
  restored.Unwatch(&before);
  restored.Unwatch(&since);
}

TEST(EventFeedTest, ClosesOnceForEveryWatcher) {
  EventFeed feed;
  Recorder watcher;
  feed.Watch(&watcher, std::nullopt);
  feed.Close(absl::NotFoundError("gone"));
  feed.Close(absl::AbortedError("again"));
  EXPECT_EQ(watcher.closings, 1);
  EXPECT_EQ(watcher.closed.code(), absl::StatusCode::kNotFound);
  const ModelEvent e = At(3);
  feed.Add(&e, 1);
  EXPECT_TRUE(watcher.events.empty());
  EXPECT_TRUE(feed.Kept().empty());
  Recorder later;
  feed.Watch(&later, 0);
  EXPECT_EQ(later.closings, 1);
  EXPECT_EQ(later.closed.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(later.events.empty());
  feed.Unwatch(&watcher);
  feed.Unwatch(&later);
}

// Learns points [from, to) one at a time, and returns the events the
// outcomes and the detector's counts report, as the feed should hold them.
std::vector<ModelEvent> Learn(Model& model,
                              const std::vector<LabeledPoint>& points,
                              size_t from, size_t to) {
  std::vector<ModelEvent> events;
  uint64_t warnings =
      model.drift().has_value() ? model.drift()->stats.warnings : 0;
  for (size_t i = from; i < to; ++i) {
    const Example example{points[i].x, points[i].y};
    ExampleOutcome o;
    EXPECT_TRUE(
        model.Learn(absl::MakeConstSpan(&example, 1), absl::MakeSpan(&o, 1))
            .ok());
    EXPECT_TRUE(o.error.ok()) << o.error;
    ModelEvent e = At(o.examples_seen);
    e.micros = 0;
    if (model.drift().has_value()) {
      const uint64_t now = model.drift()->stats.warnings;
      if (now != warnings) {
        e.kind = ModelEventKind::kWarning;
        events.push_back(e);
      }
      warnings = now;
    }
    if (o.drift_event && o.drift == DriftSignal::kDrift) {
      e.kind = ModelEventKind::kDrift;
      events.push_back(e);
    }
    if (o.reaction == ReactionEvent::kStarted) {
      e.kind = ModelEventKind::kChallengerStarted;
      events.push_back(e);
    } else if (o.reaction == ReactionEvent::kDropped) {
      e.kind = ModelEventKind::kChallengerDropped;
      events.push_back(e);
    } else if (o.reaction == ReactionEvent::kSwitched) {
      e.kind = ModelEventKind::kSwitched;
      events.push_back(e);
    }
  }
  return events;
}

std::vector<ModelEventKind> Kinds(const std::vector<ModelEvent>& events) {
  std::vector<ModelEventKind> kinds;
  for (const ModelEvent& e : events) kinds.push_back(e.kind);
  return kinds;
}

TEST(ModelEventsTest, AModelAddsWhatItsOutcomesReportAndARestoredOneAlike) {
  const std::vector<LabeledPoint> points =
      Reversed(Stationary(8000, 4, 0.05, 11), 3000);
  absl::StatusOr<std::unique_ptr<Model>> whole =
      Model::Create("m", ReactingSpec());
  ASSERT_TRUE(whole.ok()) << whole.status();
  Recorder watcher;
  (*whole)->events().Watch(&watcher, std::nullopt);
  const std::vector<ModelEvent> expected =
      Learn(**whole, points, 0, points.size());
  ASSERT_GE(expected.size(), 3u);
  std::vector<ModelEventKind> kinds = Kinds(expected);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), ModelEventKind::kDrift),
            kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), ModelEventKind::kWarning),
            kinds.end());
  auto switched =
      std::find(kinds.begin(), kinds.end(), ModelEventKind::kSwitched);
  ASSERT_NE(switched, kinds.end());
  ASSERT_EQ(watcher.events.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ModelEvent want = expected[i];
    if (want.kind == ModelEventKind::kSwitched) {
      EXPECT_LT(watcher.events[i].p_value, 0.05);
      want.p_value = watcher.events[i].p_value;
    }
    EXPECT_EQ(watcher.events[i], want) << i;
  }
  const ModelEvent& first_switch = watcher.events[switched - kinds.begin()];

  // Restored just before the first switch: the events after the snapshot
  // come again, at the same positions; those before are not known.
  const size_t stop = first_switch.position - 1;
  absl::StatusOr<std::unique_ptr<Model>> first =
      Model::Create("m", ReactingSpec());
  ASSERT_TRUE(first.ok());
  Learn(**first, points, 0, stop);
  absl::StatusOr<ModelSnapshot> decoded =
      DecodeSnapshot(EncodeSnapshot((*first)->Snapshot()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<std::unique_ptr<Model>> restored =
      Model::Restore(*std::move(decoded));
  ASSERT_TRUE(restored.ok()) << restored.status();
  Recorder resumed;
  EXPECT_FALSE((*restored)->events().Watch(&resumed, stop));
  EXPECT_TRUE(resumed.events.empty());
  Learn(**restored, points, stop, points.size());
  std::vector<ModelEvent> tail;
  for (const ModelEvent& e : watcher.events) {
    if (e.position > stop) tail.push_back(e);
  }
  ASSERT_FALSE(tail.empty());
  EXPECT_EQ(resumed.events, tail);
  EXPECT_EQ((*restored)->events().Kept(), tail);

  // A roll-back is an event where the model stands; a deletion ends the
  // feed.
  ASSERT_TRUE((*whole)->RollBack().ok());
  EXPECT_EQ(watcher.events.back().kind, ModelEventKind::kRolledBack);
  EXPECT_EQ(watcher.events.back().position, points.size());
  EXPECT_EQ(watcher.events.back().micros, 0);
  ASSERT_TRUE((*whole)->MarkDeleted().ok());
  EXPECT_EQ(watcher.closings, 1);
  EXPECT_EQ(watcher.closed.code(), absl::StatusCode::kNotFound);
  (*whole)->events().Unwatch(&watcher);
  (*restored)->events().Unwatch(&resumed);
}

TEST(ModelEventsTest, ADdmWarningComesAloneBeforeItsDrift) {
  ModelSpec spec = ReactingSpec();
  spec.drift.method = DriftOptions::Method::kDdm;
  spec.drift.challenge = false;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ModelEvent> expected =
      Learn(**model, Reversed(Stationary(6000, 4, 0.05, 11), 3000), 0, 6000);
  ASSERT_GE(expected.size(), 2u);
  EXPECT_EQ(expected[0].kind, ModelEventKind::kWarning);
  EXPECT_EQ(expected[1].kind, ModelEventKind::kDrift);
  EXPECT_LT(expected[0].position, expected[1].position);
  EXPECT_EQ((*model)->events().Kept(), expected);
}

TEST(ModelEventsTest, AModelWithoutADetectorAddsNone) {
  ModelSpec spec = ReactingSpec();
  spec.drift = DriftOptions();
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok());
  const std::vector<LabeledPoint> points =
      Reversed(Stationary(4000, 4, 0.05, 3), 2000);
  EXPECT_TRUE(Learn(**model, points, 0, points.size()).empty());
  EXPECT_TRUE((*model)->events().Kept().empty());
}

}  // namespace
}  // namespace halfspace
