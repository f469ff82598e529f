// The averaged perceptron (Freund & Schapire, 1999): it learns exactly as the
// perceptron does, and predicts with the average of the weight vectors it
// held after each example,
//
//   w̄_n = (1/n) Σ_{k=1..n} w_k,   likewise b̄_n,
//
// which generalizes far better than the last w on data that is not
// separable. With a margin threshold τ it averages the margin perceptron,
// which updates when y·f(x) <= τ. This is scikit-learn's
// SGDClassifier(loss="perceptron", learning_rate="constant", eta0=η,
// penalty=None, average=True).
//
// Cost: O(nonzeros of x) per update, by the accumulator trick (Daumé, 2006):
// an update δ at example k adds δ to w and (k - 1)·δ to u, so that after n
// examples w̄_n = w - u/n, formed in O(d) only when read after learning.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_AVERAGED_PERCEPTRON_H_
#define HALFSPACE_CORE_ALGORITHMS_AVERAGED_PERCEPTRON_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/lazy.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class AveragedPerceptron final : public OnlineClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0, margin_threshold >= 0.
  AveragedPerceptron(int64_t dimension, double learning_rate,
                     double margin_threshold = 0.0);

  Update Learn(Features x, int y, double s) override;
  void EndBatch() override { average_.MarkStale(); }
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }
  const LinearWeights& weights() const override;
  void set_weights(LinearWeights weights) override;
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  double learning_rate_;
  double margin_threshold_;      // τ: updates when y·f(x) <= τ
  LinearWeights w_;              // the weights that learn
  LinearWeights u_;              // Σ (k - 1)·δ_k over updates
  Lazy<LinearWeights> average_;  // w̄, computed when read
  double examples_ = 0.0;        // n
};

// The averaged perceptron's parameters.
struct AveragedPerceptronParams {
  static constexpr absl::string_view kName = "averaged_perceptron";
  double learning_rate = 1.0;
  double margin_threshold = 0.0;  // τ

  static auto Parameters() {
    using P = AveragedPerceptronParams;
    return std::make_tuple(
        Param("learning_rate", ParameterKey::kLearningRate, &P::learning_rate),
        Param("margin_threshold", ParameterKey::kMarginThreshold,
              &P::margin_threshold));
  }
  absl::Status Validate() const;
  // The weights, the running sum u and the averaged weights (see the
  // members).
  int64_t DoublesPerClass(int64_t width) const { return Vectors(3, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_AVERAGED_PERCEPTRON_H_
