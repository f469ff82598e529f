// Surrogate losses of the margin z = y·f(x), y ∈ {-1, +1}, for SGD.
//
//   hinge(τ)         ℓ(z) = max(0, τ - z)         ℓ'(z) = -1 if z <= τ, else 0
//   perceptron       hinge with τ = 0: max(0, -z)
//   squared hinge    ℓ(z) = max(0, 1 - z)²        ℓ'(z) = -2·max(0, 1 - z)
//   modified Huber   ℓ(z) = max(0, 1 - z)² for z >= -1, else -4z
//                    ℓ'(z) = -2·max(0, 1 - z) for z >= -1, else -4
//   log              ℓ(z) = log(1 + e^(-z))       ℓ'(z) = -1 / (e^z + 1)
//                    for |z| <= 18; beyond, as scikit-learn: ℓ(z) = e^(-z)
//                    and ℓ'(z) = -e^(-z) above 18, ℓ(z) = -z and ℓ'(z) = -1
//                    below -18 (what the exact forms round to, nearly)
//   exponential      ℓ(z) = e^(-z)                ℓ'(z) = -e^(-z)
//
// As in scikit-learn's SGDClassifier, the hinge's derivative is taken as -1
// at the kink z = τ, so a margin exactly at the threshold still updates. The
// gradient with respect to the score is y·ℓ'(z). Stateless and thread-safe.

#ifndef HALFSPACE_CORE_ALGORITHMS_MARGIN_LOSS_H_
#define HALFSPACE_CORE_ALGORITHMS_MARGIN_LOSS_H_

#include <memory>
#include <optional>

namespace halfspace {

enum class LossKind {
  kHinge = 1,
  kSquaredHinge = 2,
  kModifiedHuber = 3,
  kLog = 4,
  kExponential = 5,
  kPerceptron = 6,
};

class MarginLoss {
 public:
  virtual ~MarginLoss() = default;

  // ℓ(z).
  virtual double Value(double z) const = 0;

  // ℓ'(z).
  virtual double Derivative(double z) const = 0;

  // P(y = +1 | x) from the score f(x), for losses that define one (log:
  // σ(f); modified Huber: (clip(f, -1, 1) + 1) / 2, as scikit-learn).
  virtual std::optional<double> Probability(double) const {
    return std::nullopt;
  }
};

std::unique_ptr<MarginLoss> MakeMarginLoss(LossKind kind);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_MARGIN_LOSS_H_
