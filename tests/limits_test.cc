// The limits a model lives within (core/model/limits.h): its memory as
// ModelBytes counts it, the server's total, classes, named features and
// interaction products, and how refusals are recorded for recovery.

#include "core/model/limits.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/model/model_spec.h"
#include "core/training/batch.h"
#include "core/training/journal.h"
#include "core/training/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/counted_allocations.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<ResourceBudget> Budget(void (*configure)(Limits&)) {
  Limits limits;
  configure(limits);
  return std::make_shared<ResourceBudget>(limits);
}

TEST(ModelBytesTest, CountsWhatEveryAlgorithmKeeps) {
  constexpr int64_t d = 1000;
  constexpr int kClasses = 3;
  std::vector<ModelSpec> specs = {
      DenseSpec(PerceptronParams{}, d),
      DenseSpec(LogisticRegressionParams{}, d),
      DenseSpec(AveragedPerceptronParams{}, d),
      DenseSpec(PassiveAggressiveParams{}, d),
      DenseSpec(PocketPerceptronParams{}, d),
      DenseSpec(MulticlassPerceptronParams{}, d),
      DenseSpec(SoftmaxRegressionParams{}, d),
      DenseSpec(ConfidenceWeightedParams{}, d),
      DenseSpec(VotedPerceptronParams{2}, d),
      DenseSpec(FtrlProximalParams{}, d),
  };
  for (Penalty penalty : {Penalty::kL2, Penalty::kL1, Penalty::kElasticNet}) {
    for (uint64_t average_from : {0, 1}) {
      SgdParams sgd;
      sgd.options.penalty = penalty;
      sgd.options.average_from = average_from;
      specs.push_back(DenseSpec(sgd, d));
      specs.back().one_vs_rest = average_from == 1;
    }
  }
  SgdParams adagrad;
  adagrad.options.schedule = Schedule::kAdaGrad;
  specs.push_back(DenseSpec(adagrad, d));
  specs.push_back(DenseSpec(AveragedPerceptronParams{}, d));
  specs.back().standardize = true;
  specs.push_back(DenseSpec(PerceptronParams{}, d));
  specs.back().hash_bits = 10;

  const std::vector<double> x(d, 0.5);
  const std::vector<std::string> labels = {"c0", "c1", "c2"};
  std::vector<Example> examples;
  for (int k = 0; k < kClasses; ++k) {
    examples.push_back({x, k % 2 == 0 ? 1 : -1, 1.0, labels[k]});
  }
  std::vector<ExampleOutcome> outcomes(examples.size());
  for (const ModelSpec& spec : specs) {
    SCOPED_TRACE(absl::StrCat("algorithm ",
                              static_cast<int>(AlgorithmOf(spec.algorithm)),
                              IsMulticlass(spec) ? " multiclass" : ""));
    for (ExampleOutcome& o : outcomes) o = ExampleOutcome();
    const int64_t before = allocations::Live();
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
    ASSERT_TRUE(model.ok()) << model.status();
    // On a thread of its own, whose learning scratch (kept by the thread
    // for its next batch, not by the model) goes when it ends.
    std::thread([&] {
      ASSERT_TRUE((*model)->Learn(examples, absl::MakeSpan(outcomes)).ok());
    }).join();
    for (const ExampleOutcome& o : outcomes) ASSERT_TRUE(o.error.ok());
    const int64_t held = allocations::Live() - before;
    const int64_t counted = ModelBytes(spec, kClasses);
    const int64_t vectors = IsMulticlass(spec) ? kClasses : 1;
    EXPECT_GE(counted, held);
    // and not much more: the fixed overheads are generous by design.
    EXPECT_LE(counted - kModelOverheadBytes - vectors * kClassOverheadBytes,
              held * 11 / 10);
  }
}

TEST(ModelLimitsTest, AModelTooLargeIsRefusedBeforeItTakesMemory) {
  auto budget = Budget([](Limits& l) { l.max_model_bytes = 1 << 20; });
  ModelSpec spec = DenseSpec(AveragedPerceptronParams{}, kMaxDimension);
  spec.hash_bits = kMaxHashBits;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("huge", spec, {}, budget);
  EXPECT_TRUE(absl::IsResourceExhausted(model.status()));
  EXPECT_GT(ModelBytes(spec, 0), int64_t{768} << 20);  // w, u and w̄
  EXPECT_THAT(
      model.status().message(),
      HasSubstr(absl::StrCat("would take ", ModelBytes(spec, 0), " bytes")));
  EXPECT_THAT(model.status().message(),
              HasSubstr("the limit is 1048576, set by --max_model_bytes"));
  EXPECT_EQ(budget->reserved(), 0);
}

