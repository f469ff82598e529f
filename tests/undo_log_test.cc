// The undo log (core/algorithms/undo_log.h): what an update saved is put back,
// the earliest save of a place winning when one example saves it twice; the
// finiteness check; the log that records nothing.

#include "core/algorithms/undo_log.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(UndoLogTest, PutsBackScalarsSavedTwiceAsTheyWereFirst) {
  UndoLog undo;
  double t = 1.0;
  int64_t n = 5;
  bool flag = false;
  undo.Save(t);
  undo.Save(n);
  undo.Save(flag);
  t = 2.0, n = 6, flag = true;
  undo.Save(t);  // an algorithm and the model may each save one place
  undo.Save(n);
  undo.Save(flag);
  t = 3.0, n = 7;
  undo.Undo();
  EXPECT_EQ(t, 1.0);
  EXPECT_EQ(n, 5);
  EXPECT_FALSE(flag);
}

TEST(UndoLogTest, PutsBackDenseAndSparseCoordinatesSavedTwice) {
  UndoLog undo;
  LinearWeights weights(4);
  weights.w = {1, 2, 3, 4};
  weights.b = 0.5;
  const std::vector<double> dense = {1, 1};
  const Features x(dense);  // coordinates 0 and 1
  Features sparse;
  const std::vector<uint32_t> indices = {1, 3};
  const std::vector<double> values = {1, 1};
  sparse.indices = indices;
  sparse.values = values;

  undo.Save(weights, x);
  weights.w[0] = 10, weights.w[1] = 20, weights.b = 1.5;
  undo.Save(weights.w, sparse);  // w_1 again, and w_3
  weights.w[1] = 200, weights.w[3] = 40;
  undo.SaveAll(weights);  // everything again (a shrink)
  for (double& w : weights.w) w *= 0.5;
  weights.b = 7;
  undo.Undo();
  EXPECT_THAT(weights.w, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(weights.b, 0.5);
}

TEST(UndoLogTest, FiniteLooksAtEverySavedPlaceAsItIsNow) {
  UndoLog undo;
  std::vector<double> w(9, 1.0);
  double scalar = 1.0;
  Features sparse;
  const std::vector<uint32_t> indices = {7};
  const std::vector<double> values = {1};
  sparse.indices = indices;
  sparse.values = values;
  undo.SaveAll(w);
  undo.Save(scalar);
  EXPECT_TRUE(undo.Finite());
  for (const double bad : {kInf, -kInf, std::nan("")}) {
    for (size_t j = 0; j < w.size();
         ++j) {  // each of the four lanes, and the tail
      w[j] = bad;
      EXPECT_FALSE(undo.Finite()) << j;
      w[j] = std::numeric_limits<double>::max();
      EXPECT_TRUE(undo.Finite()) << j;
    }
    scalar = bad;
    EXPECT_FALSE(undo.Finite());
    scalar = 1.0;
  }
  undo.Clear();  // the example is kept: nothing saved, nothing checked
  w[7] = kInf;
  EXPECT_TRUE(undo.Finite());
  undo.Save(w, sparse);
  EXPECT_FALSE(undo.Finite());
  undo.Undo();
  EXPECT_EQ(w[7], kInf);  // saved as it was: infinite
}

TEST(UndoLogTest, TheLogThatIsOffSavesNothing) {
  UndoLog* off = UndoLog::Off();
  double v = 1.0;
  off->Save(v);
  v = kInf;
  EXPECT_TRUE(off->Finite());
  off->Undo();
  EXPECT_EQ(v, kInf);
}

}  // namespace
}  // namespace halfspace
