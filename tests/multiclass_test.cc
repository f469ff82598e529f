// Multiclass learners: the multiclass perceptron and softmax regression by
// hand, one-vs-rest against independent binary models, and a multiclass
// model's classes as they arrive and past its limits.

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/algorithms/logistic_regression.h"
#include "core/algorithms/multiclass_perceptron.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/algorithms/perceptron.h"
#include "core/algorithms/softmax_regression.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

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

}  // namespace
}  // namespace halfspace
