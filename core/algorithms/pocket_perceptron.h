// The pocket perceptron with ratchet (Gallant, 1990), for data that no
// halfspace separates: it learns as the perceptron does, and keeps "in its
// pocket" the weights that went longest without a mistake.
//
//   learning:  as the perceptron: on y·(w·x + b) <= 0, w += η·s·y·x,
//              b += η·s·y, and the run of w starts again at 0 (examples of
//              importance weight 0 count as none)
//   run:       each example w classifies correctly (y·f(x) > 0) adds 1
//   pocket:    when the run of w exceeds the pocket's, w goes into the pocket
//   ratchet:   online, the pocket is replaced only by weights that did better
//              on the same examples: over w's current run the pocket must
//              have made at least one mistake. So the pocket never trades
//              itself for weights it classifies as well as.
//
// Predictions use the pocket (`predict_with_pocket`, the default) or w. The
// stream reports the score, margin and loss of w.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_POCKET_PERCEPTRON_H_
#define HALFSPACE_CORE_ALGORITHMS_POCKET_PERCEPTRON_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class PocketPerceptron final : public OnlineClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0.
  PocketPerceptron(int64_t dimension, double learning_rate, bool ratchet,
                   bool predict_with_pocket);

  Update Learn(Features x, int y, double s) override;
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }
  const LinearWeights& weights() const override {
    return predict_with_pocket_ ? pocket_ : w_;
  }
  void set_weights(LinearWeights weights) override;
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  const double learning_rate_;
  const bool ratchet_;
  const bool predict_with_pocket_;
  LinearWeights w_;       // the weights that learn
  LinearWeights pocket_;  // the weights with the longest run so far
  double run_ = 0;        // w's run of correct classifications
  double pocket_run_ = 0;
  double pocket_mistakes_in_run_ = 0;  // the pocket's, over w's current run
  bool pocket_is_w_ = true;  // whether w is unchanged since it was pocketed
};

// The pocket perceptron's parameters.
struct PocketPerceptronParams {
  static constexpr absl::string_view kName = "pocket_perceptron";
  double learning_rate = 1.0;
  bool ratchet = true;
  bool predict_with_pocket = true;

  static auto Parameters() {
    using P = PocketPerceptronParams;
    return std::make_tuple(
        Param("learning_rate", ParameterKey::kLearningRate, &P::learning_rate),
        Param("ratchet", ParameterKey::kRatchet, &P::ratchet),
        Param("predict_with_pocket", ParameterKey::kPredictWithPocket,
              &P::predict_with_pocket));
  }
  absl::Status Validate() const {
    return CheckLearningRate(kName, learning_rate);
  }
  // The running weights and the pocket.
  int64_t DoublesPerClass(int64_t width) const { return Vectors(2, width); }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_POCKET_PERCEPTRON_H_
