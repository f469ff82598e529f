// Update rules of the perceptron family, passive-aggressive and SGD on
// hand-computed cases, including the edges where the margin sits exactly on
// the threshold; and exact continuation after a snapshot round trip.

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/algorithms/adagrad_classifier.h"
#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/confidence_weighted.h"
#include "core/algorithms/logistic_regression.h"
#include "core/algorithms/margin_loss.h"
#include "core/algorithms/multiclass_perceptron.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/algorithms/passive_aggressive.h"
#include "core/algorithms/perceptron.h"
#include "core/algorithms/pocket_perceptron.h"
#include "core/algorithms/sgd_classifier.h"
#include "core/algorithms/softmax_regression.h"
#include "core/algorithms/voted_perceptron.h"
#include "core/evaluation.h"
#include "core/model.h"
#include "core/storage/snapshot_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

LinearWeights Weights(std::vector<double> w, double b) {
  LinearWeights weights;
  weights.w = std::move(w);
  weights.b = b;
  return weights;
}

TEST(MarginLossTest, ValuesAndDerivativesAtTheKinks) {
  auto hinge = MakeMarginLoss(LossKind::kHinge);
  EXPECT_EQ(hinge->Value(1.0), 0.0);
  EXPECT_EQ(hinge->Derivative(1.0), -1.0);  // the kink still updates
  EXPECT_EQ(hinge->Derivative(1.5), 0.0);
  EXPECT_EQ(hinge->Value(-2.0), 3.0);
  auto perceptron = MakeMarginLoss(LossKind::kPerceptron);
  EXPECT_EQ(perceptron->Derivative(0.0), -1.0);
  EXPECT_EQ(perceptron->Derivative(1e-12), 0.0);
  auto squared = MakeMarginLoss(LossKind::kSquaredHinge);
  EXPECT_EQ(squared->Value(-1.0), 4.0);
  EXPECT_EQ(squared->Derivative(-1.0), -4.0);
  EXPECT_EQ(squared->Derivative(1.0), 0.0);
  auto huber = MakeMarginLoss(LossKind::kModifiedHuber);
  EXPECT_EQ(huber->Value(-1.0), 4.0);
  EXPECT_EQ(huber->Derivative(-1.0), -4.0);
  EXPECT_EQ(huber->Value(-3.0), 12.0);
  EXPECT_EQ(huber->Derivative(0.5), -1.0);
  EXPECT_EQ(huber->Derivative(-0.5), -3.0);  // -2(1 - z) down to z = -1
  EXPECT_EQ(*huber->Probability(0.5), 0.75);
  EXPECT_EQ(*huber->Probability(-7.0), 0.0);
  auto log = MakeMarginLoss(LossKind::kLog);
  EXPECT_DOUBLE_EQ(log->Value(0.0), std::log(2.0));
  EXPECT_EQ(log->Derivative(0.0), -0.5);
  EXPECT_EQ(*log->Probability(0.0), 0.5);
  // scikit-learn's cutoffs: its formulas up to |z| = 18, its
  // approximations beyond.
  EXPECT_EQ(log->Derivative(18.0), -1.0 / (std::exp(18.0) + 1.0));
  EXPECT_EQ(log->Derivative(18.1), -std::exp(-18.1));
  EXPECT_EQ(log->Derivative(-18.0), -1.0 / (std::exp(-18.0) + 1.0));
  EXPECT_EQ(log->Derivative(-18.1), -1.0);
  EXPECT_EQ(log->Value(18.0), std::log(1.0 + std::exp(-18.0)));
  EXPECT_EQ(log->Value(18.1), std::exp(-18.1));
  EXPECT_EQ(log->Value(-18.0), std::log(1.0 + std::exp(18.0)));
  EXPECT_EQ(log->Value(-18.1), 18.1);
  // Where the exact sigmoid and scikit-learn's form round apart.
  EXPECT_EQ(log->Derivative(0.01), -0.49750002083312506);  // σ: ...125
  auto exponential = MakeMarginLoss(LossKind::kExponential);
  EXPECT_EQ(exponential->Value(0.0), 1.0);
  EXPECT_DOUBLE_EQ(exponential->Derivative(2.0), -std::exp(-2.0));
  EXPECT_FALSE(exponential->Probability(1.0).has_value());
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

TEST(PassiveAggressiveTest, StepSizesOfPaPaIAndPaII) {
  const std::vector<double> x = {1, 2};  // ‖x‖² = 5, loss from w = 0 is 1
  PassiveAggressive pa(2, PaVariant::kPa, 1.0);
  EXPECT_DOUBLE_EQ(pa.Learn(x, +1, 1.0).loss, 1.0);
  EXPECT_THAT(pa.weights().w, ElementsAre(DoubleEq(0.2), DoubleEq(0.4)));
  EXPECT_DOUBLE_EQ(pa.weights().b, 0.2);
  // PA moves exactly onto the margin (the bias is outside ‖x‖², as in
  // scikit-learn, so the new margin is 1 + τ).
  EXPECT_DOUBLE_EQ(pa.Learn(x, +1, 1.0).margin, 1.2);

  PassiveAggressive pa1(2, PaVariant::kPaI, 0.1);
  pa1.Learn(x, -1, 1.0);
  EXPECT_THAT(pa1.weights().w, ElementsAre(DoubleEq(-0.1), DoubleEq(-0.2)));

  PassiveAggressive pa2(2, PaVariant::kPaII, 0.5);
  pa2.Learn(x, +1, 2.0);  // τ = 1/(5 + 1), doubled by the weight
  EXPECT_THAT(pa2.weights().w,
              ElementsAre(DoubleEq(2.0 / 6), DoubleEq(4.0 / 6)));
}

TEST(PassiveAggressiveTest, MarginOfExactlyOneIsPassive) {
  PassiveAggressive pa(1, PaVariant::kPaI, 1.0);
  pa.set_weights(Weights({1.0}, 0.0));
  const std::vector<double> x = {1.0};
  Update u = pa.Learn(x, +1, 1.0);
  EXPECT_EQ(u.loss, 0.0);
  EXPECT_FALSE(u.updated);
}

TEST(PassiveAggressiveTest, ZeroVectorMovesOnlyPaIIsBias) {
  const std::vector<double> zero = {0.0, 0.0};
  PassiveAggressive pa1(2, PaVariant::kPaI, 1.0);
  EXPECT_FALSE(pa1.Learn(zero, +1, 1.0).updated);
  PassiveAggressive pa2(2, PaVariant::kPaII, 1.0);
  EXPECT_TRUE(pa2.Learn(zero, +1, 1.0).updated);
  EXPECT_DOUBLE_EQ(pa2.weights().b, 2.0);  // 1 / (0 + 1/2)
}

std::vector<std::vector<double>> RandomPoints(int n, int d, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> xs(n, std::vector<double>(d));
  for (auto& x : xs) {
    for (double& v : x) v = normal(rng);
  }
  return xs;
}

int Label(const std::vector<double>& x) { return x[0] - x[1] > 0.3 ? 1 : -1; }

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

struct CwState {
  std::vector<double> w;
  double b;
  std::vector<double> sigma;  // σ_1, σ_2, σ_b
};

CwState Of(const ConfidenceWeighted& cw) {
  return {cw.weights().w, cw.weights().b, cw.ExportState()};
}

TEST(ConfidenceWeightedTest, ArowStepsByHand) {
  ConfidenceWeighted arow(2, CwVariant::kArow, 1.0, /*r=*/1.0, 1.0);
  // β = 1/(v + r) = 1/3, α = (1 - m)·β = 1/3; σ -= β·σ²·x².
  Update u = arow.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_TRUE(u.updated);
  EXPECT_EQ(u.loss, 1.0);
  CwState s = Of(arow);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(1.0 / 3), 0.0));
  EXPECT_DOUBLE_EQ(s.b, 1.0 / 3);
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(2.0 / 3), 1.0, DoubleEq(2.0 / 3)));
  // m = -1/3, v = σ_2 + σ_b = 5/3: β = 3/8, α = (4/3)·(3/8) = 1/2.
  arow.Learn(std::vector<double>{0, 1}, -1, 1.0);
  s = Of(arow);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(1.0 / 3), DoubleEq(-0.5)));
  EXPECT_NEAR(s.b, 0.0, 1e-15);  // 1/3 - (1/2)(2/3)
  EXPECT_THAT(s.sigma,
              ElementsAre(DoubleEq(2.0 / 3), DoubleEq(5.0 / 8), DoubleEq(0.5)));
  // A margin of 1 or more is passive.
  arow.set_weights(Weights({2, 0}, 0));
  EXPECT_FALSE(arow.Learn(std::vector<double>{1, 0}, +1, 1.0).updated);
}

