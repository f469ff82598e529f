// The perceptron family: the perceptron (Rosenblatt) on worked examples and
// its margin, the averaged, pocket (Gallant) and voted (Freund & Schapire)
// perceptrons on hand-computed cases.

#include "core/algorithms/perceptron.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/pocket_perceptron.h"
#include "core/algorithms/voted_perceptron.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::DoubleNear;
using ::testing::ElementsAre;

struct Point {
  std::vector<double> x;
  int y;
};

// The (w1, w2, b) after each update.
using Trace = std::vector<std::vector<double>>;

// Runs passes until one makes no update; returns the trace of updates.
Trace TrainUntilConverged(Perceptron& p, const std::vector<Point>& data,
                          int* passes) {
  Trace trace;
  for (*passes = 1; *passes <= 100; ++*passes) {
    bool updated = false;
    for (const Point& point : data) {
      if (p.Learn(point.x, point.y, 1.0).updated) {
        updated = true;
        const LinearWeights& w = p.weights();
        trace.push_back({w.w[0], w.w[1], w.b});
      }
    }
    if (!updated) break;
  }
  return trace;
}

TEST(PerceptronTest, ClassicNotesWorkedExampleEndsAtXPlusYMinusThree) {
  Perceptron p(2, 1.0);
  int passes = 0;
  Trace trace = TrainUntilConverged(
      p, {{{2, 3}, +1}, {{3, 1}, +1}, {{0, 1}, -1}, {{1, -1}, -1}}, &passes);
  EXPECT_THAT(trace, ElementsAre(ElementsAre(2, 3, 1), ElementsAre(2, 2, 0),
                                 ElementsAre(1, 3, -1), ElementsAre(1, 2, -2),
                                 ElementsAre(1, 1, -3)));
  EXPECT_THAT(p.weights().w, ElementsAre(1, 1));
  EXPECT_EQ(p.weights().b, -3);
  const std::vector<double> x = {3, 1};
  EXPECT_NEAR(p.weights().Score(x) / p.weights().Norm(), 1 / std::sqrt(2.0),
              1e-15);
}

TEST(PerceptronTest, SecondWorkedExampleConvergesInPassThree) {
  Perceptron p(2, 1.0);
  int passes = 0;
  Trace trace = TrainUntilConverged(
      p, {{{1, 2}, +1}, {{2, 1}, -1}, {{0, 0}, -1}}, &passes);
  EXPECT_EQ(trace.size(), 5u);
  EXPECT_EQ(passes, 3);
  EXPECT_THAT(p.weights().w, ElementsAre(-2, 2));
  EXPECT_EQ(p.weights().b, -1);
}

TEST(PerceptronTest, FirstExampleAlwaysUpdatesBecauseZeroMarginIsAMistake) {
  Perceptron p(2, 1.0);
  const std::vector<double> x = {2, 3};
  Update u = p.Learn(x, +1, 1.0);
  EXPECT_EQ(u.score, 0);
  EXPECT_EQ(u.margin, 0);
  EXPECT_EQ(u.predicted_label, +1);  // sign(0) = +1
  EXPECT_TRUE(u.updated);
  EXPECT_EQ(u.loss, 0);
  EXPECT_FALSE(u.probability.has_value());
}

TEST(PerceptronTest, PositiveMarginLeavesWeightsAlone) {
  Perceptron p(2, 1.0);
  LinearWeights w(2);
  w.w = {1, 0};
  p.set_weights(w);
  const std::vector<double> x = {0.5, 7};
  Update u = p.Learn(x, +1, 1.0);
  EXPECT_FALSE(u.updated);
  EXPECT_EQ(u.margin, 0.5);
  EXPECT_THAT(p.weights().w, ElementsAre(1, 0));
}

TEST(PerceptronTest, MistakeLossIsNegativeMarginAndStepScalesWithEta) {
  Perceptron p(2, 0.5);
  LinearWeights w(2);
  w.w = {1, 1};
  p.set_weights(w);
  const std::vector<double> x = {2, 1};
  Update u = p.Learn(x, -1, 1.0);  // score 3, margin -3
  EXPECT_EQ(u.margin, -3);
  EXPECT_EQ(u.loss, 3);
  EXPECT_EQ(u.predicted_label, +1);
  EXPECT_THAT(p.weights().w, ElementsAre(0, 0.5));
  EXPECT_EQ(p.weights().b, -0.5);
}

