// FTRL-Proximal against the paper's Algorithm 1 written out here, coordinate
// by coordinate with lazily formed weights (McMahan et al. 2013), bit for
// bit on dense and sparse examples; steps by hand at the L1 boundary; the
// count of nonzero weights; weights set from outside; and Vowpal Wabbit's
// update rule (its float arithmetic, a regularized constant) where the two
// definitions agree.

#include "core/algorithms/ftrl_proximal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/algorithm_cases.h"

namespace halfspace {
namespace {

using Sparse = std::vector<std::pair<uint32_t, double>>;  // (i, x_i ≠ 0)

// Algorithm 1 of the paper, with y ∈ {0, 1}: for the coordinates I of x's
// nonzeros and the bias (a coordinate whose x is 1, last), w_i is formed
// from z_i and n_i when needed; p = σ(x·w); then g_i, σ_i, z_i, n_i.
class PaperFtrl {
 public:
  PaperFtrl(double alpha, double beta, double l1, double l2,
            bool regularize_bias)
      : alpha_(alpha),
        beta_(beta),
        l1_(l1),
        l2_(l2),
        regularize_bias_(regularize_bias) {}

  // Learns (x, y) and returns p_t.
  double Learn(const Sparse& x, int y) {
    Sparse with_bias = x;
    with_bias.push_back({kBias, 1.0});
    std::vector<double> w;
    double wx = 0.0;
    for (const auto& [i, xi] : with_bias) {
      w.push_back(W(i));
      wx += w.back() * xi;
    }
    const double p = 1.0 / (1.0 + std::exp(-wx));
    for (size_t k = 0; k < with_bias.size(); ++k) {
      const auto [i, xi] = with_bias[k];
      const double g = (p - y) * xi;
      const double sigma =
          (std::sqrt(n_[i] + g * g) - std::sqrt(n_[i])) / alpha_;
      z_[i] += g - sigma * w[k];
      n_[i] += g * g;
    }
    return p;
  }

  double W(uint32_t i) const {
    const double l1 = i == kBias && !regularize_bias_ ? 0.0 : l1_;
    const double l2 = i == kBias && !regularize_bias_ ? 0.0 : l2_;
    auto z = z_.find(i);
    if (z == z_.end() || std::fabs(z->second) <= l1) return 0.0;
    const double sgn = z->second < 0 ? -1.0 : 1.0;
    return -(z->second - sgn * l1) /
           ((beta_ + std::sqrt(n_.at(i))) / alpha_ + l2);
  }
  double Bias() const { return W(kBias); }