TEST(ConfidenceWeightedTest, NherdStepsByHand) {
  ConfidenceWeighted nherd(2, CwVariant::kNherd, 1.0, 1.0, /*C=*/1.0);
  // α = (1 - m)/(v + 1/C) = 1/3; 1/σ += (2C + C²v)·x² = 4·x².
  nherd.Learn(std::vector<double>{1, 0}, +1, 1.0);
  CwState s = Of(nherd);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(1.0 / 3), 0.0));
  EXPECT_DOUBLE_EQ(s.b, 1.0 / 3);
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(0.2), 1.0, DoubleEq(0.2)));
  // m = -1/3, v = 1 + 1/5 = 6/5: α = (4/3)/(11/5) = 20/33; 1/σ += 16/5.
  nherd.Learn(std::vector<double>{0, 1}, -1, 1.0);
  s = Of(nherd);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(1.0 / 3), DoubleEq(-20.0 / 33)));
  EXPECT_DOUBLE_EQ(s.b, 7.0 / 33);  // 1/3 - (20/33)(1/5)
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(0.2), DoubleEq(5.0 / 21),
                                   DoubleEq(5.0 / 41)));
}

TEST(ConfidenceWeightedTest, CwStepByHand) {
  ConfidenceWeighted cw(2, CwVariant::kCw, /*phi=*/1.0, 1.0, 1.0);
  // b' = 1 + 2φm = 1; α = (-1 + √(1 + 16))/8; 1/σ += 2αφ·x².
  Update u = cw.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_DOUBLE_EQ(u.loss, std::sqrt(2.0));  // φ√v - m
  const double alpha = (std::sqrt(17.0) - 1) / 8;
  CwState s = Of(cw);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(alpha), 0.0));
  EXPECT_DOUBLE_EQ(s.b, alpha);
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(1 / (1 + 2 * alpha)), 1.0,
                                   DoubleEq(1 / (1 + 2 * alpha))));
}

