// A model's drift reaction (core/model/drift_reaction.h): a warning starts
// a challenger beside the model, a drift lets McNemar's test decide whether
// it takes the model's place; the old weights come back with a roll-back;
// a model restored from a snapshot mid-stream decides exactly as one
// that never stopped; and a detector and reaction set on a model later
// (Model::SetDrift) start afresh there, within the model's limits.

#include "core/model/drift_reaction.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "core/model/limits.h"
#include "core/model/model.h"
#include "core/monitors/event_feed.h"
#include "core/storage/snapshot_codec.h"
#include "gtest/gtest.h"
#include "tests/drift_streams.h"
#include "tests/reacting_spec.h"

namespace halfspace {
namespace {

std::unique_ptr<Model> MakeModel(const ModelSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// A stream whose concept flips (y becomes −y) after 3000 examples.
std::vector<LabeledPoint> Reversal() {
  return Reversed(Stationary(8000, 4, 0.05, 11), 3000);
}

// What the model did at one example.
struct Step {
  uint64_t position = 0;
  bool mistake = false;
  ReactionEvent reaction = ReactionEvent::kNone;
};

// Learns points [from, to) in batches of 7, and returns each outcome.
std::vector<Step> LearnRange(Model& model,
                             const std::vector<LabeledPoint>& points,
                             size_t from, size_t to) {
  std::vector<Step> steps;
  for (size_t i = from; i < to; i += 7) {
    std::vector<Example> batch;
    for (size_t j = i; j < std::min(i + 7, to); ++j) {
      batch.push_back(Example{points[j].x, points[j].y});
    }
    std::vector<ExampleOutcome> out(batch.size());
    EXPECT_TRUE(model.Learn(batch, absl::MakeSpan(out)).ok());
    for (const ExampleOutcome& o : out) {
      EXPECT_TRUE(o.error.ok()) << o.error;
      steps.push_back({o.examples_seen, o.mistake, o.reaction});
    }
  }
  return steps;
}

std::vector<uint64_t> PositionsOf(const std::vector<Step>& steps,
                                  ReactionEvent event) {
  std::vector<uint64_t> at;
  for (const Step& s : steps) {
    if (s.reaction == event) at.push_back(s.position);
  }
  return at;
}

// Mistakes among steps [from, to).
int MistakesIn(const std::vector<Step>& steps, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to; ++i) n += steps[i].mistake ? 1 : 0;
  return n;
}

TEST(DriftReactionTest, AChallengerReplacesTheModelAfterAReversal) {
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> model = MakeModel(ReactingSpec(true));
  const std::vector<Step> steps = LearnRange(*model, points, 0, points.size());
  const std::vector<uint64_t> switches =
      PositionsOf(steps, ReactionEvent::kSwitched);
  ASSERT_FALSE(switches.empty());
  EXPECT_GT(switches[0], 3000u);
  EXPECT_LT(switches[0], 3600u);
  const std::vector<uint64_t> started =
      PositionsOf(steps, ReactionEvent::kStarted);
  ASSERT_FALSE(started.empty());
  EXPECT_LT(started[0], switches[0]);

  const ModelStats stats = model->Stats();
  ASSERT_TRUE(stats.drift.has_value());
  ASSERT_TRUE(stats.drift->reaction.has_value());
  const ReactionStats& r = *stats.drift->reaction;
  EXPECT_EQ(r.switches, switches.size());
  EXPECT_EQ(r.last_switch_at, switches.back());
  EXPECT_LT(r.last_switch_p_value, 0.05);
  EXPECT_TRUE(r.can_roll_back);

  // The model that did not react: the same detector, the same stream, and
  // more mistakes in the 1000 examples after the first switch.
  std::unique_ptr<Model> untouched = MakeModel(ReactingSpec(false));
  const std::vector<Step> plain =
      LearnRange(*untouched, points, 0, points.size());
  EXPECT_TRUE(PositionsOf(plain, ReactionEvent::kSwitched).empty());
  const size_t from = switches[0];
  EXPECT_LT(MistakesIn(steps, from, from + 1000),
            MistakesIn(plain, from, from + 1000));
}

TEST(DriftReactionTest, AStationaryStreamNeverSwitches) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    const std::vector<LabeledPoint> points = Stationary(6000, 4, 0.1, seed);
    std::unique_ptr<Model> model = MakeModel(ReactingSpec(true));
    const std::vector<Step> steps =
        LearnRange(*model, points, 0, points.size());
    EXPECT_TRUE(PositionsOf(steps, ReactionEvent::kSwitched).empty()) << seed;
  }
}

