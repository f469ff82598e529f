#include "core/model/model.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "core/storage/snapshot_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelSpec PerceptronSpec(int64_t dimension) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kPerceptron);
  spec.dimension = dimension;
  return spec;
}

std::unique_ptr<Model> MakeModel(const ModelSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(ModelNameTest, AcceptsSafeIdentifiers) {
  for (const char* name : {"a", "spam-filter", "v1.2_b", "0abc"}) {
    EXPECT_TRUE(ValidateModelName(name).ok()) << name;
  }
  EXPECT_TRUE(ValidateModelName(std::string(64, 'x')).ok());
}

TEST(ModelNameTest, RejectsUnsafeNames) {
  for (const char* name : {"", ".", "..", "-x", "_x", "a/b", "a b", "ä"}) {
    EXPECT_EQ(ValidateModelName(name).code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_THAT(ValidateModelName(std::string(65, 'x')).message(),
              HasSubstr("limit is 64"));
}

TEST(ModelSpecTest, RejectsOutOfRangeValuesWithAReason) {
  ModelSpec spec = PerceptronSpec(0);
  EXPECT_THAT(ValidateModelSpec(spec).message(), HasSubstr("dimension is 0"));
  spec.dimension = kMaxDimension + 1;
  EXPECT_FALSE(ValidateModelSpec(spec).ok());
  spec = PerceptronSpec(3);
  spec.algorithm = PerceptronParams{-1, 0};
  EXPECT_THAT(ValidateModelSpec(spec).message(),
              HasSubstr("perceptron.learning_rate is -1; it must be in (0, "));
  spec.algorithm = PerceptronParams{NAN, 0};
  EXPECT_FALSE(ValidateModelSpec(spec).ok());
  spec.algorithm = LogisticRegressionParams{1.0, 0.1};
  EXPECT_TRUE(ValidateModelSpec(spec).ok());
  spec.algorithm = LogisticRegressionParams{1.0, 1.0};  // η·λ = 1
  EXPECT_THAT(ValidateModelSpec(spec).message(), HasSubstr("below 1"));
}

TEST(ModelTest, RejectsBadExamplesInBandAndLearnsTheRest) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> good = {1, 2}, short_x = {1}, nan_x = {1, NAN};
  const std::vector<Example> batch = {{good, 1}, {short_x, 1}, {nan_x, -1},
                                      {good, 0}, {good, 2},    {good, -1}};
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out)).ok());

  EXPECT_TRUE(out[0].error.ok());
  EXPECT_THAT(
      out[1].error.message(),
      HasSubstr("features has 1 values but the model's dimension is 2"));
  EXPECT_THAT(out[2].error.message(), HasSubstr("features[1] is nan"));
  EXPECT_THAT(out[3].error.message(), HasSubstr("not 0 and 1"));
  EXPECT_THAT(out[4].error.message(), HasSubstr("label is 2"));
  ASSERT_TRUE(out[5].error.ok());
  EXPECT_EQ(out[5].examples_seen, 2u);
  EXPECT_EQ(out[5].updates, 2u);  // (1,2)+ then (1,2)- are both mistakes
  EXPECT_EQ(model->Stats().counters.examples_seen, 2u);
}

TEST(ModelTest, ReusedOutcomeBuffersAreOverwrittenWhole) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> good = {1, 2}, bad = {1, INFINITY};
  std::vector<ExampleOutcome> out(2);
  ASSERT_TRUE(model->Learn({{bad, 1}, {good, 1}}, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(out[0].error.ok());
  ASSERT_TRUE(model->Learn({{good, -1}, {bad, 1}}, absl::MakeSpan(out)).ok());
  EXPECT_TRUE(out[0].error.ok());
  EXPECT_EQ(out[0].examples_seen, 2u);
  EXPECT_FALSE(out[1].error.ok());
  EXPECT_EQ(out[1].examples_seen, 0u);
  EXPECT_FALSE(out[1].update.updated);
}

TEST(ModelTest, HugeFiniteValuesAreValidButNotLearnedWhenTheirSquaresOverflow) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> huge = {1e200, -1e200};
  std::vector<Prediction> p(1);
  EXPECT_TRUE(model->Predict({FeatureInput(huge)}, absl::MakeSpan(p)).ok());
  // Learning would make R² = max ‖x‖² infinite: refused (see overflow_test).
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({{huge, 1}}, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0].error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Stats().counters.examples_seen, 0u);
}

