#include "core/model/shared_spec.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

ModelSpec Perceptron(int64_t dimension) {
  return DenseSpec(PerceptronParams{}, dimension);
}

TEST(SharedSpecTest, EqualSpecsShareOneCopy) {
  const std::shared_ptr<const SpecAndSpace> a = SharedSpec(Perceptron(10));
  const std::shared_ptr<const SpecAndSpace> b = SharedSpec(Perceptron(10));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->spec.dimension, 10);
  EXPECT_EQ(a->space.width(), 10);
}

TEST(SharedSpecTest, ModelsMadeAlikeShareTheirSpec) {
  auto a = Model::Create("a", Perceptron(100));
  auto b = Model::Create("b", Perceptron(100));
  auto c = Model::Create("c", Perceptron(101));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(&(*a)->spec(), &(*b)->spec());
  EXPECT_NE(&(*a)->spec(), &(*c)->spec());
  EXPECT_EQ((*c)->spec().dimension, 101);
}

// Every field tells specs apart: a spec changed in one field alone is
// never given the unchanged one's copy.
TEST(SharedSpecTest, SpecsDifferingInAnyFieldAreNotShared) {
  const std::vector<std::function<void(ModelSpec&)>> changes = {
      [](ModelSpec& s) {
        s.algorithm = PerceptronParams{2.0, 0.0};
      },
      [](ModelSpec& s) {
        s.algorithm = PerceptronParams{1.0, 0.5};
      },
      [](ModelSpec& s) { s.algorithm = MulticlassPerceptronParams{}; },
      [](ModelSpec& s) { s.dimension = 11; },
      [](ModelSpec& s) { s.one_vs_rest = true; },
      [](ModelSpec& s) { s.standardize = true; },
      [](ModelSpec& s) { s.fit_intercept = false; },
      [](ModelSpec& s) { s.progress_window = 7; },
      [](ModelSpec& s) { s.window_losses = !s.window_losses; },
      [](ModelSpec& s) { s.hash_bits = 4; },
      [](ModelSpec& s) {
        s.interactions = {{"a", "b"}};
      },
      [](ModelSpec& s) {
        s.interactions = {{"ab", ""}};
      },
      [](ModelSpec& s) {
        s.interactions = {{"a", "b"}, {"a", "b"}};
      },
      [](ModelSpec& s) { s.replication.stream = "s"; },
      [](ModelSpec& s) { s.replication.subject = "s"; },
      [](ModelSpec& s) { s.replication.replicas = 3; },
      [](ModelSpec& s) { s.replication.creation = "c1"; },
      [](ModelSpec& s) { s.replication.limits.max_model_bytes = 1; },
      [](ModelSpec& s) { s.replication.limits.max_classes = 1; },
      [](ModelSpec& s) { s.replication.limits.max_named_features = 1; },
      [](ModelSpec& s) { s.replication.limits.max_interaction_products = 1; },
  };
  const ModelSpec base = Perceptron(10);
  const std::shared_ptr<const SpecAndSpace> shared = SharedSpec(base);
  std::vector<std::string> identities = {SpecIdentity(base)};
  for (size_t i = 0; i < changes.size(); ++i) {
    ModelSpec changed = base;
    changes[i](changed);
    EXPECT_NE(SharedSpec(changed).get(), shared.get()) << "change " << i;
    for (const std::string& seen : identities) {
      EXPECT_NE(SpecIdentity(changed), seen) << "change " << i;
    }
    identities.push_back(SpecIdentity(changed));
  }
}

// Specs no model holds are forgotten, and one made again is right.
TEST(SharedSpecTest, ForgottenSpecsComeBackRight) {
  for (int round = 0; round < 3; ++round) {
    std::vector<std::shared_ptr<const SpecAndSpace>> held;
    for (int64_t d = 1; d <= 500; ++d) {
      held.push_back(SharedSpec(Perceptron(d)));
      ASSERT_EQ(held.back()->spec.dimension, d);
    }
    for (int64_t d = 1; d <= 500; ++d) {
      EXPECT_EQ(SharedSpec(Perceptron(d)).get(), held[d - 1].get());
    }
  }
}

TEST(SharedSpecTest, ThreadsShareSafely) {
  std::vector<std::thread> threads;
  std::vector<const SpecAndSpace*> seen(4);
  std::atomic<int> wrong{0};
  const std::shared_ptr<const SpecAndSpace> kept = SharedSpec(Perceptron(3));
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &seen, &wrong] {
      for (int64_t d = 1; d <= 300; ++d) {
        if (SharedSpec(Perceptron(d))->spec.dimension != d) ++wrong;
      }
      seen[t] = SharedSpec(Perceptron(3)).get();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  for (const SpecAndSpace* spec : seen) EXPECT_EQ(spec, kept.get());
}

}  // namespace
}  // namespace halfspace
