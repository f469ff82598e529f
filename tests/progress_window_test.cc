// Progressive validation over a recent window
// (core/monitors/progress_window.h): the last N examples exactly, the decayed
// averages by hand, and the state through a model's snapshot.

#include "core/monitors/progress_window.h"

#include <memory>
#include <vector>

#include "core/model/model.h"
#include "core/storage/snapshot_codec.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

TEST(ProgressWindowTest, TheLastNExactlyAndDecayedAveragesByHand) {
  ProgressWindow window(3);  // λ = 2/3
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
  EXPECT_DOUBLE_EQ(s.loss, 2);
  // Weights 8/27, 4/9, 2/3, 1 (sum 65/27) over correct 0, 1, 1, 0 and
  // losses 1, 0, 2, 4.
  EXPECT_DOUBLE_EQ(s.decayed_accuracy, 30.0 / 65);
  EXPECT_DOUBLE_EQ(s.decayed_loss, 152.0 / 65);
}

TEST(ProgressWindowTest, ExportedStateContinuesIdentically) {
  ProgressWindow a(4), b(4);
  for (int i = 0; i < 6; ++i) a.Add(i % 3 == 0, i * 0.5);
  ASSERT_TRUE(b.Import(a.Export()).ok());
  for (ProgressWindow* w : {&a, &b}) w->Add(true, 7);
  EXPECT_EQ(a.Export(), b.Export());
  EXPECT_EQ(a.summary().accuracy, b.summary().accuracy);
  EXPECT_FALSE(ProgressWindow(5).Import(a.Export()).ok());  // another size
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
  spec.progress_window = 0;
  EXPECT_FALSE(ValidateModelSpec(spec).ok());
}

}  // namespace
}  // namespace halfspace
