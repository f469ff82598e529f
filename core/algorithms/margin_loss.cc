#include "core/algorithms/margin_loss.h"

#include <algorithm>
#include <cmath>

#include "core/algorithms/logistic_regression.h"

namespace halfspace {
namespace {

class Hinge final : public MarginLoss {
 public:
  explicit Hinge(double threshold) : threshold_(threshold) {}
  double Value(double z) const override {
    return z <= threshold_ ? threshold_ - z : 0.0;
  }
  double Derivative(double z) const override {
    return z <= threshold_ ? -1.0 : 0.0;
  }

 private:
  const double threshold_;
};

class SquaredHinge final : public MarginLoss {
 public:
  double Value(double z) const override {
    const double gap = 1.0 - z;
    return gap > 0.0 ? gap * gap : 0.0;
  }
  double Derivative(double z) const override {
    const double gap = 1.0 - z;
    return gap > 0.0 ? -2.0 * gap : 0.0;
  }
};

class ModifiedHuber final : public MarginLoss {
 public:
  double Value(double z) const override {
    if (z >= 1.0) return 0.0;
    if (z >= -1.0) return (1.0 - z) * (1.0 - z);
    return -4.0 * z;
  }
  double Derivative(double z) const override {
    if (z >= 1.0) return 0.0;
    if (z >= -1.0) return -2.0 * (1.0 - z);
    return -4.0;
  }
  std::optional<double> Probability(double score) const override {
    return (std::clamp(score, -1.0, 1.0) + 1.0) / 2.0;
  }
};

// scikit-learn's Log loss (sklearn/linear_model/_sgd_fast.pyx), formula for
// formula, so that SGD steps round as its steps do: beyond |z| = 18 its
// approximations, and -1 / (e^z + 1) where an exact sigmoid would round
// differently.
class Log final : public MarginLoss {
 public:
  static constexpr double kCutoff = 18.0;
  double Value(double z) const override {
    if (z > kCutoff) return std::exp(-z);
    if (z < -kCutoff) return -z;
    return std::log(1.0 + std::exp(-z));
  }
  double Derivative(double z) const override {
    if (z > kCutoff) return -std::exp(-z);
    if (z < -kCutoff) return -1.0;
    return -1.0 / (std::exp(z) + 1.0);
  }
  std::optional<double> Probability(double score) const override {
    return Sigmoid(score);
  }
};

class Exponential final : public MarginLoss {
 public:
  double Value(double z) const override { return std::exp(-z); }
  double Derivative(double z) const override { return -std::exp(-z); }
};

}  // namespace

std::unique_ptr<MarginLoss> MakeMarginLoss(LossKind kind) {
  switch (kind) {
    case LossKind::kHinge:
      return std::make_unique<Hinge>(1.0);
    case LossKind::kPerceptron:
      return std::make_unique<Hinge>(0.0);
    case LossKind::kSquaredHinge:
      return std::make_unique<SquaredHinge>();
    case LossKind::kModifiedHuber:
      return std::make_unique<ModifiedHuber>();
    case LossKind::kLog:
      return std::make_unique<Log>();
    case LossKind::kExponential:
      return std::make_unique<Exponential>();
  }
  return nullptr;
}

}  // namespace halfspace
