// SGD (scikit-learn's SGDClassifier), its margin losses and AdaGrad on
// hand-computed steps: schedules, L1 and elastic net, averaging.

#include <cmath>
#include <vector>

#include "core/algorithms/adagrad_classifier.h"
#include "core/algorithms/margin_loss.h"
#include "core/algorithms/sgd_classifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::DoubleNear;
using ::testing::ElementsAre;

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

// An L1 penalty of strength `alpha` at a constant learning rate.
SgdOptions ConstantL1(double alpha) {
  SgdOptions options;
  options.penalty = Penalty::kL1;
  options.alpha = alpha;
  options.schedule = Schedule::kConstant;
  return options;
}

TEST(SgdClassifierTest, L1NeverPushesAWeightPastZero) {
  const SgdOptions options = ConstantL1(1.0);
  SgdClassifier sgd(2, 0.1, options);
  const std::vector<double> x = {1, 0.05};
  sgd.Learn(x, +1, 1.0);  // step 0.1 adds (0.1, 0.005); L1 charges 0.1 each
  sgd.EndBatch();
  EXPECT_THAT(sgd.weights().w, ElementsAre(0, 0));
  EXPECT_DOUBLE_EQ(sgd.weights().b, 0.1);  // the bias is not penalized
}

TEST(SgdClassifierTest, L1ChargesOnlyTheCoordinatesAnExampleStores) {
  const SgdOptions options = ConstantL1(0.01);
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

TEST(AdaGradClassifierTest, FirstStepIsEtaPerActiveCoordinate) {
  AdaGradClassifier sgd(2, 0.5, LossKind::kHinge, /*l2=*/0.0);
  const std::vector<double> x = {2, 0};
  sgd.Learn(x, +1, 1.0);
  EXPECT_NEAR(sgd.weights().w[0], 0.5, 1e-8);
  EXPECT_EQ(sgd.weights().w[1], 0.0);
  EXPECT_NEAR(sgd.weights().b, 0.5, 1e-8);
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

}  // namespace
}  // namespace halfspace
