// Every algorithm's state: a model resumes exactly after a snapshot round
// trip, and a state of the wrong size is refused.

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/algorithms/perceptron.h"
#include "core/model/model.h"
#include "core/storage/snapshot_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;

// Learns half the data, goes through an encoded snapshot into a new model,
// and checks that both then learn the rest identically.
void ExpectExactContinuation(const ModelSpec& spec) {
  const auto xs = RandomPoints(300, 4, 11);
  auto learn = [&](Model& model, size_t from, size_t to) {
    std::vector<Example> batch;
    for (size_t i = from; i < to; ++i) {
      batch.push_back({xs[i], Label(xs[i]), 0.5 + (i % 3)});
    }
    std::vector<ExampleOutcome> out(batch.size());
    ASSERT_TRUE(model.Learn(batch, absl::MakeSpan(out)).ok());
  };
  absl::StatusOr<std::unique_ptr<Model>> created = Model::Create("m", spec);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Model> original = *std::move(created);
  learn(*original, 0, 150);
  absl::StatusOr<ModelSnapshot> decoded =
      DecodeSnapshot(EncodeSnapshot(original->Snapshot()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<std::unique_ptr<Model>> restored =
      Model::Restore(*std::move(decoded));
  ASSERT_TRUE(restored.ok()) << restored.status();
  learn(*original, 150, 300);
  learn(**restored, 150, 300);
  ModelSnapshot a = original->Snapshot(), b = (*restored)->Snapshot();
  EXPECT_EQ(a.weights.w, b.weights.w);
  EXPECT_EQ(a.weights.b, b.weights.b);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.counters.updates, b.counters.updates);
}

TEST(SnapshotContinuationTest, EveryAlgorithmResumesExactly) {
  ModelSpec spec;
  spec.dimension = 4;
  for (Algorithm a :
       {Algorithm::kPerceptron, Algorithm::kLogisticRegression,
        Algorithm::kAveragedPerceptron, Algorithm::kPassiveAggressive,
        Algorithm::kPocketPerceptron, Algorithm::kVotedPerceptron,
        Algorithm::kFtrlProximal}) {
    spec.algorithm = DefaultParams(a);
    SCOPED_TRACE(static_cast<int>(a));
    ExpectExactContinuation(spec);
  }
  spec.algorithm = DefaultParams(Algorithm::kSgd);
  std::get<SgdParams>(spec.algorithm).options.penalty = Penalty::kElasticNet;
  std::get<SgdParams>(spec.algorithm).options.average_from = 10;
  ExpectExactContinuation(spec);
  std::get<SgdParams>(spec.algorithm).options.penalty = Penalty::kL2;
  std::get<SgdParams>(spec.algorithm).options.schedule = Schedule::kAdaGrad;
  std::get<SgdParams>(spec.algorithm).options.average_from =
      0;  // averaging does not go with AdaGrad
  ExpectExactContinuation(spec);
  // A vote that has merged vectors, mid-ring.
  spec.algorithm = VotedPerceptronParams{3};
  ExpectExactContinuation(spec);
  // Hash buckets and interactions widen w and travel in the snapshot.
  spec.hash_bits = 3;
  spec.interactions = {{"a", "b"}};
  ExpectExactContinuation(spec);
}

TEST(SnapshotContinuationTest, MulticlassModelsResumeExactly) {
  for (auto [algorithm, ovr] :
       {std::pair{Algorithm::kMulticlassPerceptron, false},
        std::pair{Algorithm::kSoftmaxRegression, false},
        std::pair{Algorithm::kAveragedPerceptron, true},
        std::pair{Algorithm::kSgd, true},
        std::pair{Algorithm::kConfidenceWeighted, true},
        std::pair{Algorithm::kVotedPerceptron, true},
        std::pair{Algorithm::kFtrlProximal, true}}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    const auto xs = RandomPoints(300, 4, 23);
    const char* names[] = {"x", "y", "z"};
    auto learn = [&](Model& model, size_t from, size_t to) {
      std::vector<Example> batch;
      for (size_t i = from; i < to; ++i) {
        const int k = xs[i][0] > 0.5 ? 0 : xs[i][1] > 0 ? 1 : 2;
        batch.push_back({xs[i], 0, 1.0, names[k]});
      }
      std::vector<ExampleOutcome> out(batch.size());
      ASSERT_TRUE(model.Learn(batch, absl::MakeSpan(out)).ok());
    };
    std::unique_ptr<Model> original = Multiclass(algorithm, ovr);
    learn(*original, 0, 150);
    absl::StatusOr<std::unique_ptr<Model>> restored =
        Model::Restore(*DecodeSnapshot(EncodeSnapshot(original->Snapshot())));
    ASSERT_TRUE(restored.ok()) << restored.status();
    learn(*original, 150, 300);
    learn(**restored, 150, 300);
    ModelSnapshot a = original->Snapshot(), b = (*restored)->Snapshot();
    EXPECT_EQ(a.classes, b.classes);
    ASSERT_EQ(a.class_weights.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(a.class_weights[k].w, b.class_weights[k].w);
      EXPECT_EQ(a.class_weights[k].b, b.class_weights[k].b);
    }
    EXPECT_EQ(a.state, b.state);
  }
}

TEST(ImportStateTest, AveragedPerceptronChecksTheSize) {
  AveragedPerceptron a(2, 1.0);
  const std::vector<double> x = {1, -1};
  a.Learn(x, +1, 1.0);
  std::vector<double> state = a.ExportState();
  ASSERT_EQ(state.size(), 1 + 2 * 3u);  // t, w and b, u and its bias
  EXPECT_TRUE(a.ImportState(state).ok());
  state.push_back(0);
  EXPECT_EQ(a.ImportState(state).code(), absl::StatusCode::kInvalidArgument);
  state.resize(6);
  EXPECT_EQ(a.ImportState(state).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ImportStateTest, OneVsRestChecksEveryLengthPrefix) {
  OneVsRest ovr([] { return std::make_unique<AveragedPerceptron>(1, 1.0); });
  ovr.AddClass();
  ovr.AddClass();
  std::vector<double> scores, probabilities;
  const std::vector<double> x = {1};
  ovr.Learn(x, 0, 1.0, scores, probabilities);
  const std::vector<double> state = ovr.ExportState();
  ASSERT_EQ(state.size(), 2 * (1 + 5u));  // per class: its size, its state
  EXPECT_TRUE(ovr.ImportState(state).ok());

  std::vector<double> extra = state;
  extra.push_back(0);
  EXPECT_EQ(ovr.ImportState(extra).code(), absl::StatusCode::kInvalidArgument);
  std::vector<double> truncated(state.begin(), state.end() - 1);
  EXPECT_EQ(ovr.ImportState(truncated).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<double> overlong = state;
  overlong[6] = 6;  // the second class claims more than is left
  EXPECT_EQ(ovr.ImportState(overlong).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<double> negative = state;
  negative[0] = -1;
  EXPECT_EQ(ovr.ImportState(negative).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace halfspace