TEST(ConfidenceWeightedTest, ScwStepsByHand) {
  // SCW-I, φ = 1, C = 1: ψ = 3/2, ζ = 2; α = √(vφ²ζ)/(vζ) = 2/4 = 1/2;
  // u = ¼(√(α²v²φ² + 4v) − αvφ)² = ¼(3 − 1)² = 1; β = αφ/(√u + vαφ) = 1/4.
  ConfidenceWeighted scw1(2, CwVariant::kScwI, 1.0, 1.0, /*C=*/1.0);
  scw1.Learn(std::vector<double>{1, 0}, +1, 1.0);
  CwState s = Of(scw1);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(0.5), 0.0));
  EXPECT_DOUBLE_EQ(s.b, 0.5);
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(0.75), 1.0, DoubleEq(0.75)));
  // C caps α.
  ConfidenceWeighted capped(2, CwVariant::kScwI, 1.0, 1.0, /*C=*/0.25);
  capped.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_DOUBLE_EQ(capped.weights().w[0], 0.25);
  // SCW-II: n = v + 1/(2C) = 5/2; γ = φ√(4nv(n + vφ²)) = √90;
  // α = γ/(2(n² + nvφ²)) = √90/22.5.
  ConfidenceWeighted scw2(2, CwVariant::kScwII, 1.0, 1.0, /*C=*/1.0);
  scw2.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_DOUBLE_EQ(scw2.weights().w[0], std::sqrt(90.0) / 22.5);
  // Confident enough (φ√v <= m): passive.
  ConfidenceWeighted sure(2, CwVariant::kScwI, 1.0, 1.0, 1.0);
  sure.set_weights(Weights({3, 0}, 0));
  EXPECT_FALSE(sure.Learn(std::vector<double>{1, 0}, +1, 1.0).updated);
}

TEST(ConfidenceWeightedTest, StateRoundTripsAndWeightZeroLearnsNothing) {
  ConfidenceWeighted a(3, CwVariant::kArow, 1.0, 1.0, 1.0);
  for (const auto& x : RandomPoints(50, 3, 5)) a.Learn(x, Label(x), 1.0);
  ConfidenceWeighted b(3, CwVariant::kArow, 1.0, 1.0, 1.0);
  b.set_weights(a.weights());
  ASSERT_TRUE(b.ImportState(a.ExportState()).ok());
  for (const auto& x : RandomPoints(50, 3, 6)) {
    const Update ua = a.Learn(x, Label(x), 1.0), ub = b.Learn(x, Label(x), 1.0);
    EXPECT_EQ(ua.score, ub.score);
  }
  EXPECT_EQ(a.weights().w, b.weights().w);
  EXPECT_FALSE(b.ImportState({1.0}).ok());
  const std::vector<double> before = b.ExportState();
  EXPECT_FALSE(b.Learn(std::vector<double>{1, 1, 1}, -1, 0.0).updated);
  EXPECT_EQ(b.ExportState(), before);
}

