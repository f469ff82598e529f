// The confidence-weighted family: a Gaussian N(μ, Σ) over weight vectors,
// with Σ diagonal — a variance σ_j per weight and σ_b for the bias, all 1
// at the start — predicting with the mean (w = μ). For an example (x, y)
// with margin m = y·(w·x + b) and margin variance v = Σ_j σ_j·x_j² + σ_b:
//
//   CW     (Dredze, Crammer & Pereira 2008; variance update, φ):
//          α = (−(1 + 2φm) + √((1 + 2φm)² − 8φ(m − φv))) / (4φv) if > 0;
//          1/σ_j += 2αφ·x_j²
//   AROW   (Crammer, Kulesza & Dredze 2009; r): if m < 1,
//          β = 1/(v + r), α = (1 − m)·β; σ_j −= β·σ_j²·x_j²
//   SCW-I  (Wang, Zhao & Hoi 2012; φ, C), ψ = 1 + φ²/2, ζ = 1 + φ²: if
//          φ√v > m, α = min(C, max(0, (−mψ + √(m²φ⁴/4 + vφ²ζ)) / (vζ)));
//   SCW-II n = v + 1/(2C), γ = φ√(φ²m²v² + 4nv(n + vφ²)),
//          α = max(0, (γ − (2mn + φ²mv)) / (2(n² + nvφ²)));
//          both: u = ¼(√(α²v²φ² + 4v) − αvφ)², β = αφ/(√u + vαφ),
//          σ_j −= β·σ_j²·x_j²
//   NHERD  (Crammer & Lee 2010; diagonal, C): if m < 1,
//          α = (1 − m)/(v + 1/C); 1/σ_j += (2C + C²v)·x_j²
//
// and every variant moves the mean by w_j += s·α·y·σ_j·x_j, b += s·α·y·σ_b
// with the variances before the update (s: importance weight; s = 0 learns
// nothing). Only x's coordinates change: O(nonzeros) per example. Without
// intercept the bias and σ_b take no part.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_CONFIDENCE_WEIGHTED_H_
#define HALFSPACE_CORE_ALGORITHMS_CONFIDENCE_WEIGHTED_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

enum class CwVariant { kCw = 1, kArow = 2, kScwI = 3, kScwII = 4, kNherd = 5 };

class ConfidenceWeighted final : public LinearClassifier {
 public:
  // REQUIRES: dimension >= 1; phi, r and c > 0.
  ConfidenceWeighted(int64_t dimension, CwVariant variant, double phi, double r,
                     double c);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }
  // The variances: σ_j for each weight, then σ_b.
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  // The step α for margin m and variance v, and what the variances do:
  // shrink by β (σ ← σ − β·σ²·x²) or gain precision (1/σ ← 1/σ + ρ·x²).
  struct Step {
    double alpha = 0.0;
    double beta = 0.0;
    double precision = 0.0;
  };
  Step Rule(double m, double v) const;

  const CwVariant variant_;
  const double phi_;           // φ
  const double r_;             // AROW's r
  const double c_;             // C
  std::vector<double> sigma_;  // σ_j
  double sigma_b_ = 1.0;
};

// The confidence-weighted family's parameters.
struct ConfidenceWeightedParams {
  static constexpr absl::string_view kName = "confidence_weighted";
  CwVariant variant = CwVariant::kArow;
  double phi = 1.0;             // φ, CW and SCW
  double r = 1.0;               // AROW
  double aggressiveness = 1.0;  // C, SCW and NHERD

  static auto Parameters() {
    using P = ConfidenceWeightedParams;
    return std::make_tuple(
        Param("variant", ParameterKey::kCwVariant, &P::variant),
        Param("phi", ParameterKey::kPhi, &P::phi),
        Param("r", ParameterKey::kR, &P::r),
        Param("aggressiveness", ParameterKey::kAggressiveness,
              &P::aggressiveness));
  }
  absl::Status Validate() const;
  // The means and the diagonal covariance.
  int64_t DoublesPerClass(int64_t width) const { return Vectors(2, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const {
    return std::make_unique<ConfidenceWeighted>(width, variant, phi, r,
                                                aggressiveness);
  }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_CONFIDENCE_WEIGHTED_H_
