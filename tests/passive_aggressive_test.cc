// Passive-aggressive (Crammer et al., 2006) on hand-computed steps of PA,
// PA-I and PA-II, at a margin of exactly one and at x = 0.

#include "core/algorithms/passive_aggressive.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

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

}  // namespace
}  // namespace halfspace