// What the family is for: on a stream with 10% of its labels flipped, AROW
// and SCW keep closer to the true boundary than PA-I, which follows every
// flipped label with a full step. Progressive accuracy, against the true
// labels, of the predictions made before each update.
TEST(ConfidenceWeightedTest, ArowAndScwResistLabelNoiseBetterThanPaI) {
  std::mt19937 rng(42);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  constexpr int kDim = 10, kExamples = 5000;
  std::vector<double> truth(kDim);
  for (double& t : truth) t = normal(rng);
  PassiveAggressive pa(kDim, PaVariant::kPaI, 1.0);
  ConfidenceWeighted arow(kDim, CwVariant::kArow, 1.0, 1.0, 1.0);
  ConfidenceWeighted scw(kDim, CwVariant::kScwI, 1.0, 1.0, 1.0);
  int pa_right = 0, arow_right = 0, scw_right = 0;
  for (int i = 0; i < kExamples; ++i) {
    std::vector<double> x(kDim);
    double dot = 0;
    for (int j = 0; j < kDim; ++j) {
      x[j] = normal(rng);
      dot += truth[j] * x[j];
    }
    const int y = dot >= 0 ? 1 : -1;
    const int seen = unit(rng) < 0.1 ? -y : y;
    pa_right += pa.Learn(x, seen, 1.0).predicted_label == y;
    arow_right += arow.Learn(x, seen, 1.0).predicted_label == y;
    scw_right += scw.Learn(x, seen, 1.0).predicted_label == y;
  }
  EXPECT_GT(arow_right, pa_right + kExamples / 50)
      << "AROW " << arow_right << ", PA-I " << pa_right;
  EXPECT_GT(scw_right, pa_right + kExamples / 50)
      << "SCW-I " << scw_right << ", PA-I " << pa_right;
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

TEST(SgdClassifierTest, OptimalScheduleStartsAtScikitLearnsEta) {
  SgdOptions options;  // hinge, L2, α = 1e-4, optimal
  SgdClassifier sgd(2, 1.0, options);
  const std::vector<double> x = {1, 0};
  sgd.Learn(x, +1, 1.0);  // η_1 = √(1/√α) = 10, margin 0 <= 1
  sgd.EndBatch();
  EXPECT_THAT(sgd.weights().w, ElementsAre(10, 0));
  EXPECT_EQ(sgd.weights().b, 10);
  // η_2 = 1/(α·(t0 + 1)) with t0 = 1/(10·α) = 1000; the margin is 20 > 1,
  // so only the L2 shrink acts.
  sgd.Learn(x, +1, 1.0);
  sgd.EndBatch();
  const double eta2 = 1.0 / (1e-4 * 1001.0);
  EXPECT_DOUBLE_EQ(sgd.weights().w[0], 10 * (1 - eta2 * 1e-4));
  EXPECT_EQ(sgd.weights().b, 10);
}

TEST(SgdClassifierTest, L1NeverPushesAWeightPastZero) {
  SgdOptions options;
  options.penalty = Penalty::kL1;
  options.alpha = 1.0;
  options.schedule = Schedule::kConstant;
  SgdClassifier sgd(2, 0.1, options);
  const std::vector<double> x = {1, 0.05};
  sgd.Learn(x, +1, 1.0);  // step 0.1 adds (0.1, 0.005); L1 charges 0.1 each
  sgd.EndBatch();
  EXPECT_THAT(sgd.weights().w, ElementsAre(0, 0));
  EXPECT_DOUBLE_EQ(sgd.weights().b, 0.1);  // the bias is not penalized
}

TEST(SgdClassifierTest, L1ChargesOnlyTheCoordinatesAnExampleStores) {
  SgdOptions options;
  options.penalty = Penalty::kL1;
  options.alpha = 0.01;
  options.schedule = Schedule::kConstant;
  SgdClassifier sgd(3, 1.0, options);
  sgd.set_weights(Weights({1.0, 1.0, 1.0}, 0.0));
  const std::vector<uint32_t> indices = {1};
  const std::vector<double> values = {0.0};  // stored, but zero: no step
  Features x;
  x.indices = indices;
  x.values = values;
  sgd.Learn(x, +1, 1.0);  // margin 0 <= 1: a step of 0·x, then L1
  sgd.EndBatch();
  EXPECT_THAT(sgd.weights().w, ElementsAre(1.0, DoubleEq(0.99), 1.0));
}

TEST(AdaGradClassifierTest, FirstStepIsEtaPerActiveCoordinate) {
  AdaGradClassifier sgd(2, 0.5, LossKind::kHinge, /*l2=*/0.0);
  const std::vector<double> x = {2, 0};
  sgd.Learn(x, +1, 1.0);
  EXPECT_NEAR(sgd.weights().w[0], 0.5, 1e-8);
  EXPECT_EQ(sgd.weights().w[1], 0.0);
  EXPECT_NEAR(sgd.weights().b, 0.5, 1e-8);
}

TEST(SgdClassifierTest, ExponentialLossStepsByItsDerivative) {
  SgdOptions options;
  options.loss = LossKind::kExponential;
  options.penalty = Penalty::kNone;
  options.schedule = Schedule::kConstant;
  SgdClassifier sgd(1, 0.1, options);
  const std::vector<double> x = {1};
  EXPECT_EQ(sgd.Learn(x, -1, 1.0).loss, 1.0);  // e^0
  sgd.EndBatch();
  EXPECT_DOUBLE_EQ(sgd.weights().w[0], -0.1);
  Update second = sgd.Learn(x, -1, 1.0);  // margin 0.2
  sgd.EndBatch();
  EXPECT_DOUBLE_EQ(second.loss, std::exp(-0.2));
  EXPECT_DOUBLE_EQ(sgd.weights().w[0], -0.1 - 0.1 * std::exp(-0.2));
}

TEST(SgdClassifierTest, PredictsWithTheAverageOnlyOnceAveragingHasBegun) {
  SgdOptions options;
  options.schedule = Schedule::kConstant;
  options.penalty = Penalty::kNone;
  options.average_from = 3;
  SgdClassifier sgd(1, 1.0, options);  // hinge, η = 1
  const std::vector<double> x = {1};
  sgd.Learn(x, +1, 1.0);  // t = 1: w = 1
  sgd.EndBatch();
  EXPECT_EQ(sgd.weights().w[0], 1.0);  // not averaging yet: the raw w
  sgd.Learn(x, -1, 1.0);               // t = 2: margin -2, w = 0
  sgd.EndBatch();
  EXPECT_EQ(sgd.weights().w[0], 0.0);  // not averaging yet: the raw w
  sgd.Learn(x, +1, 1.0);               // t = 3: w = 1, and w̄ = w_3 = 1
  sgd.EndBatch();
  EXPECT_EQ(sgd.weights().w[0], 1.0);
  sgd.Learn(x, -1, 1.0);  // t = 4: w = 0, w̄ = (1 + 0)/2
  sgd.EndBatch();
  EXPECT_EQ(sgd.weights().w[0], 0.5);
  EXPECT_EQ(sgd.weights().b, 0.5);
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
        Algorithm::kPocketPerceptron, Algorithm::kVotedPerceptron}) {
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

}  // namespace
}  // namespace halfspace