TEST(ModelLimitsTest, ModelsShareTheServersMemoryAndGiveItBack) {
  const ModelSpec spec = DenseSpec(PerceptronParams{}, 1000);
  const int64_t bytes = ModelBytes(spec, 0);
  Limits limits;
  limits.max_total_model_bytes = 2 * bytes + bytes / 2;
  auto budget = std::make_shared<ResourceBudget>(limits);
  absl::StatusOr<std::unique_ptr<Model>> a =
      Model::Create("a", spec, {}, budget);
  absl::StatusOr<std::unique_ptr<Model>> b =
      Model::Create("b", spec, {}, budget);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(budget->reserved(), 2 * bytes);
  absl::StatusOr<std::unique_ptr<Model>> c =
      Model::Create("c", spec, {}, budget);
  EXPECT_TRUE(absl::IsResourceExhausted(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("--max_total_model_bytes"));
  a->reset();
  EXPECT_EQ(budget->reserved(), bytes);
  EXPECT_TRUE(Model::Create("c", spec, {}, budget).ok());
  EXPECT_EQ(budget->reserved(), bytes);  // c is gone again
}

// Keeps the refusals a batch's record holds.
class RefusalsJournal final : public Journal {
 public:
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  const TrainBatch& batch) override {
    refused = batch.refused;
    return 1;
  }
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  const RememberBatch&) override {
    return 1;
  }
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  absl::string_view) override {
    return 1;
  }
  void WhenDurable(uint64_t, absl::AnyInvocable<void() &&> done) override {
    std::move(done)();
  }
  void WaitDurable(uint64_t) override {}

  std::vector<uint32_t> refused;
};

TEST(ModelLimitsTest, AClassPastTheLimitIsRefusedInBandAndRecorded) {
  auto budget = Budget([](Limits& l) { l.max_classes = 2; });
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(
      "m", DenseSpec(MulticlassPerceptronParams{}, 1), {"a"}, budget);
  ASSERT_TRUE(model.ok());
  const std::vector<double> x = {1};
  std::vector<Example> examples = {
      {x, 0, 1.0, "a"}, {x, 0, 1.0, "b"}, {x, 0, 1.0, "c"}, {x, 0, 1.0, "b"}};
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    (*model)->Prepare(examples[i], prepared[i]);
  }
  std::vector<ExampleOutcome> outcomes(examples.size());
  TrainBatch batch;
  RefusalsJournal journal;
  ASSERT_TRUE(Trainer(&journal)
                  .Train(**model, batch, prepared, absl::MakeSpan(outcomes))
                  .ok());
  EXPECT_TRUE(outcomes[0].error.ok());
  EXPECT_TRUE(outcomes[1].error.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(outcomes[2].error));
  EXPECT_THAT(outcomes[2].error.message(),
              HasSubstr("cannot add class 'c': model 'm' would have 3 classes; "
                        "the limit is 2, set by --max_classes"));
  EXPECT_TRUE(outcomes[3].error.ok());
  EXPECT_THAT(batch.refused, ElementsAre(2));
  // The journal was handed the refusal before anything was learned.
  EXPECT_THAT(journal.refused, ElementsAre(2));
  EXPECT_THAT((*model)->classes(), ElementsAre("a", "b"));
  EXPECT_EQ(budget->reserved(), ModelBytes((*model)->spec(), 2));
}

TEST(ModelLimitsTest, ClassesStopAtTheModelsMemory) {
  const ModelSpec spec = DenseSpec(SoftmaxRegressionParams{}, 100);
  Limits limits;
  limits.max_model_bytes = ModelBytes(spec, 3);
  auto budget = std::make_shared<ResourceBudget>(limits);
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("m", spec, {"a", "b", "c"}, budget);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::Status s = (*model)->SetClassWeights("d", std::vector<double>(100), 0);
  EXPECT_TRUE(absl::IsResourceExhausted(s));
  EXPECT_THAT(s.message(), HasSubstr("--max_model_bytes"));
  EXPECT_EQ((*model)->classes().size(), 3u);
  EXPECT_TRUE(absl::IsResourceExhausted(
      Model::Create("n", spec, {"a", "b", "c", "d"}, budget).status()));
}

