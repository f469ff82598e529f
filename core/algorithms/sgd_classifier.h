// Stochastic gradient descent on a surrogate loss of the margin, with L2, L1
// or elastic-net regularization, a learning-rate schedule and optional
// averaging (ASGD), following scikit-learn's SGDClassifier step for step.
//
// For example t = 1, 2, … with importance weight s, z = y·(w·x + b):
//
//   η_t     constant:         η0
//           optimal:          1 / (α·(t0 + t - 1)), t0 as scikit-learn's
//                             "optimal" (η at t = 1 is √(1/√α))
//           inverse scaling:  η0 / t^power_t
//   g       = -η_t · s · y · ℓ'(z)              (ℓ' clipped to ±1e12)
//   L2      w ← max(0, 1 - (1 - ρ)·η_t·α) · w   (ρ: the L1 share; 0 for L2,
//                                                1 for L1, l1_ratio for EN)
//   step    w ← w + g·x,  b ← b + g             (the bias is not regularized)
//   average w̄ ← w̄ + (w - w̄)/(t - t_avg + 1) for t >= t_avg, likewise b̄
//   L1      cumulative truncated gradient (Tsuruoka et al., 2009): u +=
//   ρ·η_t·α;
//           each w_j moves toward 0 by what it has not yet been charged,
//           never past it
//
// The ADAGRAD schedule is AdaGradClassifier's (adagrad_classifier.h).
//
// Cost per example is O(nonzeros of x), as in scikit-learn, so hashed
// models with millions of buckets stay fast: w is kept as wscale·v, so the
// L2 shrink only scales wscale (v is folded in when wscale falls below
// 1e-9); the average as (aw + a·v)/b (Bottou's trick); and L1 charges only
// the coordinates x stores (for a dense x, all of them). The exception is
// forming the prediction weights, O(d) once per batch (EndBatch).
//
// Predictions use w̄ once averaging has begun, w before. The reported score,
// margin and loss are those of w, the weights that learn.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_SGD_CLASSIFIER_H_
#define HALFSPACE_CORE_ALGORITHMS_SGD_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/asgd_average.h"
#include "core/algorithms/lazy.h"
#include "core/algorithms/margin_loss.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

enum class Penalty { kNone = 1, kL2 = 2, kL1 = 3, kElasticNet = 4 };

enum class Schedule {
  kConstant = 1,
  kOptimal = 2,
  kInverseScaling = 3,
  kAdaGrad = 4,
};

struct SgdOptions {
  LossKind loss = LossKind::kHinge;
  Penalty penalty = Penalty::kL2;
  double alpha = 1e-4;     // α, the regularization strength
  double l1_ratio = 0.15;  // ρ for the elastic net
  Schedule schedule = Schedule::kOptimal;
  double power_t = 0.5;          // inverse scaling's exponent
  uint64_t average_from = 0;     // t_avg; 0 means no averaging
  double intercept_decay = 1.0;  // the bias's step factor
};

class SgdClassifier final : public OnlineClassifier {
 public:
  // η0 = learning_rate.  REQUIRES: dimension >= 1, the options valid (see
  // ValidateModelSpec) and a schedule other than kAdaGrad.
  SgdClassifier(int64_t dimension, double learning_rate,
                const SgdOptions& options);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double score) const override {
    return loss_->Probability(score);
  }
  void EndBatch() override { prediction_.MarkStale(); }
  const LinearWeights& weights() const override;
  void set_weights(LinearWeights weights) override;
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  double LearningRate() const;
  double L1Share() const;
  bool Averaging() const { return options_.average_from > 0; }
  // w ← c·w, lazily.
  void Scale(double c);
  // Folds wscale into v (and the average's a and b into aw).
  void ResetScale();
  void ApplyL1(const Features& x, double eta);

  const double eta0_;
  const SgdOptions options_;
  const std::unique_ptr<MarginLoss> loss_;
  double optimal_t0_ = 0.0;

  // The weights that learn: w = wscale_·v_.w, bias v_.b.
  LinearWeights v_;
  double wscale_ = 1.0;
  std::optional<AsgdAverage> average_;  // when averaging
  Lazy<LinearWeights> prediction_;      // w or w̄, computed when read
  double t_ = 1.0;                      // the index of the next example
  double u_ = 0.0;         // L1: the total penalty per weight so far
  std::vector<double> q_;  // L1: the penalty each weight has been charged
};

// SGD's parameters: η0 and the options. The ADAGRAD schedule makes an
// AdaGradClassifier (adagrad_classifier.h), the others an SgdClassifier.
struct SgdParams {
  static constexpr absl::string_view kName = "sgd";
  double learning_rate = 1.0;  // η0
  SgdOptions options;

  static auto Parameters() {
    using K = ParameterKey;
    return std::make_tuple(
        Param("learning_rate", K::kLearningRate, &SgdParams::learning_rate),
        Param(
            "loss", K::kLoss, [](auto& p) -> auto& { return p.options.loss; }),
        Param(
            "penalty", K::kPenalty,
            [](auto& p) -> auto& { return p.options.penalty; }),
        Param(
            "alpha", K::kAlpha,
            [](auto& p) -> auto& { return p.options.alpha; }),
        Param(
            "l1_ratio", K::kL1Ratio,
            [](auto& p) -> auto& { return p.options.l1_ratio; }),
        Param(
            "schedule", K::kSchedule,
            [](auto& p) -> auto& { return p.options.schedule; }),
        Param(
            "power_t", K::kPowerT,
            [](auto& p) -> auto& { return p.options.power_t; }),
        Param(
            "average_from", K::kAverageFrom,
            [](auto& p) -> auto& { return p.options.average_from; }),
        Param(
            "intercept_decay", K::kInterceptDecay,
            [](auto& p) -> auto& { return p.options.intercept_decay; }));
  }
  absl::Status Validate() const;
  // The weights and AdaGrad's squared gradients; else the weights and the
  // L1 penalty's running totals or the averaging state (see the members).
  int64_t DoublesPerClass(int64_t width) const;
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
  // The log and modified Huber losses give probabilities.
  bool Probabilistic() const {
    return options.loss == LossKind::kLog ||
           options.loss == LossKind::kModifiedHuber;
  }
  double InterceptDecay() const { return options.intercept_decay; }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_SGD_CLASSIFIER_H_
