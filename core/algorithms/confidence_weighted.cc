#include "core/algorithms/confidence_weighted.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace halfspace {

ConfidenceWeighted::ConfidenceWeighted(int64_t dimension, CwVariant variant,
                                       double phi, double r, double c)
    : LinearClassifier(dimension),
      variant_(variant),
      phi_(phi),
      r_(r),
      c_(c),
      sigma_(dimension, 1.0) {}

ConfidenceWeighted::Step ConfidenceWeighted::Rule(double m, double v) const {
  Step step;
  const double phi2 = phi_ * phi_;
  switch (variant_) {
    case CwVariant::kCw: {
      if (v <= 0.0) break;
      const double b = 1.0 + 2.0 * phi_ * m;
      const double discriminant = b * b - 8.0 * phi_ * (m - phi_ * v);
      if (discriminant < 0.0) break;
      step.alpha =
          std::max(0.0, (-b + std::sqrt(discriminant)) / (4.0 * phi_ * v));
      step.precision = 2.0 * step.alpha * phi_;
      break;
    }
    case CwVariant::kArow:
      if (m >= 1.0) break;
      step.beta = 1.0 / (v + r_);
      step.alpha = (1.0 - m) * step.beta;
      break;
    case CwVariant::kScwI:
    case CwVariant::kScwII: {
      if (v <= 0.0 || phi_ * std::sqrt(v) - m <= 0.0) break;
      if (variant_ == CwVariant::kScwI) {
        const double psi = 1.0 + phi2 / 2.0, zeta = 1.0 + phi2;
        step.alpha = std::min(
            c_, std::max(0.0, (-m * psi + std::sqrt(m * m * phi2 * phi2 / 4.0 +
                                                    v * phi2 * zeta)) /
                                  (v * zeta)));
      } else {
        const double n = v + 1.0 / (2.0 * c_);
        const double gamma = phi_ * std::sqrt(phi2 * m * m * v * v +
                                              4.0 * n * v * (n + v * phi2));
        step.alpha = std::max(0.0, (gamma - (2.0 * m * n + phi2 * m * v)) /
                                       (2.0 * (n * n + n * v * phi2)));
      }
      const double avp = step.alpha * v * phi_;
      const double root = std::sqrt(avp * avp + 4.0 * v) - avp;
      const double u = root * root / 4.0;
      step.beta = step.alpha * phi_ / (std::sqrt(u) + avp);
      break;
    }
    case CwVariant::kNherd:
      if (m >= 1.0) break;
      step.alpha = (1.0 - m) / (v + 1.0 / c_);
      step.precision = 2.0 * c_ + c_ * c_ * v;
      break;
  }
  return step;
}

Update ConfidenceWeighted::Learn(Features x, int y, double s) {
  Update u = ScoreUpdate(weights_, x, y);
  const bool bias = intercept_factor_ != 0.0;
  double v = bias ? sigma_b_ : 0.0;
  x.ForEach([&](size_t j, double xj) { v += sigma_[j] * xj * xj; });
  const bool hinge =
      variant_ == CwVariant::kArow || variant_ == CwVariant::kNherd;
  u.loss =
      std::max(0.0, hinge ? 1.0 - u.margin : phi_ * std::sqrt(v) - u.margin);
  const Step step = Rule(u.margin, v);
  if (step.alpha <= 0.0 || s <= 0.0) return u;

  const double scale = s * step.alpha * y;
  // The mean moves with the variances before the update.
  auto update = [&](double& w, double& sigma, double xj) {
    w += scale * sigma * xj;
    if (step.precision > 0.0) {
      sigma = 1.0 / (1.0 / sigma + step.precision * xj * xj);
    } else {
      sigma -= step.beta * sigma * sigma * xj * xj;
    }
  };
  undo_->Save(weights_, x);
  undo_->Save(sigma_, x);
  undo_->Save(sigma_b_);
  x.ForEach([&](size_t j, double xj) { update(weights_.w[j], sigma_[j], xj); });
  if (bias) update(weights_.b, sigma_b_, 1.0);
  u.updated = true;
  return u;
}

std::vector<double> ConfidenceWeighted::ExportState() const {
  std::vector<double> state = sigma_;
  state.push_back(sigma_b_);
  return state;
}

absl::Status ConfidenceWeighted::ImportState(absl::Span<const double> state) {
  if (state.size() != sigma_.size() + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence-weighted state has ", state.size(),
                     " values; expected ", sigma_.size() + 1));
  }
  std::copy(state.begin(), state.end() - 1, sigma_.begin());
  sigma_b_ = state.back();
  return absl::OkStatus();
}

absl::Status ConfidenceWeightedParams::Validate() const {
  if (variant < CwVariant::kCw || variant > CwVariant::kNherd) {
    return absl::InvalidArgumentError(
        "confidence_weighted.variant is not one of halfspace's");
  }
  for (absl::Status s : {CheckRange("confidence_weighted.phi", phi, 0.0, true),
                         CheckRange("confidence_weighted.r", r, 0.0, true),
                         CheckRange("confidence_weighted.aggressiveness",
                                    aggressiveness, 0.0, true)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace halfspace
