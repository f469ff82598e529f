#include "core/algorithms/ftrl_proximal.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/algorithms/logistic_regression.h"

namespace halfspace {

FtrlProximal::FtrlProximal(int64_t dimension, const FtrlProximalParams& params)
    : alpha_(params.alpha),
      beta_(params.beta),
      weight_regularization_{params.l1, params.l2},
      bias_regularization_{params.regularize_bias ? params.l1 : 0.0,
                           params.regularize_bias ? params.l2 : 0.0},
      weights_(dimension),
      z_(dimension, 0.0),
      n_(dimension, 0.0) {}

double FtrlProximal::Weight(double z, double root_n, Regularization r) const {
  if (std::fabs(z) <= r.l1) return 0.0;
  const double sign = z < 0.0 ? -1.0 : 1.0;
  return (sign * r.l1 - z) / ((beta_ + root_n) / alpha_ + r.l2);
}

double FtrlProximal::DualOf(double w, double z, double n,
                            Regularization r) const {
  if (Weight(z, std::sqrt(n), r) == w) return z;
  if (w == 0.0) return 0.0;
  // w = (sgn(z)·λ1 − z)/D with sgn(z) = −sgn(w): z = −(w·D + sgn(w)·λ1).
  const double sign = w < 0.0 ? -1.0 : 1.0;
  return -(w * ((beta_ + std::sqrt(n)) / alpha_ + r.l2) + sign * r.l1);
}

void FtrlProximal::Step(double g, Regularization r, double& w, double& z,
                        double& n) const {
  const double root_n = std::sqrt(n + g * g);
  const double sigma = (root_n - std::sqrt(n)) / alpha_;
  z += g - sigma * w;
  n += g * g;
  w = Weight(z, root_n, r);
}

std::optional<double> FtrlProximal::Probability(double score) const {
  return 1.0 / (1.0 + std::exp(-score));
}

Update FtrlProximal::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  u.loss = LogLoss(u.margin);
  const double p = *Probability(u.score);
  u.probability = p;
  const double t = y > 0 ? 1.0 : 0.0;
  const double gradient = s * (p - t);
  if (gradient == 0.0) return u;  // p = t exactly, or s = 0
  undo_->Save(weights_, x);
  undo_->Save(z_, x);
  undo_->Save(n_, x);
  std::vector<double>& w = weights_.w;
  x.ForEach([&](size_t i, double xi) {
    if (xi != 0.0)
      Step(gradient * xi, weight_regularization_, w[i], z_[i], n_[i]);
  });
  if (intercept_factor_ != 0.0) {
    undo_->Save(z_b_);
    undo_->Save(n_b_);
    Step(gradient, bias_regularization_, weights_.b, z_b_, n_b_);
  }
  u.updated = true;
  return u;
}

void FtrlProximal::set_weights(LinearWeights weights) {
  weights_ = std::move(weights);
  for (size_t i = 0; i < z_.size(); ++i) {
    z_[i] = DualOf(weights_.w[i], z_[i], n_[i], weight_regularization_);
  }
  z_b_ = DualOf(weights_.b, z_b_, n_b_, bias_regularization_);
}

std::vector<double> FtrlProximal::ExportState() const {
  std::vector<double> state;
  state.reserve(2 * (z_.size() + 1));
  state.insert(state.end(), z_.begin(), z_.end());
  state.push_back(z_b_);
  state.insert(state.end(), n_.begin(), n_.end());
  state.push_back(n_b_);
  return state;
}

absl::Status FtrlProximal::ImportState(absl::Span<const double> state) {
  const size_t d = z_.size();
  if (state.size() != 2 * (d + 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("FTRL-Proximal state has ", state.size(),
                     " values; expected ", 2 * (d + 1)));
  }
  for (size_t i = 0; i < state.size(); ++i) {
    if (!std::isfinite(state[i]) || (i > d && state[i] < 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("FTRL-Proximal state value ", i, " is ", state[i],
                       "; z must be finite and n finite and at least 0"));
    }
  }
  std::copy(state.begin(), state.begin() + d, z_.begin());
  z_b_ = state[d];
  std::copy(state.begin() + d + 1, state.begin() + 2 * d + 1, n_.begin());
  n_b_ = state[2 * d + 1];
  return absl::OkStatus();
}

absl::Status FtrlProximalParams::Validate() const {
  for (absl::Status s : {CheckRange("ftrl_proximal.alpha", alpha, 0.0, true),
                         CheckRange("ftrl_proximal.beta", beta, 0.0, false),
                         CheckRange("ftrl_proximal.l1", l1, 0.0, false),
                         CheckRange("ftrl_proximal.l2", l2, 0.0, false)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::unique_ptr<OnlineClassifier> FtrlProximalParams::MakeClassifier(
    int64_t width) const {
  return std::make_unique<FtrlProximal>(width, *this);
}

}  // namespace halfspace
