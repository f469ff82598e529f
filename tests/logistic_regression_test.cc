#include "core/algorithms/logistic_regression.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

TEST(LogisticRegressionTest, FirstStepFromZeroMovesHalfwayTowardTheTarget) {
  LogisticRegression lr(2, 0.5, 0.0);
  const std::vector<double> x = {1, 2};
  Update u = lr.Learn(x, +1, 1.0);
  EXPECT_EQ(u.score, 0);
  EXPECT_EQ(*u.probability, 0.5);
  EXPECT_DOUBLE_EQ(u.loss, std::log(2.0));
  EXPECT_TRUE(u.updated);
  // step = η·(t - p) = 0.5·(1 - 0.5)
  EXPECT_THAT(lr.weights().w, ElementsAre(0.25, 0.5));
  EXPECT_EQ(lr.weights().b, 0.25);
}

TEST(LogisticRegressionTest, NegativeExampleFollowsTheGradientOfLogLoss) {
  LogisticRegression lr(2, 0.5, 0.0);
  LinearWeights w(2);
  w.w = {0.25, 0.5};
  w.b = 0.25;
  lr.set_weights(w);
  const std::vector<double> x = {1, 2};
  Update u = lr.Learn(x, -1, 1.0);
  const double p = 1 / (1 + std::exp(-1.5));
  EXPECT_DOUBLE_EQ(u.score, 1.5);
  EXPECT_DOUBLE_EQ(u.margin, -1.5);
  EXPECT_EQ(u.predicted_label, +1);
  EXPECT_DOUBLE_EQ(*u.probability, p);
  EXPECT_DOUBLE_EQ(u.loss, -std::log(1 - p));
  const double step = 0.5 * (0 - p);
  EXPECT_THAT(lr.weights().w,
              ElementsAre(DoubleEq(0.25 + step), DoubleEq(0.5 + 2 * step)));
  EXPECT_DOUBLE_EQ(lr.weights().b, 0.25 + step);
}

TEST(LogisticRegressionTest, L2ShrinksWeightsButNotTheBias) {
  LogisticRegression lr(1, 0.5, 0.1);
  LinearWeights w(1);
  w.w = {2.0};
  w.b = 1.0;
  lr.set_weights(w);
  const std::vector<double> x = {0.0};  // no gradient on w: only decay
  Update u = lr.Learn(x, +1, 1.0);
  const double p = 1 / (1 + std::exp(-1.0));
  EXPECT_DOUBLE_EQ(lr.weights().w[0], 2.0 * (1 - 0.5 * 0.1));
  EXPECT_DOUBLE_EQ(lr.weights().b, 1.0 + 0.5 * (1 - p));
  EXPECT_TRUE(u.updated);
}

TEST(LogisticRegressionTest, SigmoidAndLossStayFiniteAtExtremeScores) {
  EXPECT_EQ(Sigmoid(0), 0.5);
  EXPECT_EQ(Sigmoid(-800), 0.0);
  EXPECT_EQ(Sigmoid(800), 1.0);
  EXPECT_DOUBLE_EQ(LogLoss(0), std::log(2.0));
  EXPECT_DOUBLE_EQ(LogLoss(-800), 800.0);
  EXPECT_EQ(LogLoss(800), 0.0);
  EXPECT_DOUBLE_EQ(LogLoss(-30), 30 + std::log1p(std::exp(-30)));
  EXPECT_DOUBLE_EQ(Sigmoid(-30), std::exp(-30) / (1 + std::exp(-30)));
}

TEST(LogisticRegressionTest, LearnsASeparableProblem) {
  LogisticRegression lr(2, 0.5, 0.0);
  const std::vector<std::vector<double>> xs = {{2, 3}, {3, 1}, {0, 1}, {1, -1}};
  const int ys[] = {+1, +1, -1, -1};
  for (int pass = 0; pass < 200; ++pass) {
    for (int i = 0; i < 4; ++i) lr.Learn(xs[i], ys[i], 1.0);
  }
  for (int i = 0; i < 4; ++i) {
    const double p = *lr.Probability(lr.weights().Score(xs[i]));
    EXPECT_EQ(p > 0.5 ? 1 : -1, ys[i]) << "example " << i;
  }
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

}  // namespace
}  // namespace halfspace