TEST(ModelTest, CountsProgressiveMistakesLossAndRadius) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> a = {3, 4}, b = {0, 1};
  const std::vector<Example> batch = {{a, -1}, {b, +1}, {a, -1}};
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out)).ok());
  // 1st: f = 0 predicts +1 (mistake), updates to w = (-3,-4), b = -1.
  // 2nd: f = -5 predicts -1 (mistake, loss 5), updates to (-3,-3), b = 0.
  // 3rd: f = -21, correct, no update.
  const ModelStats stats = model->Stats();
  EXPECT_EQ(stats.counters.examples_seen, 3u);
  EXPECT_EQ(stats.counters.updates, 2u);
  EXPECT_EQ(stats.counters.mistakes, 2u);
  EXPECT_EQ(stats.counters.loss_sum, 5);
  EXPECT_EQ(stats.counters.max_squared_norm, 26);  // ‖(3, 4, 1)‖²
  EXPECT_DOUBLE_EQ(stats.weight_norm, std::sqrt(18.0));
  EXPECT_EQ(stats.bias, 0);
}

TEST(ModelTest, KeepsTheLastExamplesOfATwoDimensionalModelInOrder) {
  ModelSpec spec = PerceptronSpec(2);
  spec.standardize = true;  // kept as given, not as standardized
  std::unique_ptr<Model> model = MakeModel(spec);
  EXPECT_TRUE(model->keeps_recent());
  std::vector<std::vector<double>> xs;
  std::vector<Example> batch;
  const size_t n = RecentExamples::kCapacity + 7;
  for (size_t i = 0; i < n; ++i) xs.push_back({1.0 * i, -2.0 * i});
  for (size_t i = 0; i < n; ++i) batch.push_back({xs[i], i % 2 ? 1 : -1});
  batch.push_back({std::vector<double>{1, 2, 3}, 1});  // rejected: not kept
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out)).ok());
  const std::vector<RecentExamples::Example> recent = model->Recent();
  ASSERT_EQ(recent.size(), RecentExamples::kCapacity);
  for (size_t k = 0; k < recent.size(); ++k) {
    const size_t i = k + 7;  // the oldest 7 gave way
    EXPECT_EQ(recent[k].x[0], xs[i][0]);
    EXPECT_EQ(recent[k].x[1], xs[i][1]);
    EXPECT_EQ(recent[k].target, i % 2 ? 1 : -1);
    EXPECT_EQ(recent[k].mistake, out[i].mistake);
  }
  // Wider models keep none.
  std::unique_ptr<Model> wide = MakeModel(PerceptronSpec(3));
  EXPECT_FALSE(wide->keeps_recent());
  const std::vector<double> x = {1, 2, 3};
  ASSERT_TRUE(
      wide->Learn(std::vector<Example>{{x, 1}}, absl::MakeSpan(out).first(1))
          .ok());
  EXPECT_TRUE(wide->Recent().empty());
}

TEST(ModelTest, PredictsLabelScoreDistanceAndNoProbabilityForPerceptron) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  ASSERT_TRUE(model->SetWeights({1, 1}, -3).ok());
  const std::vector<double> a = {3, 1}, b = {1, 1};
  const std::vector<FeatureInput> xs = {a, b};
  std::vector<Prediction> out(2);
  ASSERT_TRUE(model->Predict(xs, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0].label, 1);
  EXPECT_EQ(out[0].score, 1);
  EXPECT_DOUBLE_EQ(*out[0].signed_distance, 1 / std::sqrt(2.0));
  EXPECT_FALSE(out[0].probability.has_value());
  EXPECT_EQ(out[1].label, -1);
  EXPECT_DOUBLE_EQ(*out[1].signed_distance, -1 / std::sqrt(2.0));
}