TEST(PerceptronTest, UpdatesStayWithinNovikoffBoundOnSeparableData) {
  // Separable by x1 - x2 = 0 with margin; count updates until convergence.
  std::vector<Point> data;
  for (int i = 0; i < 40; ++i) {
    const double a = (i % 7) * 0.3 + 0.5, c = (i % 5) * 0.2;
    data.push_back({{a + c + 0.5, c}, +1});
    data.push_back({{c, a + c + 0.5}, -1});
  }
  Perceptron p(2, 1.0);
  int passes = 0;
  Trace trace = TrainUntilConverged(p, data, &passes);
  ASSERT_LE(passes, 100);
  // γ for the unit separator (w*, b*) = ((1, -1)/√2, 0) is min y·w*·x.
  double gamma = 1e9, r2 = 0;
  for (const Point& d : data) {
    gamma = std::min(gamma, d.y * (d.x[0] - d.x[1]) / std::sqrt(2.0));
    r2 = std::max(r2, d.x[0] * d.x[0] + d.x[1] * d.x[1] + 1);
  }
  EXPECT_LE(trace.size(), r2 / (gamma * gamma));
  for (const Point& d : data) {
    EXPECT_GT(d.y * p.weights().Score(d.x), 0);
  }
}

// The stream of Freund & Schapire's algorithm by hand, d = 2:
//   1. x = (1, 0),  y = +1: v1 = 0 errs; v2 = (1, 0; 1), c2 = 1
//   2. x = (0, 1),  y = -1: v2 scores 1, errs; v3 = (1, -1; 0), c3 = 1
//   3. x = (1, 0),  y = +1: v3 scores 1: c3 = 2
//   4. x = (0, 1),  y = -1: v3 scores -1: c3 = 3
//   5. x = (-1, 0), y = +1: v3 scores -1, errs; v4 = (0, -1; 1), c4 = 1
//   6. x = (0, 1),  y = +1: v4 scores 0, errs; v5 = (0, 0; 2), c5 = 1
const std::vector<std::pair<std::vector<double>, int>>& VotedStream() {
  static const auto* stream =
      new std::vector<std::pair<std::vector<double>, int>>{
          {{1, 0}, 1},  {{0, 1}, -1}, {{1, 0}, 1},
          {{0, 1}, -1}, {{-1, 0}, 1}, {{0, 1}, 1}};
  return *stream;
}

TEST(PerceptronTest, MarginThresholdUpdatesUpToAndIncludingTau) {
  Perceptron p(2, 1.0, /*margin_threshold=*/0.5);
  p.set_weights(Weights({0.5, 0}, 0));
  const std::vector<double> x = {1, 0};
  Update at_tau = p.Learn(x, +1, 1.0);  // margin exactly τ
  EXPECT_TRUE(at_tau.updated);
  EXPECT_EQ(at_tau.loss, 0.0);
  Update above = p.Learn(x, +1, 1.0);  // margin 1.5 > τ
  EXPECT_FALSE(above.updated);
  EXPECT_THAT(p.weights().w, ElementsAre(1.5, 0));
}

TEST(PerceptronTest, ImportanceWeightScalesTheStepAndZeroSkips) {
  Perceptron p(2, 1.0);
  const std::vector<double> x = {1, 2};
  EXPECT_FALSE(p.Learn(x, +1, 0.0).updated);
  EXPECT_TRUE(p.Learn(x, -1, 2.0).updated);
  EXPECT_THAT(p.weights().w, ElementsAre(-2, -4));
  EXPECT_EQ(p.weights().b, -2);
}

TEST(PerceptronTest, LossIsHowFarTheMarginFallsShortOfTau) {
  Perceptron p(1, 1.0, /*margin_threshold=*/0.5);
  p.set_weights(Weights({1.0}, 0.0));
  const std::vector<double> small = {0.2}, large = {2.0};
  Update u = p.Learn(small, +1, 1.0);  // margin 0.2 <= τ
  EXPECT_DOUBLE_EQ(u.loss, 0.3);
  EXPECT_TRUE(u.updated);
  u = p.Learn(large, +1, 1.0);  // margin 2.4 + 1 > τ
  EXPECT_EQ(u.loss, 0.0);
  EXPECT_FALSE(u.updated);
}

