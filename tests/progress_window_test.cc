// Progressive validation over a recent window
// (core/monitors/progress_window.h): the last N examples exactly, the decayed
// averages by hand, and the state through a model's snapshot.

#include "core/monitors/progress_window.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/model/model.h"
#include "core/storage/parameter_keys.h"
#include "core/storage/snapshot_codec.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

TEST(ProgressWindowTest, TheLastNExactlyAndDecayedAveragesByHand) {
  ProgressWindow window(3, /*keep_losses=*/true);  // λ = 2/3
  EXPECT_EQ(window.summary().examples, 0);
  window.Add(true, 1);
  EXPECT_EQ(window.summary().accuracy, 0);
  EXPECT_EQ(window.summary().decayed_loss, 1);  // the plain mean at first
  window.Add(false, 0);
  window.Add(false, 2);
  window.Add(true, 4);
  const ProgressWindow::Summary s = window.summary();
  EXPECT_EQ(s.examples, 3);  // the first has left the window
  EXPECT_DOUBLE_EQ(s.accuracy, 2.0 / 3);
  ASSERT_TRUE(s.loss.has_value());
  EXPECT_DOUBLE_EQ(*s.loss, 2);
  // Weights 8/27, 4/9, 2/3, 1 (sum 65/27) over correct 0, 1, 1, 0 and
  // losses 1, 0, 2, 4.
  EXPECT_DOUBLE_EQ(s.decayed_accuracy, 30.0 / 65);
  EXPECT_DOUBLE_EQ(s.decayed_loss, 152.0 / 65);
}

// A window without losses counts the last N mistakes exactly, a bit each
// across words, and decays its averages as one with losses does.
TEST(ProgressWindowTest, WithoutLossesTheLastNMistakesExactly) {
  for (const int64_t size : {1, 63, 64, 65, 130}) {
    SCOPED_TRACE(size);
    ProgressWindow bits(size, false), losses(size, true);
    std::vector<bool> mistakes;
    for (int i = 0; i < 300; ++i) {
      const bool mistake = (i * 7919) % 5 < 2;
      mistakes.push_back(mistake);
      bits.Add(mistake, i * 0.25);
      losses.Add(mistake, i * 0.25);
      const int64_t n = std::min<int64_t>(size, i + 1);
      int64_t wrong = 0;
      for (int64_t k = 0; k < n; ++k) wrong += mistakes[i - k];
      const ProgressWindow::Summary s = bits.summary();
      ASSERT_EQ(s.examples, n);
      ASSERT_EQ(s.accuracy, 1.0 - static_cast<double>(wrong) / n) << i;
      EXPECT_FALSE(s.loss.has_value());
      EXPECT_EQ(s.decayed_accuracy, losses.summary().decayed_accuracy);
      EXPECT_EQ(s.decayed_loss, losses.summary().decayed_loss);
    }
    EXPECT_LT(ProgressWindow::Bytes(size, false),
              ProgressWindow::Bytes(size, true));
  }
  EXPECT_EQ(ProgressWindow::Bytes(1000, false), 128);
}

TEST(ProgressWindowTest, ExportedStateContinuesIdentically) {
  for (const bool keep_losses : {true, false}) {
    SCOPED_TRACE(keep_losses);
    ProgressWindow a(70, keep_losses), b(70, keep_losses);
    for (int i = 0; i < 100; ++i) a.Add(i % 3 == 0, i * 0.5);
    ASSERT_TRUE(b.Import(a.Export()).ok());
    for (ProgressWindow* w : {&a, &b}) w->Add(true, 7);
    EXPECT_EQ(a.Export(), b.Export());
    EXPECT_EQ(a.summary().accuracy, b.summary().accuracy);
    EXPECT_EQ(a.summary().loss, b.summary().loss);
    // another size
    EXPECT_FALSE(ProgressWindow(5, keep_losses).Import(a.Export()).ok());
  }
  // A window with losses gives its mistakes to one without, which ignores
  // the losses.
  ProgressWindow with(4, true), without(4, false);
  for (int i = 0; i < 6; ++i) with.Add(i % 3 == 0, i * 0.5);
  ASSERT_TRUE(without.Import(with.Export()).ok());
  EXPECT_EQ(without.summary().accuracy, with.summary().accuracy);
  EXPECT_FALSE(without.summary().loss.has_value());
}

TEST(ProgressWindowTest, AModelKeepsItsWindowThroughASnapshot) {
  ModelSpec spec;
  spec.dimension = 1;
  spec.algorithm = PerceptronParams{};
  spec.progress_window = 2;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok()) << model.status();
  // w = 0 predicts +1: a mistake on the first; then w = -1 gets both
  // right, so the window of two is perfect while the total is not.
  const std::vector<double> x = {1};
  std::vector<ExampleOutcome> out(3);
  ASSERT_TRUE(
      (*model)->Learn({{x, -1}, {x, -1}, {x, -1}}, absl::MakeSpan(out)).ok());
  ModelStats stats = (*model)->Stats();
  EXPECT_EQ(stats.window.examples, 2);
  EXPECT_EQ(stats.window.accuracy, 1.0);
  EXPECT_EQ(stats.counters.mistakes, 1u);
  absl::StatusOr<std::unique_ptr<Model>> restored =
      Model::Restore(*DecodeSnapshot(EncodeSnapshot((*model)->Snapshot())));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ((*restored)->spec().progress_window, 2);
  EXPECT_EQ((*restored)->Snapshot().progress, (*model)->Snapshot().progress);
  EXPECT_EQ((*restored)->Stats().window.decayed_accuracy,
            stats.window.decayed_accuracy);
  EXPECT_FALSE((*restored)->spec().window_losses);
  EXPECT_FALSE(stats.window.loss.has_value());
  spec.progress_window = 0;
  EXPECT_FALSE(ValidateModelSpec(spec).ok());
}

// Whether a window keeps its losses is part of the stored spec; a model
// stored before it was kept them.
TEST(ProgressWindowTest, WindowLossesAreStoredWithTheSpec) {
  ModelSpec spec = DenseSpec(PerceptronParams{}, 2);
  for (const bool keep : {true, false}) {
    spec.window_losses = keep;
    ModelSpec loaded;
    ASSERT_TRUE(SetParameters(1, KeyedParameters(spec), loaded));
    EXPECT_EQ(loaded.window_losses, keep);
  }
  KeyedValues before = KeyedParameters(spec);
  before.erase(std::remove_if(before.begin(), before.end(),
                              [](const auto& kv) {
                                return kv.first ==
                                       static_cast<uint32_t>(
                                           ParameterKey::kWindowLosses);
                              }),
               before.end());
  ModelSpec old;
  ASSERT_TRUE(SetParameters(1, before, old));
  EXPECT_TRUE(old.window_losses);
}

}  // namespace
}  // namespace halfspace