TEST(ModelTest, ZeroScorePredictsPositiveAndZeroWeightsHaveNoDistance) {
  ModelSpec spec = PerceptronSpec(2);
  spec.algorithm = DefaultParams(Algorithm::kLogisticRegression);
  std::unique_ptr<Model> model = MakeModel(spec);
  const std::vector<double> x = {5, -2};
  const std::vector<FeatureInput> xs = {x};
  std::vector<Prediction> out(1);
  ASSERT_TRUE(model->Predict(xs, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[0].label, 1);
  EXPECT_FALSE(out[0].signed_distance.has_value());
  EXPECT_EQ(*out[0].probability, 0.5);
}

TEST(ModelTest, TheDistanceFollowsEveryChangeOfTheWeights) {
  // ‖w‖ is kept between changes: each change must renew it.
  for (const Algorithm algorithm :
       {Algorithm::kPerceptron, Algorithm::kAveragedPerceptron,
        Algorithm::kSgd}) {
    ModelSpec spec = PerceptronSpec(2);
    spec.algorithm = DefaultParams(algorithm);
    std::unique_ptr<Model> model = MakeModel(spec);
    const std::vector<double> x = {3, 4};
    const std::vector<FeatureInput> xs = {x};
    std::vector<Prediction> out(1);
    auto expect_distance = [&](const std::string& after) {
      ASSERT_TRUE(model->Predict(xs, absl::MakeSpan(out)).ok());
      const ModelSnapshot w = model->Snapshot();
      const double norm = std::hypot(w.weights.w[0], w.weights.w[1]);
      ASSERT_GT(norm, 0) << after;
      EXPECT_DOUBLE_EQ(*out[0].signed_distance, out[0].score / norm) << after;
    };
    ASSERT_TRUE(model->SetWeights({1, 1}, -3).ok());
    expect_distance("SetWeights");
    for (int label : {-1, 1, -1}) {
      std::vector<ExampleOutcome> outcomes(1);
      const std::vector<double> e = {1, 2.5};
      const std::vector<Example> batch = {{e, label}};
      ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(outcomes)).ok());
      expect_distance("Learn");
    }
    ASSERT_TRUE(model->SetWeights({-2, 0.5}, 1).ok());
    expect_distance("SetWeights again");
  }
}

TEST(ModelTest, PredictNamesTheFirstBadInstance) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> good = {1, 2}, bad = {1, 2, 3};
  const std::vector<FeatureInput> xs = {good, bad};
  std::vector<Prediction> out(2);
  absl::Status s = model->Predict(xs, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("instance 1: features has 3 values"));
}

TEST(ModelTest, SetWeightsValidatesAndKeepsCounters) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> x = {1, 1};
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({Example{x, 1}}, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(model->SetWeights({1}, 0).ok());
  EXPECT_FALSE(model->SetWeights({1, INFINITY}, 0).ok());
  EXPECT_FALSE(model->SetWeights({1, 1}, NAN).ok());
  const uint64_t before = model->generation();
  ASSERT_TRUE(model->SetWeights({0.5, -0.5}, 2).ok());
  EXPECT_GT(model->generation(), before);
  ModelSnapshot snapshot = model->Snapshot();
  EXPECT_THAT(snapshot.weights.w, ElementsAre(0.5, -0.5));
  EXPECT_EQ(snapshot.weights.b, 2);
  EXPECT_EQ(snapshot.counters.examples_seen, 1u);
}

TEST(ModelTest, DeletedModelRefusesToLearn) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(1));
  ASSERT_TRUE(model->MarkDeleted().ok());
  const std::vector<double> x = {1};
  std::vector<ExampleOutcome> out(1);
  EXPECT_EQ(model->Learn({Example{x, 1}}, absl::MakeSpan(out)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(model->Stats().counters.examples_seen, 0u);
}

TEST(ModelTest, RestoreRoundTripsTheWholeState) {
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(2));
  const std::vector<double> x = {1, -2};
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({Example{x, -1}}, absl::MakeSpan(out)).ok());
  absl::StatusOr<std::unique_ptr<Model>> copy =
      Model::Restore(model->Snapshot());
  ASSERT_TRUE(copy.ok()) << copy.status();
  ModelSnapshot a = model->Snapshot(), b = (*copy)->Snapshot();
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.weights.w, b.weights.w);
  EXPECT_EQ(a.weights.b, b.weights.b);
  EXPECT_EQ(a.counters.examples_seen, b.counters.examples_seen);
  EXPECT_EQ(a.counters.max_squared_norm, b.counters.max_squared_norm);
}

