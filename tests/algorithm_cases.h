// Helpers of the update rules' tests: weights from numbers, and random
// points.

#ifndef HALFSPACE_TESTS_ALGORITHM_CASES_H_
#define HALFSPACE_TESTS_ALGORITHM_CASES_H_

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/algorithms/linear_weights.h"
#include "core/model/model.h"

namespace halfspace {

// w and b as one LinearWeights.
inline LinearWeights Weights(std::vector<double> w, double b) {
  LinearWeights weights;
  weights.w = std::move(w);
  weights.b = b;
  return weights;
}

// n points of R^d with standard normal coordinates, from `seed`.
inline std::vector<std::vector<double>> RandomPoints(int n, int d, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> xs(n, std::vector<double>(d));
  for (auto& x : xs) {
    for (double& v : x) v = normal(rng);
  }
  return xs;
}

// The label of a fixed hyperplane, x_0 - x_1 > 0.3.
inline int Label(const std::vector<double>& x) {
  return x[0] - x[1] > 0.3 ? 1 : -1;
}

// A multiclass model of d = 4 by `algorithm` (or one-vs-rest of it) that
// knows `classes` from the start.
inline std::unique_ptr<Model> Multiclass(
    Algorithm algorithm, bool one_vs_rest,
    std::vector<std::string> classes = {}) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(algorithm);
  spec.one_vs_rest = one_vs_rest;
  spec.dimension = 4;
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create("m", spec, classes);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_ALGORITHM_CASES_H_