TEST(ModelLimitsTest, RecoveryRefusesWhatWasRefusedAndNothingElse) {
  auto budget = Budget([](Limits& l) { l.max_classes = 1; });
  budget->set_enforcing(false);
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(
      "m", DenseSpec(MulticlassPerceptronParams{}, 1), {}, budget);
  ASSERT_TRUE(model.ok());
  const std::vector<double> x = {1};
  std::vector<Example> examples = {
      {x, 0, 1.0, "a"}, {x, 0, 1.0, "b"}, {x, 0, 1.0, "c"}};
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    (*model)->Prepare(examples[i], prepared[i]);
  }
  std::vector<ExampleOutcome> outcomes(examples.size());
  TrainBatch batch;
  batch.refused = {1};  // as logged when the limits were others
  ReplayJournal journal(7);
  ASSERT_TRUE(Trainer(&journal)
                  .Train(**model, batch, prepared, absl::MakeSpan(outcomes))
                  .ok());
  EXPECT_EQ((*model)->lsn(), 7u);
  EXPECT_TRUE(outcomes[0].error.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(outcomes[1].error));
  EXPECT_TRUE(outcomes[2].error.ok());
  EXPECT_THAT((*model)->classes(), ElementsAre("a", "c"));
}

TEST(ModelLimitsTest, NamedFeaturesAndInteractionProductsPerExample) {
  ModelSpec spec = DenseSpec(PerceptronParams{}, 1);
  spec.hash_bits = 10;
  spec.interactions = {{"u", "u"}, {"u", "v"}};
  auto budget = Budget([](Limits& l) {
    l.max_named_features = 8;
    l.max_interaction_products = 16;
  });
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("m", spec, {}, budget);
  ASSERT_TRUE(model.ok());
  // u features of group u named, v of group v named or, with `hashed`,
  // hashed by the sender: the limits count both alike.
  auto prepare = [&](int u, int v, bool hashed = false) {
    std::vector<NamedFeature> named;
    std::vector<std::string> names;
    std::vector<uint32_t> hashes;
    names.reserve(u + v);
    for (int i = 0; i < u + v; ++i) {
      names.push_back(absl::StrCat("f", i));
      if (hashed && i >= u) {
        hashes.push_back(static_cast<uint32_t>(i));
      } else {
        named.push_back({i < u ? "u" : "v", names.back(), 1.0});
      }
    }
    const std::vector<HashedGroup> groups = {{"v", hashes, {}}};
    Example e;
    e.features.named = named;
    if (hashed) e.features.hashed = groups;
    e.label = 1;
    PreparedExample p;
    (*model)->Prepare(e, p);
    return p.error;
  };
  // u = 4, v = 3: 6 + 12 = 18 products; u = 4, v = 2: 6 + 8 = 14.
  absl::Status products = prepare(4, 3);
  EXPECT_TRUE(absl::IsResourceExhausted(products));
  EXPECT_THAT(products.message(),
              HasSubstr("make 18 interaction products; the limit is 16, set "
                        "by --max_interaction_products"));
  EXPECT_TRUE(prepare(4, 2).ok());
  absl::Status named = prepare(1, 8);  // 9 features, 8 products
  EXPECT_THAT(named.message(),
              HasSubstr("has 9 named features; the limit is 8, set by "
                        "--max_named_features"));
  EXPECT_THAT(prepare(4, 3, /*hashed=*/true).message(),
              HasSubstr("make 18 interaction products"));
  EXPECT_TRUE(prepare(4, 2, /*hashed=*/true).ok());
  EXPECT_THAT(prepare(1, 8, /*hashed=*/true).message(),
              HasSubstr("has 9 named features"));
  budget->set_enforcing(false);
  EXPECT_TRUE(prepare(4, 3).ok());
}

TEST(ModelLimitsTest, ExamplesPerRequest) {
  Limits limits;
  limits.max_examples_per_request = 10;
  EXPECT_TRUE(CheckExamplesPerRequest(10, limits, "TrainRequest").ok());
  absl::Status s = CheckExamplesPerRequest(11, limits, "TrainRequest");
  EXPECT_TRUE(absl::IsResourceExhausted(s));
  EXPECT_EQ(s.message(),
            "the TrainRequest has 11 examples; send fewer per request; the "
            "limit is 10, set by --max_examples_per_request");
}

}  // namespace
}  // namespace halfspace