namespace halfspace {
namespace {

TEST(EvaluationTest, ConfusionMatrixMetricsAndLogLoss) {
  Evaluation e;
  const int neg = e.ClassIndex("-1"), pos = e.ClassIndex("+1");
  // 3 true negatives, 1 false positive, 2 false negatives, 4 true positives.
  for (int i = 0; i < 3; ++i) e.Add(neg, neg, std::nullopt);
  e.Add(neg, pos, std::nullopt);
  for (int i = 0; i < 2; ++i) e.Add(pos, neg, std::nullopt);
  for (int i = 0; i < 4; ++i) e.Add(pos, pos, std::nullopt);
  e.Reject(absl::InvalidArgumentError("first"));
  e.Reject(absl::InvalidArgumentError("second"));
  EXPECT_EQ(e.examples(), 10u);
  EXPECT_EQ(e.rejected(), 2u);
  EXPECT_EQ(e.first_error().message(), "first");
  EXPECT_DOUBLE_EQ(e.accuracy(), 0.7);
  EXPECT_EQ(e.confusion(neg, pos), 1u);
  EXPECT_EQ(e.confusion(pos, neg), 2u);
  const Evaluation::ClassMetrics positive = e.metrics(pos);
  EXPECT_EQ(positive.support, 6u);
  EXPECT_DOUBLE_EQ(positive.precision, 4.0 / 5);
  EXPECT_DOUBLE_EQ(positive.recall, 4.0 / 6);
  EXPECT_DOUBLE_EQ(positive.f1, 8.0 / 11);
  const Evaluation::ClassMetrics negative = e.metrics(neg);
  EXPECT_DOUBLE_EQ(negative.precision, 3.0 / 5);
  EXPECT_DOUBLE_EQ(negative.recall, 3.0 / 4);
  EXPECT_FALSE(e.log_loss().has_value());  // no probabilities
}

TEST(EvaluationTest, ClassesAppearAsTheyComeAndGrowTheMatrix) {
  Evaluation e;
  const int cat = e.ClassIndex("cat");
  e.Add(cat, cat, std::nullopt);
  const int dog = e.ClassIndex("dog");
  EXPECT_EQ(e.ClassIndex("cat"), cat);
  e.Add(dog, cat, std::nullopt);
  EXPECT_EQ(e.confusion(dog, cat), 1u);
  EXPECT_EQ(e.metrics(dog).recall, 0.0);
  EXPECT_EQ(e.metrics(cat).precision, 0.5);
  EXPECT_THAT(e.classes(), ElementsAre("cat", "dog"));
}

TEST(EvaluationTest, LogLossClipsCertainMistakes) {
  Evaluation e;
  const int neg = e.ClassIndex("-1"), pos = e.ClassIndex("+1");
  e.Add(pos, pos, 0.8);  // the probability of the true class
  e.Add(neg, pos, 0.4);
  e.Add(pos, neg, 0.0);  // certain and wrong: clipped to machine epsilon
  EXPECT_DOUBLE_EQ(
      *e.log_loss(),
      -(std::log(0.8) + std::log(0.4) + std::log(std::ldexp(1.0, -52))) / 3);
  // Certain and right: clipped to 1 - ε, so the loss is ε, not 0.
  Evaluation certain;
  certain.Add(certain.ClassIndex("+1"), 0, 1.0);
  EXPECT_EQ(*certain.log_loss(), -std::log(1.0 - std::ldexp(1.0, -52)));
  EXPECT_GT(*certain.log_loss(), 0.0);
  Evaluation empty;
  EXPECT_EQ(empty.accuracy(), 0.0);
  EXPECT_FALSE(empty.log_loss().has_value());
}

}  // namespace
}  // namespace halfspace

