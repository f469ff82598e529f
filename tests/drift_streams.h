// Synthetic streams with known drifts, drawn from fixed seeds:
//
// - SEA concepts (Street & Kim, KDD 2001): three features uniform in
//   [0, 10], of which the first two decide: y = +1 when x1 + x2 <= θ. θ
//   takes the four concepts' values 8, 9, 7, 9.5 in turn, each for
//   `period` examples (abrupt drifts at period, 2·period, 3·period), and a
//   fraction `noise` of the labels is flipped.
// - A rotating hyperplane (Hulten, Spencer & Domingos, KDD 2001): d
//   features uniform in [0, 1], y = +1 when Σ w_i·x_i >= ½·Σ w_i; each w_i
//   moves by `magnitude` per example in its own direction, which reverses
//   with probability 10% every 1000 examples (gradual drift).
// - Stationary: the same hyperplane, never moving; Reversed turns any
//   stream's concept around at a known position (an abrupt drift).

#ifndef HALFSPACE_TESTS_DRIFT_STREAMS_H_
#define HALFSPACE_TESTS_DRIFT_STREAMS_H_

#include <cstdint>
#include <random>
#include <vector>

namespace halfspace {

struct LabeledPoint {
  std::vector<double> x;
  int y = 0;
};

inline std::vector<LabeledPoint> SeaConcepts(int n, int period, double noise,
                                             uint64_t seed) {
  static constexpr double kThresholds[] = {8, 9, 7, 9.5};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> feature(0, 10);
  std::bernoulli_distribution flip(noise);
  std::vector<LabeledPoint> points(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    LabeledPoint& p = points[static_cast<size_t>(t)];
    p.x = {feature(rng), feature(rng), feature(rng)};
    const double theta = kThresholds[(t / period) % 4];
    p.y = p.x[0] + p.x[1] <= theta ? 1 : -1;
    if (flip(rng)) p.y = -p.y;
  }
  return points;
}

inline std::vector<LabeledPoint> RotatingHyperplane(int n, int d,
                                                    double magnitude,
                                                    double noise,
                                                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::bernoulli_distribution flip(noise), reverse(0.1);
  std::vector<double> w(static_cast<size_t>(d)), direction(w.size(), 1.0);
  for (double& wi : w) wi = unit(rng);
  std::vector<LabeledPoint> points(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    LabeledPoint& p = points[static_cast<size_t>(t)];
    double score = 0.0, half = 0.0;
    for (size_t i = 0; i < w.size(); ++i) {
      p.x.push_back(unit(rng));
      score += w[i] * p.x[i];
      half += w[i] / 2;
    }
    p.y = score >= half ? 1 : -1;
    if (flip(rng)) p.y = -p.y;
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] += direction[i] * magnitude;
      if (t % 1000 == 999 && reverse(rng)) direction[i] = -direction[i];
    }
  }
  return points;
}

inline std::vector<LabeledPoint> Stationary(int n, int d, double noise,
                                            uint64_t seed) {
  return RotatingHyperplane(n, d, 0.0, noise, seed);
}

// `points` with the concept reversed (y = −y) from the `from`-th on.
inline std::vector<LabeledPoint> Reversed(std::vector<LabeledPoint> points,
                                          size_t from) {
  for (size_t i = from; i < points.size(); ++i) points[i].y = -points[i].y;
  return points;
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_DRIFT_STREAMS_H_
