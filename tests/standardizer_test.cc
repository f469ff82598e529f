// The standardizer (core/model/standardizer.h): Welford's running mean
// and variance, and the transform while a feature has no spread.

#include "core/model/standardizer.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;

TEST(StandardizerTest, KeepsThePopulationMeanAndVarianceByWelford) {
  Standardizer s(1);
  for (double x : {1.0, 3.0, 5.0}) {
    const std::vector<double> v = {x};
    s.Observe(v);
  }
  // mean 3, Σ(x - mean)² = 8, sd = √(8/3): divided by n, not n - 1.
  EXPECT_THAT(s.Export(), ElementsAre(3.0, 3.0, 8.0));
  std::vector<double> z;
  const std::vector<double> five = {5};
  s.Transform(five, z);
  EXPECT_DOUBLE_EQ(z[0], 2.0 / std::sqrt(8.0 / 3.0));
}

TEST(StandardizerTest, CentersOnlyWhileAFeatureHasNoSpread) {
  Standardizer s(2);
  const std::vector<double> a = {2, 7}, b = {4, 7};
  s.Observe(a);
  std::vector<double> z;
  s.Transform(b, z);
  EXPECT_THAT(z, ElementsAre(2.0, 0.0));  // sd 0: x - mean
  s.Observe(b);
  s.Transform(b, z);
  EXPECT_THAT(z, ElementsAre(1.0, 0.0));  // mean 3, sd 1
}

}  // namespace
}  // namespace halfspace