namespace halfspace {
namespace {

TEST(MulticlassPerceptronTest, RaisesTheTrueClassAndLowersTheRival) {
  MulticlassPerceptron p(2, 1.0);
  for (int k = 0; k < 3; ++k) p.AddClass();
  std::vector<double> scores, probabilities;
  const std::vector<double> x = {1, 0};
  // All scores 0: the tie is a mistake; the rival is the first other class.
  MulticlassUpdate u = p.Learn(x, 0, 1.0, scores, probabilities);
  EXPECT_TRUE(u.updated);
  EXPECT_EQ(u.margin, 0.0);
  EXPECT_EQ(u.predicted_class, 0);
  EXPECT_THAT(p.weights(0).w, ElementsAre(1, 0));
  EXPECT_THAT(p.weights(1).w, ElementsAre(-1, 0));
  EXPECT_THAT(p.weights(2).w, ElementsAre(0, 0));
  EXPECT_TRUE(probabilities.empty());
  // Class 2 now: scores (2, -2, 0) for x = (2, 0); the rival is class 0.
  const std::vector<double> x2 = {2, 0};
  u = p.Learn(x2, 2, 1.0, scores, probabilities);
  EXPECT_THAT(scores, ElementsAre(3, -3, 0));  // biases 1, -1, 0
  EXPECT_EQ(u.margin, -3.0);
  EXPECT_EQ(u.loss, 3.0);
  EXPECT_EQ(u.predicted_class, 0);
  EXPECT_THAT(p.weights(2).w, ElementsAre(2, 0));
  EXPECT_THAT(p.weights(0).w, ElementsAre(-1, 0));
  // A clear win leaves everything alone.
  u = p.Learn(x2, 2, 1.0, scores, probabilities);
  EXPECT_FALSE(u.updated);
}

TEST(SoftmaxRegressionTest, FirstStepFromZeroAndProbabilitiesSumToOne) {
  SoftmaxRegression softmax(1, 0.3, 0.0);
  for (int k = 0; k < 3; ++k) softmax.AddClass();
  std::vector<double> scores, probabilities;
  const std::vector<double> x = {2};
  MulticlassUpdate u = softmax.Learn(x, 1, 1.0, scores, probabilities);
  EXPECT_DOUBLE_EQ(u.loss, std::log(3.0));
  EXPECT_THAT(probabilities, ElementsAre(DoubleEq(1.0 / 3), DoubleEq(1.0 / 3),
                                         DoubleEq(1.0 / 3)));
  EXPECT_DOUBLE_EQ(softmax.weights(1).w[0], 0.3 * (2.0 / 3) * 2);
  EXPECT_DOUBLE_EQ(softmax.weights(0).w[0], -0.3 * (1.0 / 3) * 2);
  EXPECT_DOUBLE_EQ(softmax.weights(1).b, 0.3 * (2.0 / 3));
  softmax.Predict(x, scores, probabilities);
  EXPECT_DOUBLE_EQ(probabilities[0] + probabilities[1] + probabilities[2], 1);
  EXPECT_EQ(ArgMax(scores), 1);
  // Huge scores neither overflow nor produce NaN.
  softmax.set_weights(0, Weights({800.0}, 0.0));
  softmax.Predict(x, scores, probabilities);
  EXPECT_DOUBLE_EQ(probabilities[0], 1.0);
  EXPECT_FALSE(std::isnan(probabilities[1]));
}

TEST(OneVsRestTest, IsIndependentBinaryModelsAndNormalizesProbabilities) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kLogisticRegression);
  spec.dimension = 2;
  OneVsRest ovr([spec] { return MakeBinaryClassifier(spec); });
  LogisticRegression alone_0(2, 1.0, 0.0), alone_1(2, 1.0, 0.0);
  ovr.AddClass();
  ovr.AddClass();
  std::vector<double> scores, probabilities;
  const auto xs = RandomPoints(50, 2, 17);
  for (const auto& x : xs) {
    const int y = Label(x) > 0 ? 1 : 0;
    ovr.Learn(x, y, 1.0, scores, probabilities);
    alone_0.Learn(x, y == 0 ? 1 : -1, 1.0);
    alone_1.Learn(x, y == 1 ? 1 : -1, 1.0);
  }
  EXPECT_EQ(ovr.weights(0).w, alone_0.weights().w);
  EXPECT_EQ(ovr.weights(1).w, alone_1.weights().w);
  // Learning reports the scores and normalized probabilities before the
  // update, and the argmax. (With two classes from zero, the binary models
  // are exact opposites, so their probabilities sum to 1 unnormalized; a
  // third class tells.)
  ovr.AddClass();
  const MulticlassUpdate u = ovr.Learn(xs[0], 2, 1.0, scores, probabilities);
  const double q0 = Sigmoid(scores[0]), q1 = Sigmoid(scores[1]);
  EXPECT_THAT(probabilities, ElementsAre(DoubleEq(q0 / (q0 + q1 + 0.5)),
                                         DoubleEq(q1 / (q0 + q1 + 0.5)),
                                         DoubleEq(0.5 / (q0 + q1 + 0.5))));
  EXPECT_EQ(u.predicted_class, ArgMax(scores));
  ovr.Predict(xs[0], scores, probabilities);
  const double p0 = Sigmoid(scores[0]), p1 = Sigmoid(scores[1]),
               p2 = Sigmoid(scores[2]);
  EXPECT_DOUBLE_EQ(probabilities[0], p0 / (p0 + p1 + p2));
  EXPECT_DOUBLE_EQ(probabilities[0] + probabilities[1] + probabilities[2], 1.0);
}