 private:
  static constexpr uint32_t kBias = UINT32_MAX;
  const double alpha_, beta_, l1_, l2_;
  const bool regularize_bias_;
  std::map<uint32_t, double> z_, n_;
};

FtrlProximalParams Params(double alpha, double beta, double l1, double l2,
                          bool regularize_bias = false) {
  return {alpha, beta, l1, l2, regularize_bias};
}

// Learns `xs` with both and compares p at every example and the weights at
// the end, bit for bit.
void ExpectPaperExactly(const FtrlProximalParams& params, int d,
                        const std::vector<Sparse>& xs,
                        const std::vector<int>& ys, bool dense) {
  FtrlProximal ftrl(d, params);
  PaperFtrl paper(params.alpha, params.beta, params.l1, params.l2,
                  params.regularize_bias);
  for (size_t t = 0; t < xs.size(); ++t) {
    std::vector<double> dense_x(d, 0.0);
    std::vector<uint32_t> indices;
    std::vector<double> values;
    for (const auto& [i, xi] : xs[t]) {
      dense_x[i] = xi;
      indices.push_back(i);
      values.push_back(xi);
    }
    Features x;
    if (dense) {
      x = Features(dense_x);
    } else {
      x.indices = indices;
      x.values = values;
    }
    const Update u = ftrl.Learn(x, ys[t] == 1 ? 1 : -1, 1.0);
    const double p = paper.Learn(xs[t], ys[t]);
    ASSERT_EQ(*u.probability, p) << "example " << t;
  }
  for (int i = 0; i < d; ++i) EXPECT_EQ(ftrl.weights().w[i], paper.W(i)) << i;
  EXPECT_EQ(ftrl.weights().b, paper.Bias());
}

// n examples of R^d with about `nonzeros` nonzeros each, and labels of a
// noisy hyperplane, in {0, 1}.
std::pair<std::vector<Sparse>, std::vector<int>> Stream(int n, int d,
                                                        int nonzeros,
                                                        int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> coordinate(0, d - 1);
  std::vector<Sparse> xs(n);
  std::vector<int> ys(n);
  for (int t = 0; t < n; ++t) {
    std::map<uint32_t, double> x;
    while (static_cast<int>(x.size()) < nonzeros) {
      x[coordinate(rng)] = normal(rng);
    }
    xs[t].assign(x.begin(), x.end());
    double score = 0.2;
    for (const auto& [i, xi] : x) score += (i % 3 == 0 ? 1.0 : -0.5) * xi;
    ys[t] = score + 0.3 * normal(rng) > 0 ? 1 : 0;
  }
  return {xs, ys};
}

TEST(FtrlProximalTest, MatchesThePapersAlgorithmBitForBitDense) {
  const auto [xs, ys] = Stream(400, 6, 6, 1);
  for (const FtrlProximalParams& p :
       {Params(0.1, 1, 0, 0), Params(0.5, 1, 1, 0.5), Params(0.05, 0, 0.2, 2),
        Params(2, 0.5, 3, 0, /*regularize_bias=*/true)}) {
    SCOPED_TRACE(p.alpha);
    ExpectPaperExactly(p, 6, xs, ys, /*dense=*/true);
  }
}

TEST(FtrlProximalTest, MatchesThePapersAlgorithmBitForBitSparse) {
  // 5 nonzeros of 1000: a sparse example costs its nonzeros, and the
  // untouched weights keep their values however large λ2 is.
  const auto [xs, ys] = Stream(600, 1000, 5, 2);
  for (const FtrlProximalParams& p :
       {Params(0.1, 1, 0, 0), Params(0.5, 1, 0.3, 1),
        Params(1, 1, 0.5, 0.5, /*regularize_bias=*/true)}) {
    SCOPED_TRACE(p.alpha);
    ExpectPaperExactly(p, 1000, xs, ys, /*dense=*/false);
  }
}

TEST(FtrlProximalTest, FirstStepByHandAndTheL1Boundary) {
  // f = 0, p = 1/2, g = -1/2; σ = (√(1/4) - 0)/α = 1; z = -1/2, n = 1/4;
  // w = (0 + 1/2)/((β + 1/2)/α) = 1/6 for x_1 and the bias; x_2 = 0 stays.
  FtrlProximal ftrl(2, Params(0.5, 1, 0, 0));
  const Update u = ftrl.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_EQ(u.score, 0.0);
  EXPECT_EQ(*u.probability, 0.5);
  EXPECT_DOUBLE_EQ(u.loss, std::log(2.0));
  EXPECT_TRUE(u.updated);
  EXPECT_DOUBLE_EQ(ftrl.weights().w[0], 1.0 / 6);
  EXPECT_EQ(ftrl.weights().w[1], 0.0);
  EXPECT_DOUBLE_EQ(ftrl.weights().b, 1.0 / 6);
  EXPECT_EQ(ftrl.ExportState(),
            (std::vector<double>{-0.5, 0, -0.5, 0.25, 0, 0.25}));

  // |z| = λ1 exactly is still zero; just past it is not. The bias is not
  // regularized by default, and is with regularize_bias.
  FtrlProximal at(2, Params(0.5, 1, 0.5, 0));
  at.Learn(std::vector<double>{1, 0}, +1, 1.0);
  EXPECT_EQ(at.weights().w[0], 0.0);
  EXPECT_DOUBLE_EQ(at.weights().b, 1.0 / 6);
  FtrlProximal below(2, Params(0.5, 1, 0.25, 1, /*regularize_bias=*/true));
  below.Learn(std::vector<double>{1, 0}, +1, 1.0);
  // (1/2 - 1/4)/(3 + 1) for both.
  EXPECT_DOUBLE_EQ(below.weights().w[0], 1.0 / 16);
  EXPECT_DOUBLE_EQ(below.weights().b, 1.0 / 16);
}

TEST(FtrlProximalTest, ImportanceWeightScalesTheGradientAndZeroLearnsNothing) {
  FtrlProximal once(1, Params(0.5, 1, 0, 0)), weighted(1, Params(0.5, 1, 0, 0));
  once.Learn(std::vector<double>{2}, -1, 1.0);
  EXPECT_FALSE(weighted.Learn(std::vector<double>{2}, -1, 0.0).updated);
  EXPECT_EQ(weighted.ExportState(), (std::vector<double>(4, 0.0)));
  // g = s·p·x: 2·(1/2)·1 here, 1·(1/2)·2 above.
  weighted.Learn(std::vector<double>{1}, -1, 2.0);
  EXPECT_EQ(weighted.weights().w[0], once.weights().w[0]);
}

TEST(FtrlProximalTest, WithoutInterceptTheBiasStaysZero) {
  FtrlProximal ftrl(2, Params(0.5, 1, 0, 0));
  ftrl.set_intercept_factor(0.0);
  for (int t = 0; t < 20; ++t) {
    ftrl.Learn(std::vector<double>{1.0 * t, 1}, t % 2 == 0 ? 1 : -1, 1.0);
  }
  EXPECT_EQ(ftrl.weights().b, 0.0);
  EXPECT_EQ(ftrl.ExportState()[2], 0.0);  // z_b
}

TEST(FtrlProximalTest, L1LeavesExactZerosCountedInTheStats) {
  ModelSpec spec = DenseSpec(Params(0.5, 1, 25, 0), 40);
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok()) << model.status();
  // Only x_0 and x_1 decide the label; the other 38 are noise.
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> xs(2000, std::vector<double>(40));
  std::vector<Example> batch;
  for (auto& x : xs) {
    for (double& v : x) v = normal(rng);
    batch.push_back({x, x[0] - x[1] > 0 ? 1 : -1, 1.0});
  }
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE((*model)->Learn(batch, absl::MakeSpan(out)).ok());
  const ModelSnapshot snapshot = (*model)->Snapshot();
  const int64_t nonzeros =
      std::count_if(snapshot.weights.w.begin(), snapshot.weights.w.end(),
                    [](double w) { return w != 0.0; });
  EXPECT_EQ((*model)->Stats().nonzero_weights, nonzeros);
  EXPECT_GT(snapshot.weights.w[0], 0.0);
  EXPECT_LT(snapshot.weights.w[1], 0.0);
  EXPECT_LT(nonzeros, 10);  // most of the noise is exactly 0
  EXPECT_GE(nonzeros, 2);