// The averaged perceptron, plain (τ = 0) and with a margin (the averaged
// margin perceptron), against the perceptron with the same τ averaged by
// hand.
TEST(AveragedPerceptronTest, PredictsWithTheMeanOfTheWeightsAfterEachExample) {
  const auto xs = RandomPoints(200, 3, 7);
  for (double tau : {0.0, 0.5}) {
    SCOPED_TRACE(tau);
    AveragedPerceptron averaged(3, 1.0, tau);
    Perceptron plain(3, 1.0, tau);
    LinearWeights sum(3);
    int close_updates = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const Update a = averaged.Learn(xs[i], Label(xs[i]), 1.0);
      const Update p = plain.Learn(xs[i], Label(xs[i]), 1.0);
      EXPECT_EQ(a.updated, p.updated) << i;
      EXPECT_EQ(a.loss, p.loss) << i;
      close_updates += a.updated && a.margin > 0;
      for (int j = 0; j < 3; ++j) sum.w[j] += plain.weights().w[j];
      sum.b += plain.weights().b;
      if (i % 17 == 0 || i + 1 == xs.size()) {
        averaged.EndBatch();
        const double n = i + 1;
        for (int j = 0; j < 3; ++j) {
          EXPECT_NEAR(averaged.weights().w[j], sum.w[j] / n, 1e-12) << i;
        }
        EXPECT_NEAR(averaged.weights().b, sum.b / n, 1e-12) << i;
      }
    }
    // With a margin it also updates on examples classified correctly but
    // too closely.
    EXPECT_EQ(close_updates > 0, tau > 0);
  }
}

// --- The confidence-weighted family, by hand ------------------------------
// Two steps from w = 0, b = 0, all variances 1: (x, y) = ((1, 0), +1), then
// ((0, 1), -1). The first has m = 0 and v = σ_1 + σ_b = 2.

TEST(VotedPerceptronTest, VotesWithEveryVectorWeightedByItsSurvival) {
  VotedPerceptron voted(2, /*max_vectors=*/64);
  const std::vector<bool> updates = {true, true, false, false, true};
  const std::vector<double> scores = {0, 1, 1, -1, -1};
  for (size_t i = 0; i < 5; ++i) {
    const Update u =
        voted.Learn(VotedStream()[i].first, VotedStream()[i].second, 1.0);
    EXPECT_EQ(u.updated, updates[i]) << i;
    EXPECT_EQ(u.score, scores[i]) << i;  // the current vector's
  }
  // v2 (c 1), v3 (c 3), v4 (c 1):
  const std::vector<double> a = {1, 0}, b = {-0.5, 0};
  EXPECT_EQ(voted.Score(a), 5);   // all three say +1
  EXPECT_EQ(voted.Score(b), -1);  // +1·1 - 1·3 + 1·1
  // v3 scores 0 at the origin: a vote for +1, as f(x) = 0 predicts.
  EXPECT_EQ(voted.Score(std::vector<double>{0, 0}), 5);
  EXPECT_FALSE(voted.linear());
  // The linear summary is the average (4, -4; 2)/5, which puts b exactly on
  // its hyperplane (+1) where the vote says -1.
  voted.EndBatch();
  const LinearWeights& average = voted.weights();
  EXPECT_THAT(average.w, ElementsAre(DoubleEq(0.8), DoubleEq(-0.8)));
  EXPECT_DOUBLE_EQ(average.b, 0.4);
  EXPECT_NEAR(average.Score(b), 0.0, 1e-15);
  // The last vector alone would say +1 at b too.
  EXPECT_EQ(voted.Learn(VotedStream()[5].first, 1, 1.0).score, 0);
  EXPECT_EQ(voted.Score(b), 0);  // v5 = (0, 0; 2) votes +1 once more
}