// Every example is (1, …, 1), so every update adds ±η to all weights alike: a
// reader that saw a half-applied update would see unequal weights.
TEST(ModelTest, ConcurrentLearnersAndReadersSeeOnlyWholeUpdates) {
  constexpr int kDim = 64, kThreads = 4, kBatches = 200, kBatch = 8;
  std::unique_ptr<Model> model = MakeModel(PerceptronSpec(kDim));
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<double> ones(kDim, 1.0);
      std::vector<Example> batch(kBatch, Example{ones, t % 2 ? 1 : -1});
      std::vector<ExampleOutcome> out(kBatch);
      for (int i = 0; i < kBatches; ++i) {
        ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out)).ok());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 500; ++i) {
      ModelSnapshot s = model->Snapshot();
      for (double w : s.weights.w) {
        if (w != s.weights.w[0]) torn = true;
      }
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(torn);
  EXPECT_EQ(model->Stats().counters.examples_seen,
            uint64_t{kThreads} * kBatches * kBatch);
}

TEST(ModelTest, ExamplesOfWeightZeroCountButLeaveWeightsAndStandardizer) {
  ModelSpec spec = PerceptronSpec(1);
  spec.standardize = true;
  std::unique_ptr<Model> model = MakeModel(spec);
  const std::vector<double> x = {10};
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({Example{x, -1, 0.0}}, absl::MakeSpan(out)).ok());
  EXPECT_TRUE(out[0].error.ok());
  EXPECT_FALSE(out[0].update.updated);
  EXPECT_TRUE(out[0].mistake);  // f = 0 predicts +1
  ModelSnapshot s = model->Snapshot();
  EXPECT_EQ(s.counters.examples_seen, 1u);
  EXPECT_EQ(s.counters.mistakes, 1u);
  EXPECT_EQ(s.counters.updates, 0u);
  EXPECT_THAT(s.weights.w, ElementsAre(0.0));
  EXPECT_THAT(s.standardizer, ElementsAre(0.0, 0.0, 0.0));  // n = 0

  ASSERT_TRUE(model->Learn({Example{x, -1, 1.0}}, absl::MakeSpan(out)).ok());
  EXPECT_THAT(model->Snapshot().standardizer, ElementsAre(1.0, 10.0, 0.0));
}

TEST(ModelTest, EvaluateThresholdPredictsPositiveAtExactlyTheThreshold) {
  ModelSpec spec = PerceptronSpec(1);
  spec.algorithm = DefaultParams(Algorithm::kLogisticRegression);
  std::unique_ptr<Model> model = MakeModel(spec);  // w = 0: p = 0.5
  const std::vector<double> x = {1};
  const std::vector<Example> negative = {{x, -1}};
  Evaluation at, above;
  ASSERT_TRUE(model->Evaluate(negative, 0.5, at).ok());
  ASSERT_TRUE(model->Evaluate(negative, std::nextafter(0.5, 1.0), above).ok());
  EXPECT_EQ(at.confusion(0, 1), 1u);  // p >= 0.5: predicted +1
  EXPECT_EQ(above.confusion(0, 0), 1u);
}

// A threshold is a probability, for a binary model that gives them.
TEST(ModelTest, AThresholdIsAProbabilityForABinaryProbabilisticModel) {
  ModelSpec spec = PerceptronSpec(1);
  spec.algorithm = DefaultParams(Algorithm::kLogisticRegression);
  std::unique_ptr<Model> logistic = MakeModel(spec);
  for (double t : {0.0, 0.5, 1.0}) {
    EXPECT_TRUE(logistic->CheckThreshold(t).ok()) << t;
  }
  for (double t : {-0.1, std::nextafter(1.0, 2.0), std::nan("")}) {
    EXPECT_TRUE(absl::IsInvalidArgument(logistic->CheckThreshold(t))) << t;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(
      MakeModel(PerceptronSpec(1))->CheckThreshold(0.5)));
  spec.one_vs_rest = true;  // probabilities, but of classes
  absl::StatusOr<std::unique_ptr<Model>> classes =
      Model::Create("m", spec, {"a", "b"});
  ASSERT_TRUE(classes.ok()) << classes.status();
  ASSERT_TRUE((*classes)->probabilistic());
  EXPECT_TRUE(absl::IsInvalidArgument((*classes)->CheckThreshold(0.5)));
}

