// Evaluation (core/monitors/evaluation.h): the confusion matrix, its metrics
// and the log loss.

#include "core/monitors/evaluation.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

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