  // Without L1 every coordinate moves.
  std::get<FtrlProximalParams>(spec.algorithm).l1 = 0;
  model = Model::Create("m", spec);
  ASSERT_TRUE((*model)->Learn(batch, absl::MakeSpan(out)).ok());
  EXPECT_EQ((*model)->Stats().nonzero_weights, 40);
}

TEST(FtrlProximalTest, OneVsRestCountsTheNonzeroWeightsOfEveryClass) {
  ModelSpec spec = DenseSpec(Params(0.5, 1, 10, 0), 10);
  spec.one_vs_rest = true;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create("m", spec);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<std::vector<double>> xs = RandomPoints(1500, 10, 6);
  const char* names[] = {"a", "b", "c"};
  std::vector<Example> batch;
  for (const std::vector<double>& x : xs) {  // the largest of x_0, x_1, x_2
    const int k = x[0] > x[1] ? (x[0] > x[2] ? 0 : 2) : (x[1] > x[2] ? 1 : 2);
    batch.push_back({x, 0, 1.0, names[k]});
  }
  std::vector<ExampleOutcome> out(batch.size());
  ASSERT_TRUE((*model)->Learn(batch, absl::MakeSpan(out)).ok());
  const ModelSnapshot snapshot = (*model)->Snapshot();
  ASSERT_EQ(snapshot.class_weights.size(), 3u);
  int64_t nonzeros = 0;
  for (const LinearWeights& w : snapshot.class_weights) {
    nonzeros += std::count_if(w.w.begin(), w.w.end(),
                              [](double v) { return v != 0.0; });
  }
  EXPECT_EQ((*model)->Stats().nonzero_weights, nonzeros);
  EXPECT_GE(nonzeros, 3);
  EXPECT_LT(nonzeros, 30);
}

TEST(FtrlProximalTest, WeightsSetFromOutsideAreLearnedFrom) {
  const FtrlProximalParams p = Params(0.5, 1, 0.1, 0.2);
  FtrlProximal ftrl(2, p);
  ftrl.Learn(std::vector<double>{1, -1}, +1, 1.0);
  // Setting the weights it has changes nothing.
  const std::vector<double> state = ftrl.ExportState();
  ftrl.set_weights(ftrl.weights());
  EXPECT_EQ(ftrl.ExportState(), state);

  ftrl.set_weights(Weights({0.3, 0}, -0.2));
  EXPECT_EQ(ftrl.weights().w, (std::vector<double>{0.3, 0}));
  EXPECT_EQ(ftrl.weights().b, -0.2);
  // z_1 forms 0.3 again with n_1 kept: w = (sgn(z)·λ1 − z)/D.
  const std::vector<double> z = ftrl.ExportState();
  const double n1 = z[3], d1 = (1 + std::sqrt(n1)) / 0.5 + 0.2;
  EXPECT_NEAR((-0.1 - z[0]) / d1, 0.3, 1e-15);
  EXPECT_EQ(z[1], 0.0);
  // The next step starts from the weights set: the score is theirs.
  EXPECT_DOUBLE_EQ(ftrl.Learn(std::vector<double>{1, 1}, -1, 1.0).score, 0.1);
}

// Vowpal Wabbit's --ftrl update (ftrl.cc, inner_update_proximal), in its
// float arithmetic: the constant feature is regularized, the score clipped
// to [-50, 50], and the gradient is its logistic loss's derivative
// −y/(1 + e^(y·f)) = p − t.
class VwFtrl {
 public:
  VwFtrl(int d, float alpha, float beta, float l1, float l2)
      : alpha_(alpha), beta_(beta), l1_(l1), l2_(l2), w_(d + 1) {}

