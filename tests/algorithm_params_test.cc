// Each algorithm's declared parameters (core/algorithms/parameters.h), as
// the model files store them: every parameter has its own key, comes back
// as it was stored, and a damaged value reads back as one validation
// refuses rather than as undefined behaviour.

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/model/model_spec.h"
#include "core/storage/parameter_keys.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

std::vector<AlgorithmParams> EveryAlgorithm() {
  std::vector<AlgorithmParams> all;
  for (size_t i = 1; i <= std::variant_size_v<AlgorithmParams>; ++i) {
    all.push_back(DefaultParams(static_cast<Algorithm>(i)));
  }
  return all;
}

// Every parameter moved off its default, to another valid value.
AlgorithmParams Moved(AlgorithmParams params) {
  std::visit(
      [](auto& p) {
        ForEachParameter(p, [](auto& value, const auto&) {
          using Value = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<Value, bool>) {
            value = !value;
          } else if constexpr (std::is_enum_v<Value>) {
            value = static_cast<Value>(static_cast<int>(value) == 1 ? 2 : 1);
          } else if constexpr (std::is_integral_v<Value>) {
            value = value + 3;
          } else {
            value = value * 0.5 + 0.125;
          }
        });
      },
      params);
  return params;
}

TEST(AlgorithmParamsTest, EachAlgorithmHasItsNumberAndName) {
  std::set<std::string> names;
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    const std::string name(AlgorithmName(params));
    SCOPED_TRACE(name);
    EXPECT_TRUE(names.insert(name).second);
    std::optional<AlgorithmParams> named = AlgorithmNamed(name);
    ASSERT_TRUE(named.has_value());
    EXPECT_EQ(named->index(), params.index());
    EXPECT_EQ(static_cast<size_t>(AlgorithmOf(params)), params.index() + 1);
  }
  EXPECT_FALSE(AlgorithmNamed("svm").has_value());
}

TEST(AlgorithmParamsTest, EachParameterHasItsOwnKeyAndName) {
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    SCOPED_TRACE(std::string(AlgorithmName(params)));
    // The spec's own options' keys, which no algorithm may take.
    std::set<uint32_t> keys = {15, 16, 17, 19, 24};
    std::set<std::string> names;
    std::visit(
        [&](const auto& p) {
          ForEachParameter(p, [&](const auto&, const auto& parameter) {
            EXPECT_TRUE(
                keys.insert(static_cast<uint32_t>(parameter.key)).second)
                << parameter.name;
            EXPECT_TRUE(names.insert(std::string(parameter.name)).second);
          });
        },
        params);
    EXPECT_FALSE(names.empty());
  }
}

TEST(AlgorithmParamsTest, DefaultsAreValidAndMovedOnesStillValidate) {
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    SCOPED_TRACE(std::string(AlgorithmName(params)));
    EXPECT_TRUE(ValidateModelSpec(DenseSpec(params, 3)).ok());
    absl::Status moved = ValidateModelSpec(DenseSpec(Moved(params), 3));
    EXPECT_TRUE(moved.ok()) << moved;
  }
}

TEST(AlgorithmParamsTest, EveryParameterComesBackFromItsKeys) {
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    SCOPED_TRACE(std::string(AlgorithmName(params)));
    ModelSpec spec = DenseSpec(Moved(params), 3);
    spec.one_vs_rest = !IsNativelyMulticlass(spec.algorithm);
    spec.fit_intercept = false;
    spec.progress_window = 77;
    const KeyedValues stored = KeyedParameters(spec);
    ModelSpec loaded;
    ASSERT_TRUE(SetParameters(
        static_cast<uint32_t>(AlgorithmOf(spec.algorithm)), stored, loaded));
    EXPECT_EQ(loaded.algorithm.index(), spec.algorithm.index());
    EXPECT_EQ(KeyedParameters(loaded), stored);
    // And the moved values differ from the defaults, so this is no
    // comparison of defaults with defaults.
    EXPECT_NE(KeyedParameters(DenseSpec(params, 3)), stored);
  }
}

TEST(AlgorithmParamsTest, AMissingKeyKeepsItsDefaultAndAnUnknownNumberFails) {
  ModelSpec spec;
  ASSERT_TRUE(SetParameters(static_cast<uint32_t>(Algorithm::kSgd), {}, spec));
  // Except the window's losses, which a model stored before the key kept.
  ModelSpec expected = DenseSpec(SgdParams(), 0);
  expected.window_losses = true;
  EXPECT_EQ(KeyedParameters(spec), KeyedParameters(expected));
  EXPECT_FALSE(SetParameters(0, {}, spec));
  EXPECT_FALSE(
      SetParameters(std::variant_size_v<AlgorithmParams> + 1, {}, spec));
}

