// The multiclass perceptron (Collins 2002; Crammer & Singer 2003): one weight
// row per class; on a mistake it raises the true class and lowers the
// highest-scoring wrong one.
//
//   scores:   s_k = w_k·x + b_k
//   rival:    r = argmax_{k≠y} s_k          (first among ties)
//   mistake:  s_y - s_r <= 0                (ties are mistakes, as the binary
//                                            rule's margin 0, so the first
//                                            example with two classes updates)
//   update:   w_y += η·s·x, b_y += η·s;  w_r -= η·s·x, b_r -= η·s
//   loss:     max(0, s_r - s_y)
//
// With a single class there is no rival and nothing to learn. Predicts the
// class with the highest score, the first among ties. Not thread-safe.

#ifndef HALFSPACE_CORE_ALGORITHMS_MULTICLASS_PERCEPTRON_H_
#define HALFSPACE_CORE_ALGORITHMS_MULTICLASS_PERCEPTRON_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class MulticlassPerceptron final : public MulticlassLinearClassifier {
 public:
  // REQUIRES: dimension >= 1, learning_rate > 0.
  MulticlassPerceptron(int64_t dimension, double learning_rate);

  MulticlassUpdate Learn(Features x, int y, double s,
                         std::vector<double>& scores,
                         std::vector<double>& probabilities) override;
  void Predict(Features x, std::vector<double>& scores,
               std::vector<double>& probabilities) const override;

 private:
  const double learning_rate_;
};

// The multiclass perceptron's parameters.
struct MulticlassPerceptronParams {
  static constexpr absl::string_view kName = "multiclass_perceptron";
  double learning_rate = 1.0;

  static auto Parameters() {
    return std::make_tuple(Param("learning_rate", ParameterKey::kLearningRate,
                                 &MulticlassPerceptronParams::learning_rate));
  }
  absl::Status Validate() const {
    return CheckLearningRate(kName, learning_rate);
  }
  int64_t DoublesPerClass(int64_t width) const { return Vectors(1, width); }
  std::unique_ptr<MulticlassClassifier> MakeClassifier(int64_t width) const {
    return std::make_unique<MulticlassPerceptron>(width, learning_rate);
  }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_MULTICLASS_PERCEPTRON_H_