  void Learn(const std::vector<double>& x, int y) {
    float f = 0.f;
    for (size_t i = 0; i < w_.size(); ++i) f += w_[i].xt * X(x, i);
    f = std::clamp(f, -50.f, 50.f);
    const float update = -y / (1.f + std::exp(y * f));
    for (size_t i = 0; i < w_.size(); ++i) {
      Weight& w = w_[i];
      const float g = update * X(x, i);
      const float ng2 = w.g2 + g * g;
      const float sigma = (std::sqrt(ng2) - std::sqrt(w.g2)) / alpha_;
      w.zt += g - sigma * w.xt;
      w.g2 = ng2;
      const float flag = w.zt < 0 ? -1.f : 1.f;
      const float fabs_zt = w.zt * flag;
      w.xt = fabs_zt <= l1_ ? 0.f
                            : 1 / (l2_ + (beta_ + std::sqrt(ng2)) / alpha_) *
                                  flag * (l1_ - fabs_zt);
    }
  }
  float W(size_t i) const { return w_[i].xt; }

 private:
  struct Weight {
    float xt = 0.f, zt = 0.f, g2 = 0.f;
  };
  static float X(const std::vector<double>& x, size_t i) {
    return i < x.size() ? static_cast<float>(x[i]) : 1.f;  // the constant
  }
  const float alpha_, beta_, l1_, l2_;
  std::vector<Weight> w_;
};

TEST(FtrlProximalTest, AgreesWithVowpalWabbitsRuleToFloatPrecision) {
  constexpr int d = 5;
  const std::vector<std::vector<double>> xs = RandomPoints(500, d, 4);
  for (const FtrlProximalParams& p :
       {Params(0.1, 1, 0, 0, true), Params(0.5, 1, 0.5, 1, true)}) {
    FtrlProximal ftrl(d, p);
    VwFtrl vw(d, p.alpha, p.beta, p.l1, p.l2);
    for (const std::vector<double>& x : xs) {
      ftrl.Learn(x, Label(x), 1.0);
      vw.Learn(x, Label(x));
    }
    for (int i = 0; i <= d; ++i) {
      const double ours = i < d ? ftrl.weights().w[i] : ftrl.weights().b;
      EXPECT_NEAR(ours, vw.W(i), 1e-5 * std::max(1.0, std::fabs(ours))) << i;
    }
  }
}

}  // namespace
}  // namespace halfspace