TEST(AlgorithmParamsTest, DamagedIntegersReadBackAsValuesValidationRefuses) {
  constexpr uint32_t kMaxVectors = 23, kLoss = 4, kAverageFrom = 10;
  const uint32_t voted = static_cast<uint32_t>(Algorithm::kVotedPerceptron);
  for (double damaged : {std::nan(""), 1e300, -1e300, 0.0, -1.0, 1e4 + 1}) {
    SCOPED_TRACE(damaged);
    ModelSpec spec;
    ASSERT_TRUE(SetParameters(voted, {{kMaxVectors, damaged}}, spec));
    spec.dimension = 3;
    EXPECT_FALSE(ValidateModelSpec(spec).ok());
  }
  for (double damaged : {std::nan(""), 1e300, -1e300, 7.0}) {
    SCOPED_TRACE(damaged);
    ModelSpec spec;
    ASSERT_TRUE(SetParameters(static_cast<uint32_t>(Algorithm::kSgd),
                              {{kLoss, damaged}}, spec));
    spec.dimension = 3;
    EXPECT_FALSE(ValidateModelSpec(spec).ok());
  }
  // The largest unsigned value a client may set is stored as 2^64, past
  // the type: it reads back as the largest, not as whatever an overflowing
  // conversion gives.
  SgdParams sgd;
  sgd.options.average_from = std::numeric_limits<uint64_t>::max();
  ModelSpec spec;
  ASSERT_TRUE(SetParameters(static_cast<uint32_t>(Algorithm::kSgd),
                            KeyedParameters(DenseSpec(sgd, 3)), spec));
  EXPECT_EQ(std::get<SgdParams>(spec.algorithm).options.average_from,
            std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(SetParameters(static_cast<uint32_t>(Algorithm::kSgd),
                            {{kAverageFrom, -5.0}}, spec));
  EXPECT_EQ(std::get<SgdParams>(spec.algorithm).options.average_from, 0u);
}

// The bias steps by the algorithm's intercept decay (PA and SGD declare
// one; scikit-learn's is 0.01 on sparse input), by 1 for the others, and
// not at all without an intercept.
TEST(AlgorithmParamsTest, TheBiasStepsByTheAlgorithmsInterceptDecay) {
  const std::vector<double> x = {1, 2};
  auto bias_after_one_step = [&](const ModelSpec& spec) {
    std::unique_ptr<OnlineClassifier> c = MakeBinaryClassifier(spec);
    c->Learn(x, +1, 1.0);
    c->EndBatch();
    return c->weights().b;
  };
  PassiveAggressiveParams pa;
  SgdParams sgd;
  sgd.options.schedule = Schedule::kConstant;
  const double pa_full = bias_after_one_step(DenseSpec(pa, 2));
  const double sgd_full = bias_after_one_step(DenseSpec(sgd, 2));
  ASSERT_NE(pa_full, 0.0);
  ASSERT_NE(sgd_full, 0.0);
  pa.intercept_decay = 0.25;
  sgd.options.intercept_decay = 0.25;
  EXPECT_DOUBLE_EQ(bias_after_one_step(DenseSpec(pa, 2)), 0.25 * pa_full);
  EXPECT_DOUBLE_EQ(bias_after_one_step(DenseSpec(sgd, 2)), 0.25 * sgd_full);
  ModelSpec without = DenseSpec(pa, 2);
  without.fit_intercept = false;
  EXPECT_EQ(bias_after_one_step(without), 0.0);
  EXPECT_NE(bias_after_one_step(DenseSpec(PerceptronParams(), 2)), 0.0);
}

TEST(AlgorithmParamsTest, ProbabilisticAlgorithmsSayTheyAre) {
  SgdParams sgd;
  EXPECT_FALSE(IsProbabilistic(DenseSpec(sgd, 2)));  // the hinge loss
  sgd.options.loss = LossKind::kLog;
  EXPECT_TRUE(IsProbabilistic(DenseSpec(sgd, 2)));
  sgd.options.loss = LossKind::kModifiedHuber;
  EXPECT_TRUE(IsProbabilistic(DenseSpec(sgd, 2)));
  EXPECT_TRUE(IsProbabilistic(DenseSpec(LogisticRegressionParams(), 2)));
  EXPECT_TRUE(IsProbabilistic(DenseSpec(SoftmaxRegressionParams(), 2)));
  EXPECT_FALSE(IsProbabilistic(DenseSpec(PerceptronParams(), 2)));
  EXPECT_TRUE(IsNativelyMulticlass(SoftmaxRegressionParams()));
  EXPECT_TRUE(IsNativelyMulticlass(MulticlassPerceptronParams()));
  EXPECT_FALSE(IsNativelyMulticlass(VotedPerceptronParams()));
}

}  // namespace
}  // namespace halfspace
