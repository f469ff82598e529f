// FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the
// Trenches", KDD 2013, Algorithm 1): logistic regression with a learning
// rate per coordinate and L1 and L2 regularization, whose L1 makes weights
// exactly zero. Each coordinate i keeps z_i and n_i (0 at the start); its
// weight is
//
//   w_i = 0                                        if |z_i| <= λ1
//       = (sgn(z_i)·λ1 − z_i) / ((β + √n_i)/α + λ2)  otherwise
//
// For example (x, y) with importance weight s and target t = (y + 1)/2:
//
//   f   = Σ_i w_i·x_i + b     (x's coordinates in order, then the bias)
//   p   = 1 / (1 + exp(−f))
//   g_i = s·(p − t)·x_i       for each i with x_i ≠ 0
//   σ_i = (√(n_i + g_i²) − √n_i) / α
//   z_i += g_i − σ_i·w_i,  n_i += g_i²,  then w_i as above
//
// The bias is a coordinate whose x is 1, unregularized by default (λ1 = λ2
// = 0 for it: an L1 would zero the intercept that every example shares and
// that sparsity gains nothing from); with `regularize_bias` it takes λ1 and
// λ2 as the weights do, as Vowpal Wabbit's constant feature does. Without
// an intercept it stays 0.
//
// The paper forms w_i lazily from (z_i, n_i) when x_i is seen; here w_i is
// kept and formed again after each change of z_i, which gives the same
// numbers and lets predictions read w directly: a sparse example costs its
// nonzeros. SetWeights puts in z_i the value that forms the given w_i
// (with n_i kept), so that learning goes on from the weights set.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_FTRL_PROXIMAL_H_
#define HALFSPACE_CORE_ALGORITHMS_FTRL_PROXIMAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

// FTRL-Proximal's parameters.
struct FtrlProximalParams {
  static constexpr absl::string_view kName = "ftrl_proximal";
  double alpha = 0.1;  // α, the per-coordinate learning rate's scale
  double beta = 1.0;   // β, its smoothing: the paper finds β = 1 good
  double l1 = 0.0;     // λ1
  double l2 = 0.0;     // λ2
  bool regularize_bias = false;

  static auto Parameters() {
    using P = FtrlProximalParams;
    return std::make_tuple(
        Param("alpha", ParameterKey::kFtrlAlpha, &P::alpha),
        Param("beta", ParameterKey::kFtrlBeta, &P::beta),
        Param("l1", ParameterKey::kFtrlL1, &P::l1),
        Param("l2", ParameterKey::kFtrlL2, &P::l2),
        Param("regularize_bias", ParameterKey::kRegularizeBias,
              &P::regularize_bias));
  }
  absl::Status Validate() const;
  // The weights, z and n.
  int64_t DoublesPerClass(int64_t width) const { return Vectors(3, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
  bool Probabilistic() const { return true; }
};

class FtrlProximal final : public OnlineClassifier {
 public:
  // REQUIRES: `params` valid.
  FtrlProximal(int64_t dimension, const FtrlProximalParams& params);

  Update Learn(Features x, int y, double s) override;
  // 1 / (1 + exp(−f)), as Learn computes p.
  std::optional<double> Probability(double score) const override;
  const LinearWeights& weights() const override { return weights_; }
  void set_weights(LinearWeights weights) override;
  // z_1 … z_d, z_b, n_1 … n_d, n_b.
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  // One coordinate's regularization: the weights' or the bias's.
  struct Regularization {
    double l1 = 0.0;
    double l2 = 0.0;
  };

  // w_i formed from z_i and √n_i.
  double Weight(double z, double root_n, Regularization r) const;
  // The z_i that forms w_i with n_i, keeping z_i where it already does.
  double DualOf(double w, double z, double n, Regularization r) const;
  // One coordinate's step on gradient g.
  void Step(double g, Regularization r, double& w, double& z, double& n) const;

  const double alpha_;
  const double beta_;
  const Regularization weight_regularization_;
  const Regularization bias_regularization_;
  LinearWeights weights_;
  std::vector<double> z_;
  std::vector<double> n_;
  double z_b_ = 0.0;
  double n_b_ = 0.0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_FTRL_PROXIMAL_H_
