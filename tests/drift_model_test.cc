// A model's drift detector (core/monitors/drift_detector.h inside
// core/model/model.h): it reads the model's progressive mistakes on
// synthetic streams with known drifts (tests/drift_streams.h), reports in
// the outcomes and the stats, and keeps its state through a snapshot, so a
// restored model detects at the same positions.

#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/storage/snapshot_codec.h"
#include "gtest/gtest.h"
#include "tests/drift_streams.h"

namespace halfspace {
namespace {

ModelSpec DriftSpec(DriftOptions::Method method, int64_t dimension) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  spec.dimension = dimension;
  spec.drift.method = method;
  return spec;
}

std::unique_ptr<Model> MakeModel(const ModelSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Learns points [from, to) one at a time; returns the positions (1-based)
// of the drifts the outcomes report.
std::vector<uint64_t> LearnRange(Model& model,
                                 const std::vector<LabeledPoint>& points,
                                 size_t from, size_t to) {
  std::vector<uint64_t> drifts;
  std::vector<ExampleOutcome> out(1);
  for (size_t i = from; i < to; ++i) {
    const Example e{points[i].x, points[i].y};
    EXPECT_TRUE(model.Learn({e}, absl::MakeSpan(out)).ok());
    if (out[0].drift == DriftSignal::kDrift) {
      drifts.push_back(out[0].examples_seen);
    }
  }
  return drifts;
}

// A stream whose concept flips (y becomes −y) after 3000 examples.
std::vector<LabeledPoint> Reversal() {
  return Reversed(Stationary(6000, 4, 0.05, 11), 3000);
}

TEST(DriftModelTest, EachDetectorFindsAConceptReversal) {
  for (auto method :
       {DriftOptions::Method::kAdwin, DriftOptions::Method::kPageHinkley,
        DriftOptions::Method::kDdm}) {
    SCOPED_TRACE(static_cast<int>(method));
    std::unique_ptr<Model> model = MakeModel(DriftSpec(method, 4));
    const std::vector<LabeledPoint> points = Reversal();
    const std::vector<uint64_t> drifts =
        LearnRange(*model, points, 0, points.size());
    ASSERT_FALSE(drifts.empty());
    EXPECT_GT(drifts[0], 3000u);
    EXPECT_LT(drifts[0], 3300u);
    const ModelStats stats = model->Stats();
    ASSERT_TRUE(stats.drift.has_value());
    EXPECT_EQ(stats.drift->stats.drifts, drifts.size());
    EXPECT_EQ(stats.drift->stats.last_drift_at, drifts.back());
  }
}

TEST(DriftModelTest, SeaConceptsDriftsAreFoundAfterTheyHappen) {
  std::unique_ptr<Model> model =
      MakeModel(DriftSpec(DriftOptions::Method::kAdwin, 3));
  const std::vector<LabeledPoint> points = SeaConcepts(20000, 5000, 0.0, 5);
  const std::vector<uint64_t> drifts =
      LearnRange(*model, points, 0, points.size());
  ASSERT_FALSE(drifts.empty());
  for (uint64_t at : drifts) EXPECT_GT(at, 5000u);
}

TEST(DriftModelTest, AModelWithoutADetectorReportsNone) {
  std::unique_ptr<Model> model =
      MakeModel(DriftSpec(DriftOptions::Method::kNone, 4));
  const std::vector<LabeledPoint> points = Reversal();
  EXPECT_TRUE(LearnRange(*model, points, 0, points.size()).empty());
  EXPECT_FALSE(model->Stats().drift.has_value());
  EXPECT_TRUE(model->Snapshot().drift.empty());
}

TEST(DriftModelTest, ARestoredModelDetectsAtTheSamePositions) {
  for (auto method :
       {DriftOptions::Method::kAdwin, DriftOptions::Method::kPageHinkley,
        DriftOptions::Method::kDdm}) {
    SCOPED_TRACE(static_cast<int>(method));
    const ModelSpec spec = DriftSpec(method, 4);
    const std::vector<LabeledPoint> points = Reversal();
    std::unique_ptr<Model> whole = MakeModel(spec);
    const std::vector<uint64_t> expected =
        LearnRange(*whole, points, 0, points.size());
    std::unique_ptr<Model> first = MakeModel(spec);
    LearnRange(*first, points, 0, 3050);  // within the change
    absl::StatusOr<ModelSnapshot> decoded =
        DecodeSnapshot(EncodeSnapshot(first->Snapshot()));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->spec.drift.method, method);
    absl::StatusOr<std::unique_ptr<Model>> restored =
        Model::Restore(*std::move(decoded));
    ASSERT_TRUE(restored.ok()) << restored.status();
    std::vector<uint64_t> drifts;
    for (uint64_t at : expected) {
      if (at <= 3050) drifts.push_back(at);
    }
    const std::vector<uint64_t> after =
        LearnRange(**restored, points, 3050, points.size());
    drifts.insert(drifts.end(), after.begin(), after.end());
    EXPECT_EQ(drifts, expected);
    EXPECT_EQ((*restored)->Snapshot().drift, whole->Snapshot().drift);
  }
}

TEST(DriftModelTest, ASnapshotWhoseDetectorDoesNotFitIsRefused) {
  std::unique_ptr<Model> model =
      MakeModel(DriftSpec(DriftOptions::Method::kAdwin, 4));
  ModelSnapshot snapshot = model->Snapshot();
  snapshot.drift.push_back(1);
  EXPECT_FALSE(Model::Restore(snapshot).ok());
  snapshot = model->Snapshot();
  snapshot.spec.drift.method = DriftOptions::Method::kNone;
  EXPECT_FALSE(Model::Restore(snapshot).ok());
}

TEST(DriftModelTest, TheDetectorsMemoryIsCounted) {
  ModelSpec spec = DriftSpec(DriftOptions::Method::kNone, 4);
  const int64_t without = ModelBytes(spec, 0);
  spec.drift.method = DriftOptions::Method::kAdwin;
  EXPECT_EQ(ModelBytes(spec, 0) - without, DriftDetector::Bytes(spec.drift));
  EXPECT_GT(DriftDetector::Bytes(spec.drift),
            2 * Adwin::Bytes(DriftDetector::kCountedAdwinRows));
}

TEST(DriftModelTest, ABadSettingIsRefusedAtCreation) {
  ModelSpec spec = DriftSpec(DriftOptions::Method::kDdm, 4);
  spec.drift.input = DriftOptions::Input::kLoss;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace halfspace