std::unique_ptr<Model> Multiclass(Algorithm algorithm, bool one_vs_rest,
                                  std::vector<std::string> classes = {}) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(algorithm);
  spec.one_vs_rest = one_vs_rest;
  spec.dimension = 4;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("m", spec, classes);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(MulticlassModelTest, ClassesArriveMidStreamAndAreNamedInOrder) {
  std::unique_ptr<Model> model =
      Multiclass(Algorithm::kSoftmaxRegression, false, {"b"});
  const std::vector<double> x = {1, 0, 0, 0};
  std::vector<Example> batch = {
      {x, 0, 1.0, "a"}, {x, 0, 1.0, "b"}, {x, 0, 1.0, ""}, {x, 0, 1.0, "c"}};
  std::vector<ExampleOutcome> out(batch.size());
  std::vector<std::string> names;
  ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out), &names).ok());
  EXPECT_THAT(names, ElementsAre("b", "a", "c"));
  EXPECT_EQ(out[0].class_scores.size(), 2u);  // "a" joined "b"
  EXPECT_EQ(out[1].class_scores.size(), 2u);
  EXPECT_THAT(out[2].error.message(),
              testing::HasSubstr("class_label is empty"));
  EXPECT_EQ(out[3].class_scores.size(), 3u);
  EXPECT_DOUBLE_EQ(out[3].class_probabilities[0] +
                       out[3].class_probabilities[1] +
                       out[3].class_probabilities[2],
                   1.0);
  EXPECT_EQ(model->Stats().counters.examples_seen, 3u);
}

TEST(MulticlassModelTest, RefusesAClassPastTheLimitInBand) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kMulticlassPerceptron);
  spec.dimension = 1;
  std::vector<std::string> classes;
  for (int k = 0; k < kMaxClasses; ++k) classes.push_back(absl::StrCat(k));
  std::unique_ptr<Model> model = *Model::Create("m", spec, classes);
  const std::vector<double> x = {1};
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(
      model->Learn({Example{x, 0, 1.0, "one more"}}, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0].error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(Model::Create("dup", spec, {"a", "a"}).ok());
  spec.algorithm = DefaultParams(Algorithm::kPerceptron);
  EXPECT_FALSE(Model::Create("binary", spec, {"a"}).ok());
}

// All classes together hold at most kMaxMulticlassWeights: with 2^24 hash
// buckets, one class fits and a second does not.
TEST(MulticlassModelTest, RefusesAClassPastTheWeightLimitInBand) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kMulticlassPerceptron);
  spec.hash_bits = kMaxHashBits;
  std::unique_ptr<Model> model = *Model::Create("m", spec, {"a"});
  Example example;
  const std::vector<uint32_t> index = {0};
  const std::vector<double> value = {1};
  example.features.has_sparse = true;
  example.features.sparse_indices = index;
  example.features.sparse_values = value;
  example.class_label = "b";
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({example}, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0].error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(model->classes(), ElementsAre("a"));
}

TEST(SnapshotContinuationTest, MulticlassModelsResumeExactly) {
  for (auto [algorithm, ovr] :
       {std::pair{Algorithm::kMulticlassPerceptron, false},
        std::pair{Algorithm::kSoftmaxRegression, false},
        std::pair{Algorithm::kAveragedPerceptron, true},
        std::pair{Algorithm::kSgd, true},
        std::pair{Algorithm::kConfidenceWeighted, true},
        std::pair{Algorithm::kVotedPerceptron, true}}) {
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

}  // namespace
}  // namespace halfspace

