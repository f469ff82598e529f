// SGD on a surrogate loss of the margin with AdaGrad's per-coordinate steps
// (Duchi, Hazan & Singer 2011) and an optional L2 penalty: scikit-learn has no
// twin, so the rule is the paper's. For example (x, y) with importance
// weight s, z = y·(w·x + b):
//
//   g_j     = s·y·ℓ'(z)·x_j + λ·w_j       (ℓ' clipped to ±1e12; λ = α with
//                                          the L2 penalty, else 0)
//   G_j     += g_j²
//   w_j     ← w_j - η0·g_j / (√G_j + 1e-8)
//   bias    likewise with g_b = s·y·ℓ'(z), unregularized
//
// Without L2 only x's nonzeros have a gradient: O(nonzeros) per example;
// with L2, O(width). No L1 and no averaging (ValidateModelSpec refuses both).
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_ADAGRAD_CLASSIFIER_H_
#define HALFSPACE_CORE_ALGORITHMS_ADAGRAD_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/algorithms/margin_loss.h"
#include "core/algorithms/online_classifier.h"

namespace halfspace {

class AdaGradClassifier final : public LinearClassifier {
 public:
  // η0 = learning_rate > 0; λ = l2 >= 0.
  AdaGradClassifier(int64_t dimension, double learning_rate, LossKind loss,
                    double l2);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double score) const override {
    return loss_->Probability(score);
  }
  // Laid out as SgdClassifier's state was for AdaGrad, so that stored
  // models read back: t, 0, Σg_b², 1, w, b, G.
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  const double eta0_;
  const double l2_;
  const std::unique_ptr<MarginLoss> loss_;
  double t_ = 1.0;                         // the index of the next example
  std::vector<double> squared_gradients_;  // G_j = Σg_j²
  double squared_bias_gradients_ = 0.0;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_ADAGRAD_CLASSIFIER_H_