TEST(DriftReactionTest, ARestoredModelDecidesAtTheSamePositions) {
  const ModelSpec spec = ReactingSpec(true);
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> whole = MakeModel(spec);
  const std::vector<Step> expected =
      LearnRange(*whole, points, 0, points.size());
  const std::vector<uint64_t> started =
      PositionsOf(expected, ReactionEvent::kStarted);
  const std::vector<uint64_t> switches =
      PositionsOf(expected, ReactionEvent::kSwitched);
  ASSERT_FALSE(started.empty());
  ASSERT_FALSE(switches.empty());
  // Stop once while a challenger runs and once after the switch, where
  // the replaced weights are kept.
  for (size_t stop : {static_cast<size_t>(started[0] + 5),
                      static_cast<size_t>(switches[0] + 5)}) {
    SCOPED_TRACE(stop);
    std::unique_ptr<Model> first = MakeModel(spec);
    std::vector<Step> steps = LearnRange(*first, points, 0, stop);
    absl::StatusOr<ModelSnapshot> decoded =
        DecodeSnapshot(EncodeSnapshot(first->Snapshot()));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_TRUE(decoded->spec.drift.challenge);
    EXPECT_FALSE(decoded->reaction.empty());
    absl::StatusOr<std::unique_ptr<Model>> restored =
        Model::Restore(*std::move(decoded));
    ASSERT_TRUE(restored.ok()) << restored.status();
    const std::vector<Step> after =
        LearnRange(**restored, points, stop, points.size());
    steps.insert(steps.end(), after.begin(), after.end());
    ASSERT_EQ(steps.size(), expected.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      ASSERT_EQ(steps[i].reaction, expected[i].reaction) << i;
      ASSERT_EQ(steps[i].mistake, expected[i].mistake) << i;
    }
    const ModelSnapshot a = (*restored)->Snapshot();
    const ModelSnapshot b = whole->Snapshot();
    EXPECT_EQ(a.weights.w, b.weights.w);
    EXPECT_EQ(a.weights.b, b.weights.b);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.reaction, b.reaction);
  }
}