namespace halfspace {
namespace {

using ::testing::DoubleNear;

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

TEST(LogisticRegressionStepTest, L2ShrinksEvenAnExampleOfWeightZero) {
  LogisticRegression lr(1, 0.5, 0.1);
  lr.set_weights(Weights({2.0}, 1.0));
  const std::vector<double> x = {1};
  Update u = lr.Learn(x, +1, 0.0);
  EXPECT_TRUE(u.updated);  // the shrink changed w
  EXPECT_DOUBLE_EQ(lr.weights().w[0], 2.0 * (1 - 0.5 * 0.1));
  EXPECT_EQ(lr.weights().b, 1.0);  // the bias is not regularized

  LogisticRegression plain(1, 0.5, 0.0);
  EXPECT_FALSE(plain.Learn(x, +1, 0.0).updated);
}

TEST(LogisticRegressionStepTest, ImportanceWeightTwoIsTwiceTheStep) {
  LogisticRegression lr(2, 0.5, 0.0);
  const std::vector<double> x = {1, 2};
  lr.Learn(x, +1, 2.0);
  // step = η·s·(t - p) = 0.5·2·(1 - 0.5)
  EXPECT_THAT(lr.weights().w, ElementsAre(0.5, 1.0));
  EXPECT_EQ(lr.weights().b, 0.5);
}

TEST(AdaGradClassifierTest, L2StepsEveryCoordinateFromNonzeroWeights) {
  AdaGradClassifier sgd(2, 1.0, LossKind::kHinge, /*l2=*/0.1);
  sgd.set_weights(Weights({1.0, 2.0}, 0.0));
  const std::vector<double> x = {1, 0};
  Update u = sgd.Learn(x, +1, 1.0);  // margin 1: the hinge's kink, ℓ' = -1
  EXPECT_TRUE(u.updated);
  const double g0 = -1.0 + 0.1 * 1.0, g1 = 0.1 * 2.0;  // loss + L2 terms
  EXPECT_THAT(sgd.weights().w,
              ElementsAre(DoubleNear(1.0 - g0 / (std::abs(g0) + 1e-8), 1e-15),
                          DoubleNear(2.0 - g1 / (std::abs(g1) + 1e-8), 1e-15)));
  EXPECT_THAT(sgd.weights().b, DoubleNear(1.0 / (1.0 + 1e-8), 1e-15));
}

TEST(SgdClassifierTest, ElasticNetShrinksThenTruncatesByItsL1Share) {
  SgdOptions o;
  o.loss = LossKind::kHinge;
  o.penalty = Penalty::kElasticNet;
  o.alpha = 0.1;
  o.l1_ratio = 0.5;
  o.schedule = Schedule::kConstant;
  SgdClassifier sgd(2, 0.1, o);
  const std::vector<double> x1 = {2, -1}, x2 = {1, 1};
  // Step 1 from zero: w = 0.1·x1 = (0.2, -0.1), b = 0.1; then L1 charges
  // u = ρ·η·α = 0.005 toward zero.
  sgd.Learn(x1, +1, 1.0);
  sgd.EndBatch();
  EXPECT_THAT(sgd.weights().w,
              ElementsAre(DoubleNear(0.195, 1e-15), DoubleNear(-0.095, 1e-15)));
  EXPECT_THAT(sgd.weights().b, DoubleNear(0.1, 1e-15));
  // Step 2: score 0.2, y = -1. L2 share: w·(1 - 0.5·0.1·0.1) = 0.995·w,
  // then w - 0.1·x2, b - 0.1; L1 charges what each weight has not paid of
  // u = 0.01 (each has paid 0.005).
  Update u = sgd.Learn(x2, -1, 1.0);
  sgd.EndBatch();
  EXPECT_THAT(u.score, DoubleNear(0.2, 1e-15));
  EXPECT_THAT(sgd.weights().w,
              ElementsAre(DoubleNear(0.995 * 0.195 - 0.1 - 0.005, 1e-15),
                          DoubleNear(0.995 * -0.095 - 0.1 + 0.005, 1e-15)));
  EXPECT_THAT(sgd.weights().b, DoubleNear(0.0, 1e-15));
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

TEST(SoftmaxRegressionTest, L2ShrinksEveryRowAndTheLossIsOfTheTrueClass) {
  SoftmaxRegression softmax(1, 0.5, 0.2);
  softmax.AddClass();
  softmax.AddClass();
  const std::vector<double> x = {1};
  std::vector<double> scores, probabilities;
  // From zero: p = (1/2, 1/2), loss log 2; rows move by ±η/2.
  MulticlassUpdate u = softmax.Learn(x, 0, 1.0, scores, probabilities);
  EXPECT_DOUBLE_EQ(u.loss, std::log(2.0));
  EXPECT_THAT(softmax.weights(0).w, ElementsAre(0.25));
  EXPECT_THAT(softmax.weights(1).w, ElementsAre(-0.25));
  // Scores ±0.5 (w·x + b = ±(0.25 + 0.25)); true class 1.
  u = softmax.Learn(x, 1, 1.0, scores, probabilities);
  EXPECT_THAT(scores, ElementsAre(0.5, -0.5));
  const double p1 = 1.0 / (1.0 + std::exp(1.0));
  EXPECT_DOUBLE_EQ(probabilities[1], p1);
  EXPECT_DOUBLE_EQ(u.loss, -std::log(p1));
  EXPECT_TRUE(u.updated);
  // w_k ← (1 - η·λ)·w_k + η·(1[k = y] - p_k)·x
  EXPECT_DOUBLE_EQ(softmax.weights(0).w[0], 0.9 * 0.25 - 0.5 * (1 - p1));
  EXPECT_DOUBLE_EQ(softmax.weights(1).w[0], 0.9 * -0.25 + 0.5 * (1 - p1));
  EXPECT_DOUBLE_EQ(softmax.weights(0).b, 0.25 - 0.5 * (1 - p1));
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