TEST(ModelTest, OneVsRestPredictsNormalizedProbabilities) {
  ModelSpec spec = PerceptronSpec(1);
  spec.algorithm = DefaultParams(Algorithm::kLogisticRegression);
  spec.one_vs_rest = true;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("m", spec, {"a", "b", "c"});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->SetClassWeights("a", {1.0}, 0.0).ok());
  ASSERT_TRUE((*model)->SetClassWeights("b", {-1.0}, 0.0).ok());
  const std::vector<double> x = {2};
  std::vector<Prediction> out(1);
  ASSERT_TRUE((*model)->Predict({FeatureInput(x)}, absl::MakeSpan(out)).ok());
  const double sa = 1 / (1 + std::exp(-2.0)), sb = 1 / (1 + std::exp(2.0));
  const double sum = sa + sb + 0.5;
  EXPECT_THAT(out[0].class_scores, ElementsAre(2.0, -2.0, 0.0));
  EXPECT_THAT(
      out[0].class_probabilities,
      ElementsAre(DoubleEq(sa / sum), DoubleEq(sb / sum), DoubleEq(0.5 / sum)));
  EXPECT_EQ(out[0].predicted_class, 0);
}

// Without intercept every algorithm keeps b at exactly 0 — the averaged and
// pocketed biases and every class's too — while its weights learn, and the
// setting survives the model file.
TEST(ModelTest, WithoutInterceptEveryAlgorithmKeepsTheBiasAtZero) {
  std::vector<AlgorithmParams> algorithms;
  for (int a = 1; a <= 10; ++a) {
    algorithms.push_back(DefaultParams(static_cast<Algorithm>(a)));
  }
  SgdParams adagrad, averaged;
  adagrad.options.schedule = Schedule::kAdaGrad;
  averaged.options.average_from = 1;
  algorithms.push_back(adagrad);
  algorithms.push_back(averaged);
  for (const AlgorithmParams& algorithm : algorithms) {
    ModelSpec spec = PerceptronSpec(2);
    spec.algorithm = algorithm;
    spec.fit_intercept = false;
    SCOPED_TRACE(static_cast<int>(AlgorithmOf(algorithm)));
    const bool multiclass = IsNativelyMulticlass(algorithm);
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Create("m", spec,
                      multiclass ? std::vector<std::string>{"a", "b", "c"}
                                 : std::vector<std::string>{});
    ASSERT_TRUE(model.ok()) << model.status();
    std::vector<ExampleOutcome> out(1);
    for (int i = 0; i < 30; ++i) {
      // Every example on one side of the origin: a bias would help.
      const std::vector<double> x = {1.0 + i % 3, 2.0 - i % 5};
      Example e{x, i % 2 ? 1 : -1};
      static const char* const kClasses[] = {"a", "b", "c"};
      e.class_label = kClasses[i % 3];  // a view: the names outlive it
      ASSERT_TRUE((*model)->Learn({e}, absl::MakeSpan(out)).ok());
    }
    const ModelSnapshot snapshot = (*model)->Snapshot();
    EXPECT_EQ(snapshot.weights.b, 0.0);
    bool learned = snapshot.weights.w != std::vector<double>{0, 0};
    for (const LinearWeights& row : snapshot.class_weights) {
      EXPECT_EQ(row.b, 0.0);
      learned = learned || row.w != std::vector<double>{0, 0};
    }
    EXPECT_TRUE(learned);
    absl::StatusOr<ModelSnapshot> decoded =
        DecodeSnapshot(EncodeSnapshot(snapshot));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_FALSE(decoded->spec.fit_intercept);
  }
}

}  // namespace
}  // namespace halfspace
