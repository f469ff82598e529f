// The confidence-weighted family (CW, AROW, SCW, NHERD) on steps computed
// by hand, its state round trip, and its resistance to label noise.

#include "core/algorithms/confidence_weighted.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/algorithms/passive_aggressive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

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
  // x = (2, 0): m = 2/3 + 7/33 = 29/33, v = 4·(1/5) + 5/41 = 189/205;
  // α = (4/33)/(v + 1), and 1/σ += (2 + v)·x², so x₁² = 4 counts.
  const double v = 189.0 / 205;
  const double alpha = (4.0 / 33) / (v + 1);
  const double precision = 2 + v;
  nherd.Learn(std::vector<double>{2, 0}, +1, 1.0);
  s = Of(nherd);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(1.0 / 3 + alpha * 0.2 * 2),
                               DoubleEq(-20.0 / 33)));
  EXPECT_DOUBLE_EQ(s.b, 7.0 / 33 + alpha * 5.0 / 41);
  EXPECT_THAT(s.sigma,
              ElementsAre(DoubleEq(1 / (5 + precision * 4)), DoubleEq(5.0 / 21),
                          DoubleEq(1 / (41.0 / 5 + precision))));
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
  // Again on x = (1, 0), now with a margin: m = 2α, v = 2σ₁;
  // b' = 1 + 2φm, α' = (−b' + √(b'² − 8φ(m − φv)))/(4φv) > 0.
  const double sigma = 1 / (1 + 2 * alpha);
  const double m = 2 * alpha, v = 2 * sigma;
  const double b = 1 + 2 * m;
  const double next = (-b + std::sqrt(b * b - 8 * (m - v))) / (4 * v);
  ASSERT_GT(next, 0.0);
  u = cw.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_DOUBLE_EQ(u.margin, m);
  EXPECT_DOUBLE_EQ(u.loss, std::sqrt(v) - m);
  s = Of(cw);
  EXPECT_THAT(s.w, ElementsAre(DoubleEq(alpha + next * sigma), 0.0));
  EXPECT_DOUBLE_EQ(s.b, alpha + next * sigma);
  EXPECT_THAT(s.sigma, ElementsAre(DoubleEq(1 / (1 / sigma + 2 * next)), 1.0,
                                   DoubleEq(1 / (1 / sigma + 2 * next))));
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
  EXPECT_FALSE(b.ImportState(std::vector<double>(5, 1.0)).ok());  // one over
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

}  // namespace
}  // namespace halfspace
