// Overflow is an error, not a model: an example whose update would make a
// weight, a bias, the algorithm's or the standardizer's state or a counter
// non-finite is refused in-band and leaves the model bit for bit as it was;
// a prediction whose score overflows is an error, never a NaN with OK.

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/model/model_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Model> MakeModel(const ModelSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Every number of the snapshot, in a fixed order: weights, biases, the
// algorithm's state, the standardizer, the counters.
std::vector<double> Numbers(const ModelSnapshot& s) {
  std::vector<double> out = s.weights.w;
  out.push_back(s.weights.b);
  for (const LinearWeights& w : s.class_weights) {
    out.insert(out.end(), w.w.begin(), w.w.end());
    out.push_back(w.b);
  }
  out.insert(out.end(), s.state.begin(), s.state.end());
  out.insert(out.end(), s.standardizer.begin(), s.standardizer.end());
  const ModelCounters& c = s.counters;
  out.insert(
      out.end(),
      {static_cast<double>(c.examples_seen), static_cast<double>(c.updates),
       static_cast<double>(c.mistakes), c.loss_sum, c.max_squared_norm});
  return out;
}

bool BitIdentical(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool AllFinite(const std::vector<double>& v) {
  for (double x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// Every algorithm, binary and multiclass, with the options that change
// what an update writes: averaging, penalties, L2 shrinks, no intercept,
// standardization, hashed features.
std::vector<ModelSpec> AllSpecs(int64_t d) {
  std::vector<ModelSpec> specs = {
      DenseSpec(PerceptronParams{}, d),
      DenseSpec(PerceptronParams{1e6, 1}, d),  // η, τ
      DenseSpec(LogisticRegressionParams{}, d),
      DenseSpec(LogisticRegressionParams{10, 0.01}, d),  // η, λ
      DenseSpec(AveragedPerceptronParams{}, d),
      DenseSpec(PocketPerceptronParams{}, d),
      DenseSpec(VotedPerceptronParams{3}, d),
      DenseSpec(MulticlassPerceptronParams{}, d),
      DenseSpec(SoftmaxRegressionParams{}, d),
      DenseSpec(SoftmaxRegressionParams{1, 0.1}, d),
      DenseSpec(FtrlProximalParams{}, d),
      DenseSpec(FtrlProximalParams{1e6, 0, 1, 1, true}, d),  // α, β, λ1, λ2
  };
  for (PaVariant v : {PaVariant::kPa, PaVariant::kPaI, PaVariant::kPaII}) {
    PassiveAggressiveParams pa;
    pa.variant = v;
    specs.push_back(DenseSpec(pa, d));
  }
  PassiveAggressiveParams averaged;
  averaged.average_from = 2;
  specs.push_back(DenseSpec(averaged, d));
  for (CwVariant v : {CwVariant::kCw, CwVariant::kArow, CwVariant::kScwI,
                      CwVariant::kScwII, CwVariant::kNherd}) {
    ConfidenceWeightedParams cw;
    cw.variant = v;
    specs.push_back(DenseSpec(cw, d));
  }
  for (Penalty penalty :
       {Penalty::kNone, Penalty::kL2, Penalty::kL1, Penalty::kElasticNet}) {
    for (LossKind loss : {LossKind::kHinge, LossKind::kSquaredHinge,
                          LossKind::kLog, LossKind::kModifiedHuber}) {
      SgdParams sgd;
      sgd.options.penalty = penalty;
      sgd.options.loss = loss;
      sgd.options.average_from = penalty == Penalty::kL2 ? 3 : 0;
      specs.push_back(DenseSpec(sgd, d));
    }
  }
  SgdParams constant;
  constant.learning_rate = 1e6;
  constant.options.schedule = Schedule::kConstant;
  constant.options.alpha = 0.5;  // w shrinks to 0 at every step: rescales
  specs.push_back(DenseSpec(constant, d));
  for (double l2 : {0.0, 0.1}) {
    SgdParams adagrad;
    adagrad.options.schedule = Schedule::kAdaGrad;
    adagrad.options.loss = LossKind::kSquaredHinge;
    adagrad.options.alpha = l2;
    adagrad.options.penalty = l2 > 0 ? Penalty::kL2 : Penalty::kNone;
    specs.push_back(DenseSpec(adagrad, d));
  }
  const size_t binaries = specs.size();
  for (size_t i = 0; i < binaries; ++i) {  // one-vs-rest of the first few
    if (i % 4 != 0 || IsMulticlass(specs[i])) continue;
    specs.push_back(specs[i]);
    specs.back().one_vs_rest = true;
  }
  specs.push_back(DenseSpec(AveragedPerceptronParams{}, d));
  specs.back().standardize = true;
  specs.push_back(DenseSpec(PassiveAggressiveParams{}, d));
  specs.back().fit_intercept = false;
  specs.push_back(DenseSpec(SgdParams{}, d));
  specs.back().hash_bits = 4;
  return specs;
}

std::string Describe(const ModelSpec& spec) {
  return absl::StrCat("algorithm ",
                      static_cast<int>(AlgorithmOf(spec.algorithm)),
                      IsMulticlass(spec) ? " multiclass" : "",
                      spec.standardize ? " standardized" : "");
}

// A value of random sign whose magnitude is 10^u, u uniform in [lo, hi].
double Magnitude(std::mt19937_64& rng, double lo, double hi) {
  const double u = std::uniform_real_distribution<double>(lo, hi)(rng);
  return (rng() % 2 == 0 ? 1 : -1) * std::pow(10.0, u);
}

TEST(OverflowTest, NoAlgorithmKeepsOrServesANonFiniteNumber) {
  constexpr int64_t d = 4;
  const std::vector<std::string> labels = {"a", "b", "c"};
  int refused_for_state = 0;
  for (const ModelSpec& spec : AllSpecs(d)) {
    SCOPED_TRACE(Describe(spec));
    std::unique_ptr<Model> model = MakeModel(spec);
    std::mt19937_64 rng(7);
    int learned = 0, refused = 0;
    for (int i = 0; i < 300; ++i) {
      // Mostly ordinary examples, some with huge (finite) features or
      // importance weights, a few whose squares overflow.
      std::vector<double> x(d);
      for (double& xj : x) {
        xj = rng() % 5 == 0 ? Magnitude(rng, 0, 160) : Magnitude(rng, -2, 1);
      }
      Example e{x, rng() % 2 == 0 ? 1 : -1};
      e.class_label = labels[rng() % labels.size()];
      if (rng() % 6 == 0) e.weight = std::abs(Magnitude(rng, 0, 300));
      const std::vector<double> before = Numbers(model->Snapshot());
      const std::vector<std::string> classes = model->classes();
      std::vector<ExampleOutcome> out(1);
      ASSERT_TRUE(model->Learn({e}, absl::MakeSpan(out)).ok());
      const std::vector<double> after = Numbers(model->Snapshot());
      if (out[0].error.ok()) {
        ++learned;
        ASSERT_TRUE(AllFinite(after))
            << "example " << i << ": " << testing::PrintToString(after);
        EXPECT_TRUE(std::isfinite(out[0].update.score));
        EXPECT_TRUE(std::isfinite(out[0].update.loss));
      } else {
        ++refused;
        ASSERT_EQ(out[0].error.code(), absl::StatusCode::kInvalidArgument)
            << out[0].error;
        EXPECT_THAT(out[0].error.message(), HasSubstr("model is unchanged"));
        ASSERT_TRUE(BitIdentical(before, after)) << "example " << i;
        EXPECT_EQ(model->classes(), classes);
        if (absl::StrContains(out[0].error.message(), "state overflow")) {
          ++refused_for_state;
        }
      }
      // A prediction on features as large answers finitely or refuses.
      std::vector<Prediction> p(1);
      const absl::Status s =
          model->Predict({FeatureInput(x)}, absl::MakeSpan(p));
      if (s.ok()) {
        EXPECT_TRUE(std::isfinite(p[0].score));
        for (double v : p[0].class_scores) EXPECT_TRUE(std::isfinite(v));
        for (double v : p[0].class_probabilities) EXPECT_TRUE(std::isfinite(v));
        if (p[0].signed_distance) {
          EXPECT_TRUE(std::isfinite(*p[0].signed_distance));
        }
      } else if (!absl::IsFailedPrecondition(s)) {  // a class-less model
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
        EXPECT_THAT(s.message(), HasSubstr("overflow"));
      }
    }
    EXPECT_GT(learned, 10);  // (a model whose weights grew huge refuses more)
    EXPECT_GT(refused, 0);
  }
  // Not only squared norms and scores: updates themselves overflowed.
  EXPECT_GT(refused_for_state, 20);
}

TEST(OverflowTest, AnUpdateThatWouldOverflowIsRefusedAndTheStreamGoesOn) {
  std::unique_ptr<Model> model = MakeModel(DenseSpec(PerceptronParams{}, 2));
  const std::vector<double> a = {1, 0}, b = {0, 2};
  // 1st: w = (1, 0), b = 1. 2nd: f = 1, y = -1, a mistake whose step
  // s·y·x = -1e308·(0, 2) overflows w_1. 3rd: f = 2, correct.
  const std::vector<Example> batch = {{a, 1}, {b, -1, 1e308}, {a, 1}};
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE(model->Learn(batch, absl::MakeSpan(out)).ok());
  EXPECT_TRUE(out[0].error.ok());
  EXPECT_EQ(out[1].error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out[1].error.message(),
              HasSubstr("would make the model's weights or the algorithm's "
                        "state overflow"));
  ASSERT_TRUE(out[2].error.ok());
  EXPECT_EQ(out[2].update.score, 2);
  EXPECT_EQ(out[2].examples_seen, 2u);  // the refused one is not counted
  const ModelSnapshot s = model->Snapshot();
  EXPECT_THAT(s.weights.w, ElementsAre(1, 0));
  EXPECT_EQ(s.weights.b, 1);
  EXPECT_EQ(s.counters.updates, 1u);
  EXPECT_EQ(s.counters.loss_sum, 0);
}

TEST(OverflowTest, APredictionWhoseScoreOverflowsIsAnError) {
  std::unique_ptr<Model> model = MakeModel(DenseSpec(PerceptronParams{}, 2));
  ASSERT_TRUE(model->SetWeights({1e300, 1e300}, 0).ok());
  const std::vector<double> small = {1, 1}, large = {1e10, 0};
  std::vector<Prediction> p(2);
  ASSERT_TRUE(
      model->Predict({FeatureInput(small)}, absl::MakeSpan(p).subspan(0, 1))
          .ok());
  const absl::Status s = model->Predict(
      {FeatureInput(small), FeatureInput(large)}, absl::MakeSpan(p));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("instance 1: the score w·x + b is inf"));
  // Learning from it is refused for the same reason, leaving w as it was.
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({{large, -1}}, absl::MakeSpan(out)).ok());
  EXPECT_THAT(out[0].error.message(), HasSubstr("the score w·x + b is inf"));
  EXPECT_THAT(model->Snapshot().weights.w, ElementsAre(1e300, 1e300));
}

// The data of scikit-learn's test_underflow_or_overlow (test_sgd.py):
// normal features, the first two multiplied by 1e300, which scikit-learn's
// SGDClassifier(alpha=0.1, loss="squared_hinge") refuses to fit
// ("Floating-point under-/overflow occurred"), and the same features
// min-max scaled, which it fits.
TEST(OverflowTest, ScikitLearnsOverflowDataIsRefusedAndItsScaledFormLearned) {
  constexpr int n = 100, d = 10;
  std::mt19937_64 rng(0);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> x(n, std::vector<double>(d));
  std::vector<double> lo(d, INFINITY), hi(d, -INFINITY);
  for (auto& row : x) {
    for (int j = 0; j < d; ++j) {
      row[j] = normal(rng) * (j < 2 ? 1e300 : 1.0);
      lo[j] = std::min(lo[j], row[j]);
      hi[j] = std::max(hi[j], row[j]);
    }
  }
  std::vector<std::vector<double>> scaled = x;
  for (auto& row : scaled) {
    for (int j = 0; j < d; ++j) row[j] = (row[j] - lo[j]) / (hi[j] - lo[j]);
  }
  std::vector<double> truth(d);
  for (double& t : truth) t = normal(rng);
  std::vector<Example> raw, minmax;
  for (int i = 0; i < n; ++i) {
    double dot = 0;
    for (int j = 0; j < d; ++j) dot += scaled[i][j] * truth[j];
    raw.push_back({x[i], dot > 0 ? 1 : -1});
    minmax.push_back({scaled[i], dot > 0 ? 1 : -1});
  }
  SgdParams sgd;
  sgd.options.alpha = 0.1;
  sgd.options.loss = LossKind::kSquaredHinge;
  for (int pass = 0; pass < 2; ++pass) {
    std::unique_ptr<Model> model = MakeModel(DenseSpec(sgd, d));
    const std::vector<Example>& data = pass == 0 ? raw : minmax;
    std::vector<ExampleOutcome> out(n);
    ASSERT_TRUE(model->Learn(data, absl::MakeSpan(out)).ok());
    int refused = 0;
    for (const ExampleOutcome& o : out) refused += o.error.ok() ? 0 : 1;
    const ModelSnapshot s = model->Snapshot();
    EXPECT_TRUE(AllFinite(Numbers(s)));
    if (pass == 0) {
      EXPECT_EQ(refused, n);  // every ‖x‖² overflows: nothing was learned
      EXPECT_EQ(s.counters.examples_seen, 0u);
      EXPECT_THAT(out[0].error.message(), HasSubstr("‖x‖² overflows"));
    } else {
      EXPECT_EQ(refused, 0);
      EXPECT_EQ(s.counters.examples_seen, uint64_t{n});
    }
  }
}

TEST(OverflowTest, AClassFirstSeenInARefusedExampleIsNotAdded) {
  SoftmaxRegressionParams softmax;
  std::unique_ptr<Model> model = MakeModel(DenseSpec(softmax, 2));
  const std::vector<double> a = {1, 0}, b = {0, 10};
  Example first{a, 0};
  first.class_label = "a";
  Example hostile{b, 0, 1e308};  // its step overflows
  hostile.class_label = "b";
  Example again{a, 0};
  again.class_label = "b";
  std::vector<ExampleOutcome> out(3);
  std::vector<std::string> names;
  ASSERT_TRUE(
      model->Learn({first, hostile}, absl::MakeSpan(out).subspan(0, 2), &names)
          .ok());
  EXPECT_TRUE(out[0].error.ok());
  EXPECT_FALSE(out[1].error.ok());
  EXPECT_THAT(model->classes(), ElementsAre("a"));
  EXPECT_THAT(names, ElementsAre("a"));
  ModelSpec spec = DenseSpec(softmax, 2);
  EXPECT_EQ(model->memory_bytes(), ModelBytes(spec, 1));
  // The class comes when an example of it is learned.
  ASSERT_TRUE(model->Learn({again}, absl::MakeSpan(out).subspan(0, 1)).ok());
  EXPECT_TRUE(out[0].error.ok());
  EXPECT_THAT(model->classes(), ElementsAre("a", "b"));
  EXPECT_EQ(model->memory_bytes(), ModelBytes(spec, 2));
}

}  // namespace
}  // namespace halfspace
