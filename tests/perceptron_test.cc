#include "core/algorithms/perceptron.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

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

}  // namespace
}  // namespace halfspace