TEST(VotedPerceptronTest, PastMaxVectorsTheOldestMergeIntoOneVoter) {
  VotedPerceptron voted(2, /*max_vectors=*/2);
  for (size_t i = 0; i < 5; ++i) {
    voted.Learn(VotedStream()[i].first, VotedStream()[i].second, 1.0);
  }
  // v1 (c 0) and v2 (c 1) merged: the sum v2 votes as v2 did.
  const std::vector<double> b = {-0.5, 0};
  EXPECT_EQ(voted.Score(b), -1);
  voted.Learn(VotedStream()[5].first, 1, 1.0);
  // v3 (c 3) merged too: S = v2 + 3·v3 = (4, -3; 1) scores -1 at b and
  // votes with c = 4; v4 and v5 say +1: -4 + 1 + 1. Unbounded, 0.
  EXPECT_EQ(voted.Score(b), -2);
  // Memory: the count, the merged count and sum, two vectors.
  EXPECT_EQ(voted.ExportState().size(), 2u + 3u + 2u * 4u);
  // A restored vote votes and learns on identically.
  VotedPerceptron restored(2, 2);
  voted.EndBatch();
  restored.set_weights(voted.weights());
  ASSERT_TRUE(restored.ImportState(voted.ExportState()).ok());
  EXPECT_EQ(restored.Score(b), -2);
  for (VotedPerceptron* v : {&voted, &restored}) v->Learn(b, -1, 2.0);
  EXPECT_EQ(restored.ExportState(), voted.ExportState());
  // A state of more vectors than max_vectors does not fit.
  VotedPerceptron wide(2, 64);
  for (const auto& [x, y] : VotedStream()) wide.Learn(x, y, 1.0);
  EXPECT_FALSE(restored.ImportState(wide.ExportState()).ok());
}

TEST(VotedPerceptronTest, TheMergedVoterWeighsBiasesByCountAsWeights) {
  VotedPerceptron voted(2, /*max_vectors=*/2);
  for (const auto& [x, y] : VotedStream()) voted.Learn(x, y, 1.0);
  // As above, S = (4, -3; 1) with c = 4; v4 = (0, -1; 1) and v5 = (0, 0; 2)
  // vote once each. v5 survives two examples (c5 = 3); two mistakes then
  // make v6 = (0, -1; 1) and v7 = (0, 0; 2), merging v4 and v5:
  // S = (4, -3; 1) + (0, -1; 1) + 3·(0, 0; 2) = (4, -4; 8), c = 8.
  const std::vector<double> e1 = {1, 0}, e2 = {0, 1};
  voted.Learn(e2, 1, 1.0);
  voted.Learn(e1, 1, 1.0);
  EXPECT_TRUE(voted.Learn(e2, -1, 1.0).updated);
  EXPECT_TRUE(voted.Learn(e2, 1, 1.0).updated);
  // At z, S scores -6 + 8 (8 votes for +1; with v5's bias unweighted,
  // -6 + 4 and 8 against), v6 +1 and v7 +2 (one vote each).
  const std::vector<double> z = {-1.5, 0};
  EXPECT_EQ(voted.Score(z), 10);
}

TEST(VotedPerceptronTest, AModelPredictsTheVoteWithoutADistance) {
  ModelSpec spec;
  spec.dimension = 2;
  spec.algorithm = VotedPerceptronParams{};
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Example> stream;
  for (size_t i = 0; i < 5; ++i) {
    stream.push_back({VotedStream()[i].first, VotedStream()[i].second});
  }
  std::vector<ExampleOutcome> out(stream.size());
  ASSERT_TRUE((*model)->Learn(stream, absl::MakeSpan(out)).ok());
  const std::vector<double> b = {-0.5, 0};
  std::vector<Prediction> p(1);
  ASSERT_TRUE((*model)->Predict({FeatureInput(b)}, absl::MakeSpan(p)).ok());
  EXPECT_EQ(p[0].score, -1);
  EXPECT_EQ(p[0].label, -1);
  EXPECT_FALSE(p[0].signed_distance.has_value());
  EXPECT_FALSE(p[0].probability.has_value());
  // Weights and statistics are the average's.
  EXPECT_THAT((*model)->Weights().weights.w,
              ElementsAre(DoubleEq(0.8), DoubleEq(-0.8)));
  EXPECT_DOUBLE_EQ((*model)->Stats().weight_norm, std::sqrt(1.28));
  Evaluation evaluation;
  ASSERT_TRUE((*model)->Evaluate({{b, -1}}, std::nullopt, evaluation).ok());
  EXPECT_EQ(evaluation.accuracy(), 1.0);
}

TEST(VotedPerceptronTest, ImportanceWeightsCountAndZeroIsNothing) {
  VotedPerceptron voted(2, 8);
  const std::vector<double> x = {1, 0};
  voted.Learn(x, 1, 0.0);
  EXPECT_EQ(voted.ExportState(), VotedPerceptron(2, 8).ExportState());
  voted.Learn(x, 1, 2.5);  // errs: the new vector counts 2.5
  voted.Learn(x, 1, 0.5);  // survives: 3
  EXPECT_EQ(voted.Score(x), 3);
  voted.EndBatch();
  EXPECT_THAT(voted.weights().w, ElementsAre(2.5, 0));  // the only voter
}