TEST(DriftReactionTest, RollBackPutsTheReplacedWeightsBack) {
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> model = MakeModel(ReactingSpec(true));
  std::vector<Step> steps;
  uint64_t switched_at = 0;
  ModelSnapshot before;
  // Learns one example at a time, keeping the weights before each, until
  // the first switch.
  for (size_t i = 0; i < points.size() && switched_at == 0; ++i) {
    before = model->Snapshot();
    steps = LearnRange(*model, points, i, i + 1);
    if (steps[0].reaction == ReactionEvent::kSwitched) switched_at = i + 1;
  }
  ASSERT_NE(switched_at, 0u);
  const ModelSnapshot switched = model->Snapshot();
  EXPECT_NE(switched.weights.w, before.weights.w);

  ASSERT_TRUE(model->RollBack().ok());
  const ModelSnapshot rolled = model->Snapshot();
  // The weights before the switch, after learning the example it came at.
  std::unique_ptr<Model> replay = MakeModel(ReactingSpec(false));
  ModelSnapshot expected = before;
  expected.spec = ReactingSpec(false);
  expected.drift.clear();
  expected.reaction.clear();
  absl::StatusOr<std::unique_ptr<Model>> copy = Model::Restore(expected);
  ASSERT_TRUE(copy.ok()) << copy.status();
  LearnRange(**copy, points, switched_at - 1, switched_at);
  EXPECT_EQ(rolled.weights.w, (*copy)->Snapshot().weights.w);
  EXPECT_EQ(rolled.weights.b, (*copy)->Snapshot().weights.b);
  EXPECT_EQ(rolled.counters.examples_seen, switched.counters.examples_seen);
  ASSERT_TRUE(model->Stats().drift->reaction.has_value());
  EXPECT_FALSE(model->Stats().drift->reaction->can_roll_back);
  EXPECT_FALSE(model->Stats().drift->reaction->challenging);

  const absl::Status again = model->RollBack();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model->Snapshot().weights.w, rolled.weights.w);
  EXPECT_EQ(MakeModel(ReactingSpec(false))->RollBack().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(DriftReactionTest, TestsAreDueAtEachDoublingAndSpendAlpha) {
  std::vector<uint64_t> due;
  for (uint64_t n = 0; n <= 70; ++n) {
    if (ChallengeTestDue(n)) due.push_back(n);
  }
  EXPECT_EQ(due, (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_TRUE(ChallengeTestDue(uint64_t{1} << 40));
  EXPECT_DOUBLE_EQ(ChallengeTestLevel(0.05, 8), 0.05 / 2);
  EXPECT_DOUBLE_EQ(ChallengeTestLevel(0.05, 16), 0.05 / 6);
  EXPECT_DOUBLE_EQ(ChallengeTestLevel(0.05, 32), 0.05 / 12);
  EXPECT_DOUBLE_EQ(ChallengeTestLevel(0.1, uint64_t{1} << 13), 0.1 / 132);
  double spent = 0;
  for (uint64_t n = 8; n != 0; n *= 2) spent += ChallengeTestLevel(0.05, n);
  EXPECT_LT(spent, 0.05);
  EXPECT_GT(spent, 0.049);
}

// A challenger that never errs: a perceptron on x = 1, y = +1 (f = 0
// predicts +1), so c stays 0 and the model's mistakes alone make b.
struct Controlled {
  ModelSpec spec = [] {
    ModelSpec s = DenseSpec(DefaultParams(Algorithm::kPerceptron), 1);
    s.drift.method = DriftOptions::Method::kAdwin;
    s.drift.challenge = true;
    s.progress_window = 50;
    return s;
  }();
  DriftReaction reaction{spec};
  std::unique_ptr<Learner> learner = MakeLearner(spec);
  uint64_t position = 0;

  // One example the model got wrong or right, then the detector's signal.
  ReactionEvent Step(bool model_mistake,
                     DriftSignal signal = DriftSignal::kStable,
                     bool event = false) {
    ++position;
    reaction.Learn(std::vector<double>{1.0}, 1, 1.0, model_mistake);
    return reaction.React(signal, event, position, 0, learner);
  }
};

TEST(DriftReactionTest, SwitchesAtTheFirstTestThatFindsTheChallengerBetter) {
  Controlled c;
  EXPECT_EQ(c.Step(false, DriftSignal::kDrift, true), ReactionEvent::kStarted);
  EXPECT_EQ(c.reaction.stats().armed_at, 1u);
  // b = 7: no test is due; at b = 8, p = 2·2^−8 < 0.05/2.
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(c.Step(true), ReactionEvent::kNone) << i;
    EXPECT_EQ(c.Step(false), ReactionEvent::kNone) << i;
  }
  EXPECT_EQ(c.reaction.stats().only_model_wrong, 7u);
  EXPECT_EQ(c.reaction.stats().examples, 14u);
  EXPECT_EQ(c.Step(true), ReactionEvent::kSwitched);
  const ReactionStats s = c.reaction.stats();
  EXPECT_EQ(s.last_switch_at, c.position);
  EXPECT_EQ(s.tests, 1u);
  EXPECT_DOUBLE_EQ(s.last_switch_p_value, 2.0 / 256);
  EXPECT_FALSE(s.challenging);
  EXPECT_TRUE(s.can_roll_back);
  // The learner now is the challenger: it learned the 15 examples.
  EXPECT_GT(c.learner->Bias(), 0.0);
}

TEST(DriftReactionTest, AWarningAloneNeverSwitches) {
  Controlled c;
  EXPECT_EQ(c.Step(false, DriftSignal::kWarning, true),
            ReactionEvent::kStarted);
  EXPECT_EQ(c.reaction.stats().armed_at, 0u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.Step(true), ReactionEvent::kNone);
  // Armed by a drift at b = 9, it is tested next at b = 16, at 0.05/6:
  // p = 2·2^−16.
  EXPECT_EQ(c.Step(false, DriftSignal::kDrift, true), ReactionEvent::kNone);
  EXPECT_EQ(c.reaction.stats().armed_at, c.position);
  for (int i = 9; i < 16; ++i) EXPECT_EQ(c.Step(true), ReactionEvent::kNone);
  EXPECT_EQ(c.Step(true), ReactionEvent::kSwitched);
  EXPECT_EQ(c.reaction.stats().only_model_wrong, 16u);
  EXPECT_EQ(c.reaction.stats().tests, 1u);
}

TEST(DriftReactionTest, AChallengerThatDoesNotWinInTimeIsDropped) {
  Controlled c;
  EXPECT_EQ(c.Step(false, DriftSignal::kWarning, true),
            ReactionEvent::kStarted);
  // No drift within progress_window (50) examples of the start.
  for (int i = 1; i < 50; ++i) EXPECT_EQ(c.Step(false), ReactionEvent::kNone);
  EXPECT_EQ(c.Step(false), ReactionEvent::kDropped);
  EXPECT_FALSE(c.reaction.stats().challenging);
  EXPECT_EQ(c.reaction.stats().dropped, 1u);
  // Nothing runs until the next warning or drift; a later warning of the
  // same zone (event false) starts nothing.
  EXPECT_EQ(c.Step(false, DriftSignal::kWarning, false), ReactionEvent::kNone);
  EXPECT_EQ(c.Step(false, DriftSignal::kDrift, true), ReactionEvent::kStarted);
  // Armed at its start: 50 examples to win.
  const uint64_t armed = c.position;
  for (int i = 1; i < 50; ++i) EXPECT_EQ(c.Step(false), ReactionEvent::kNone);
  EXPECT_EQ(c.Step(false), ReactionEvent::kDropped);
  EXPECT_EQ(c.position - armed, 50u);
  EXPECT_EQ(c.reaction.stats().switches, 0u);
}

TEST(DriftReactionTest, ItsSettingsAreStored) {
  ModelSpec spec = ReactingSpec(true);
  spec.drift.challenge_alpha = 0.04;
  absl::StatusOr<ModelSnapshot> decoded =
      DecodeSnapshot(EncodeSnapshot(MakeModel(spec)->Snapshot()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->spec.drift.challenge);
  EXPECT_EQ(decoded->spec.drift.challenge_alpha, 0.04);
  decoded = DecodeSnapshot(
      EncodeSnapshot(MakeModel(ReactingSpec(false))->Snapshot()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_FALSE(decoded->spec.drift.challenge);
  EXPECT_TRUE(decoded->reaction.empty());
}

TEST(DriftReactionTest, ItsMemoryIsCountedFromTheStart) {
  const int64_t without = ModelBytes(ReactingSpec(false), 0);
  EXPECT_EQ(ModelBytes(ReactingSpec(true), 0) - without,
            2 * ClassBytes(ReactingSpec(true)));
}

TEST(DriftReactionTest, BadSettingsAreRefused) {
  ModelSpec spec = ReactingSpec(true);
  spec.drift.method = DriftOptions::Method::kNone;
  EXPECT_EQ(Model::Create("m", spec).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (double alpha : {0.0, 1.0, -0.5, std::nan("")}) {
    spec = ReactingSpec(true);
    spec.drift.challenge_alpha = alpha;
    EXPECT_EQ(Model::Create("m", spec).status().code(),
              absl::StatusCode::kInvalidArgument)
        << alpha;
  }
  spec = ReactingSpec(true);
  spec.one_vs_rest = true;
  EXPECT_EQ(Model::Create("m", spec).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DriftReactionTest, ASnapshotWhoseReactionDoesNotFitIsRefused) {
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> model = MakeModel(ReactingSpec(true));
  LearnRange(*model, points, 0, 3400);
  const ModelSnapshot good = model->Snapshot();
  ASSERT_TRUE(Model::Restore(good).ok());
  // Every truncation, a number too many, and a reaction on a model
  // without one.
  for (size_t n = 0; n < good.reaction.size(); ++n) {
    ModelSnapshot cut = good;
    cut.reaction.resize(n);
    if (n == 0) continue;  // empty: a reaction never started, as of old
    EXPECT_FALSE(Model::Restore(cut).ok()) << n;
  }
  ModelSnapshot longer = good;
  longer.reaction.push_back(0);
  EXPECT_FALSE(Model::Restore(longer).ok());
  ModelSnapshot bad_count = good;
  bad_count.reaction[5] = -1;
  EXPECT_FALSE(Model::Restore(bad_count).ok());
  ModelSnapshot bad_flag = good;
  bad_flag.reaction[14] = 0.5;
  EXPECT_FALSE(Model::Restore(bad_flag).ok());
  // Where no learner follows the flags, as before any challenger.
  ModelSnapshot fresh = MakeModel(ReactingSpec(true))->Snapshot();
  ASSERT_EQ(fresh.reaction.size(), 15u);
  ASSERT_TRUE(Model::Restore(fresh).ok());
  for (size_t flag : {1, 14}) {
    ModelSnapshot bad = fresh;
    bad.reaction[flag] = 0.5;
    EXPECT_FALSE(Model::Restore(bad).ok()) << flag;
  }
  ModelSnapshot too_many = good;
  too_many.reaction[7] = too_many.reaction[5] + 1;
  EXPECT_FALSE(Model::Restore(too_many).ok());
  ModelSnapshot without = good;
  without.spec.drift.challenge = false;
  EXPECT_FALSE(Model::Restore(without).ok());
}

// The spec of ReactingSpec without a detector.
ModelSpec PlainSpec() {
  ModelSpec spec = ReactingSpec(false);
  spec.drift = DriftOptions();
  return spec;
}

// A detector and reaction set after 500 examples decide as a model
// restored there with them from the plain model's snapshot: both start
// afresh, the weights and counters go on.
TEST(SetDriftTest, SettingsGivenLaterStartAfreshWhereTheyAreGiven) {
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> model = MakeModel(PlainSpec());
  LearnRange(*model, points, 0, 500);
  ModelSnapshot before = model->Snapshot();
  const int64_t plain_bytes = model->memory_bytes();
  const DriftOptions reacting = ReactingSpec(true).drift;
  ASSERT_TRUE(model->SetDrift(reacting).ok());
  EXPECT_EQ(model->spec().drift.method, DriftOptions::Method::kAdwin);
  EXPECT_TRUE(model->spec().drift.challenge);
  EXPECT_EQ(model->memory_bytes(), plain_bytes +
                                       DriftDetector::Bytes(reacting) +
                                       2 * ClassBytes(model->spec()));
  const ModelSnapshot set = model->Snapshot();
  EXPECT_EQ(set.weights.w, before.weights.w);
  EXPECT_EQ(set.counters.examples_seen, 500u);
  const std::vector<Step> steps = LearnRange(*model, points, 500, 8000);

  before.spec.drift = reacting;
  absl::StatusOr<std::unique_ptr<Model>> restored = Model::Restore(before);
  ASSERT_TRUE(restored.ok()) << restored.status();
  const std::vector<Step> expected = LearnRange(**restored, points, 500, 8000);
  ASSERT_EQ(steps.size(), expected.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i].position, expected[i].position) << i;
    ASSERT_EQ(steps[i].reaction, expected[i].reaction) << i;
  }
  const std::vector<uint64_t> switches =
      PositionsOf(steps, ReactionEvent::kSwitched);
  ASSERT_FALSE(switches.empty());
  EXPECT_GT(switches[0], 3000u);
  const ModelSnapshot a = model->Snapshot();
  const ModelSnapshot b = (*restored)->Snapshot();
  EXPECT_EQ(a.weights.w, b.weights.w);
  EXPECT_EQ(a.drift, b.drift);
  EXPECT_EQ(a.reaction, b.reaction);

  // The settings are the model's: its snapshot holds them.
  absl::StatusOr<ModelSnapshot> decoded = DecodeSnapshot(EncodeSnapshot(a));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->spec.drift.challenge);
  EXPECT_TRUE(Model::Restore(*std::move(decoded)).ok());
}

// New settings, even the same ones, drop a running challenger (an event
// tells it) and the weights kept for a roll-back, and count afresh.
TEST(SetDriftTest, NewSettingsDropTheChallengerAndTheRollBack) {
  const std::vector<LabeledPoint> points = Reversal();
  const DriftOptions reacting = ReactingSpec(true).drift;
  std::unique_ptr<Model> model = MakeModel(ReactingSpec(true));
  const std::vector<Step> steps = LearnRange(*model, points, 0, 4000);
  const std::vector<uint64_t> started =
      PositionsOf(steps, ReactionEvent::kStarted);
  ASSERT_FALSE(started.empty());
  std::unique_ptr<Model> running = MakeModel(ReactingSpec(true));
  LearnRange(*running, points, 0, started[0] + 3);
  ASSERT_TRUE(running->Stats().drift->reaction->challenging);
  ASSERT_TRUE(running->SetDrift(reacting).ok());
  const ModelDrift fresh = *running->Stats().drift;
  EXPECT_FALSE(fresh.reaction->challenging);
  EXPECT_EQ(fresh.stats.warnings, 0u);
  EXPECT_EQ(fresh.stats.drifts, 0u);
  const std::vector<ModelEvent> events = running->events().Kept();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, ModelEventKind::kChallengerDropped);
  EXPECT_EQ(events.back().position, started[0] + 3);

  ASSERT_TRUE(model->CanRollBack().ok());
  ASSERT_TRUE(model->SetDrift(reacting).ok());
  EXPECT_EQ(model->CanRollBack().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model->Stats().drift->reaction->switches, 0u);

  // None: no detector, and nothing to report.
  ASSERT_TRUE(model->SetDrift(DriftOptions()).ok());
  EXPECT_FALSE(model->drift().has_value());
  EXPECT_EQ(model->spec().drift.method, DriftOptions::Method::kNone);
  EXPECT_TRUE(model->Snapshot().drift.empty());
  EXPECT_TRUE(model->Snapshot().reaction.empty());
}

// The memory the settings take is reserved before and given back when
// they go; settings past the limits, or that the spec cannot take, or
// that cannot be written ahead, change nothing.
TEST(SetDriftTest, SettingsAreBoundByTheLimitsAndChangeNothingOnError) {
  const DriftOptions reacting = ReactingSpec(true).drift;
  const int64_t plain = ModelBytes(PlainSpec(), 0);
  Limits limits;
  limits.max_model_bytes = plain + DriftDetector::Bytes(reacting);
  auto budget = std::make_shared<ResourceBudget>(limits);
  budget->set_enforcing(true);
  absl::StatusOr<std::unique_ptr<Model>> created =
      Model::Create("m", PlainSpec(), {}, budget);
  ASSERT_TRUE(created.ok()) << created.status();
  Model& model = **created;
  EXPECT_EQ(budget->reserved(), plain);

  absl::Status s = model.SetDrift(reacting);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(LimitOf(s), "max_model_bytes");
  EXPECT_EQ(model.CanSetDrift(reacting).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(model.spec().drift.method, DriftOptions::Method::kNone);
  EXPECT_EQ(budget->reserved(), plain);

  DriftOptions detector = reacting;
  detector.challenge = false;  // fits: the detector alone
  ASSERT_TRUE(model.CanSetDrift(detector).ok());
  ASSERT_TRUE(model.SetDrift(detector).ok());
  EXPECT_EQ(budget->reserved(), plain + DriftDetector::Bytes(detector));
  EXPECT_EQ(model.memory_bytes(), budget->reserved());

  DriftOptions bad = detector;
  bad.adwin_delta = 2;
  EXPECT_EQ(model.SetDrift(bad).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status unwritten = model.SetDrift(
      DriftOptions(), [] { return absl::UnavailableError("the log is full"); });
  EXPECT_EQ(unwritten.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(model.spec().drift.method, DriftOptions::Method::kAdwin);
  EXPECT_EQ(budget->reserved(), plain + DriftDetector::Bytes(detector));

  ASSERT_TRUE(model.SetDrift(DriftOptions()).ok());
  EXPECT_EQ(budget->reserved(), plain);
  // What it reserved for settings it could not write ahead comes back.
  EXPECT_EQ(
      model.SetDrift(detector, [] { return absl::UnavailableError("full"); })
          .code(),
      absl::StatusCode::kUnavailable);
  EXPECT_EQ(budget->reserved(), plain);
  EXPECT_EQ(model.spec().drift.method, DriftOptions::Method::kNone);

  ModelSpec multiclass = PlainSpec();
  multiclass.algorithm = DefaultParams(Algorithm::kMulticlassPerceptron);
  std::unique_ptr<Model> classes = MakeModel(multiclass);
  s = classes->SetDrift(reacting);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(classes->SetDrift(detector).ok());
}

TEST(SetDriftTest, ADeletedModelTakesNoSettings) {
  std::unique_ptr<Model> model = MakeModel(PlainSpec());
  ASSERT_TRUE(model->MarkDeleted().ok());
  EXPECT_EQ(model->SetDrift(ReactingSpec(true).drift).code(),
            absl::StatusCode::kNotFound);
}

// Settings changed while the model learns and is read: each snapshot is
// of one setting (it restores), and the last is in force.
TEST(SetDriftTest, SettingsChangeWhileTheModelLearnsAndIsRead) {
  const std::vector<LabeledPoint> points = Reversal();
  std::unique_ptr<Model> model = MakeModel(PlainSpec());
  std::atomic<bool> done{false};
  std::thread learner([&] {
    for (size_t i = 0; !done.load(); i = (i + 7) % 7000) {
      LearnRange(*model, points, i, i + 7);
    }
  });
  std::thread reader([&] {
    while (!done.load()) {
      absl::StatusOr<std::unique_ptr<Model>> copy =
          Model::Restore(model->Snapshot());
      EXPECT_TRUE(copy.ok()) << copy.status();
      (void)model->spec().drift.challenge;
      (void)model->Stats();
    }
  });
  const DriftOptions reacting = ReactingSpec(true).drift;
  for (int i = 0; i < 20000 || model->counters().examples_seen < 50000; ++i) {
    ASSERT_TRUE(model->SetDrift(i % 2 == 0 ? reacting : DriftOptions()).ok());
  }
  ASSERT_TRUE(model->SetDrift(DriftOptions()).ok());
  done.store(true);
  learner.join();
  reader.join();
  EXPECT_EQ(model->spec().drift.method, DriftOptions::Method::kNone);
  EXPECT_FALSE(model->drift().has_value());
}

}  // namespace
}  // namespace halfspace