TEST(PocketPerceptronTest, RatchetKeepsAPocketThatDidAsWell) {
  for (bool ratchet : {true, false}) {
    SCOPED_TRACE(ratchet);
    PocketPerceptron p(1, 1.0, ratchet, /*predict_with_pocket=*/true);
    p.set_weights(Weights({1.0}, 0.0));
    const std::vector<double> one = {1}, minus_one = {-1}, two = {2};
    p.Learn(one, +1, 1.0);        // correct: run 1 for w = pocket
    p.Learn(minus_one, +1, 1.0);  // noise: w = (0), b = 1; the pocket stays
    p.Learn(two, +1, 1.0);        // both correct; w's run 1
    p.Learn(two, +1, 1.0);        // both correct; w's run 2 > the pocket's 1
    // With the ratchet, the pocket made no mistake on w's run: it stays.
    EXPECT_EQ(p.weights().w[0], ratchet ? 1.0 : 0.0);
    EXPECT_EQ(p.weights().b, ratchet ? 0.0 : 1.0);
  }
}

TEST(PocketPerceptronTest, PocketBeatsTheLastWeightsOnNoisyData) {
  const auto xs = RandomPoints(400, 2, 3);
  std::mt19937 rng(5);
  std::vector<int> noisy;
  for (const auto& x : xs)
    noisy.push_back(rng() % 10 == 0 ? -Label(x) : Label(x));
  PocketPerceptron pocket(2, 1.0, true, true);
  PocketPerceptron last(2, 1.0, true, /*predict_with_pocket=*/false);
  for (int pass = 0; pass < 5; ++pass) {
    for (size_t i = 0; i < xs.size(); ++i) {
      pocket.Learn(xs[i], noisy[i], 1.0);
      last.Learn(xs[i], noisy[i], 1.0);
    }
  }
  auto accuracy = [&](const LinearWeights& w) {
    int correct = 0;
    for (const auto& x : RandomPoints(2000, 2, 99)) {
      correct += PredictedLabel(w.Score(x)) == Label(x) ? 1 : 0;
    }
    return correct / 2000.0;
  };
  EXPECT_GT(accuracy(pocket.weights()), 0.9);
  EXPECT_GE(accuracy(pocket.weights()), accuracy(last.weights()));
}

TEST(PocketPerceptronTest, ATiedRunDoesNotReplaceThePocket) {
  PocketPerceptron p(1, 1.0, /*ratchet=*/false, /*predict_with_pocket=*/true);
  p.set_weights(Weights({1.0}, 0.0));
  const std::vector<double> one = {1}, minus_one = {-1}, two = {2};
  p.Learn(one, +1, 1.0);        // the pocket's run: 1
  p.Learn(minus_one, +1, 1.0);  // mistake: w = (0), b = 1
  p.Learn(two, +1, 1.0);        // w's run: 1, a tie
  EXPECT_EQ(p.weights().w[0], 1.0);
  EXPECT_EQ(p.weights().b, 0.0);
  p.Learn(two, +1, 1.0);  // w's run: 2, longer
  EXPECT_EQ(p.weights().w[0], 0.0);
  EXPECT_EQ(p.weights().b, 1.0);
}

TEST(PocketPerceptronTest, ExamplesOfWeightZeroNeitherLearnNorLengthenARun) {
  PocketPerceptron p(1, 1.0, /*ratchet=*/false, /*predict_with_pocket=*/true);
  p.set_weights(Weights({1.0}, 0.0));
  const std::vector<double> one = {1}, minus_one = {-1}, two = {2};
  p.Learn(one, +1, 1.0);  // the pocket's run: 1
  EXPECT_FALSE(p.Learn(minus_one, +1, 0.0).updated);
  p.Learn(minus_one, +1, 1.0);  // mistake: w = (0), b = 1
  for (int i = 0; i < 5; ++i) p.Learn(two, +1, 0.0);
  EXPECT_EQ(p.weights().w[0], 1.0);  // w's run is still 0
  EXPECT_EQ(p.weights().b, 0.0);
}

}  // namespace
}  // namespace halfspace
