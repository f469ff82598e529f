// One-vs-rest over any binary algorithm: one binary classifier per class,
// trained on every example with y' = +1 for its class and -1 for the others,
// as scikit-learn's SGDClassifier and Perceptron do for several classes.
//
//   scores:         s_k = the score of binary model k
//   prediction:     argmax_k s_k, the first among ties
//   probabilities:  if the binary models give P_k(+1 | x), their normalized
//                   values P_k / Σ_j P_j (uniform if all are 0), as
//                   scikit-learn's predict_proba
//   loss:           the sum of the binary losses
//
// A class added mid-stream gets a fresh binary model that has seen none of
// the earlier examples as negatives; declare the classes up front to train
// exactly as scikit-learn does. Not thread-safe.

#ifndef HALFSPACE_CORE_ALGORITHMS_ONE_VS_REST_H_
#define HALFSPACE_CORE_ALGORITHMS_ONE_VS_REST_H_

#include <functional>
#include <memory>
#include <vector>

#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/online_classifier.h"

namespace halfspace {

class OneVsRest final : public MulticlassClassifier {
 public:
  using BinaryFactory = std::function<std::unique_ptr<OnlineClassifier>()>;

  // `make_binary` builds a fresh binary classifier for each class.
  explicit OneVsRest(BinaryFactory make_binary)
      : make_binary_(std::move(make_binary)) {}

  int num_classes() const override {
    return static_cast<int>(binaries_.size());
  }
  void AddClass() override {
    binaries_.push_back(make_binary_());
    binaries_.back()->set_undo_log(undo_);
  }
  void RemoveLastClass() override { binaries_.pop_back(); }
  void set_undo_log(UndoLog* log) override {
    undo_ = log;
    for (auto& binary : binaries_) binary->set_undo_log(log);
  }
  MulticlassUpdate Learn(Features x, int y, double s,
                         std::vector<double>& scores,
                         std::vector<double>& probabilities) override;
  void Predict(Features x, std::vector<double>& scores,
               std::vector<double>& probabilities) const override;
  void EndBatch() override;
  const LinearWeights& weights(int k) const override {
    return binaries_[k]->weights();
  }
  void set_weights(int k, LinearWeights weights) override {
    binaries_[k]->set_weights(std::move(weights));
  }
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  // Turns per-class P_k(+1 | x) in `probabilities` into a distribution.
  static void Normalize(std::vector<double>& probabilities);

  BinaryFactory make_binary_;
  std::vector<std::unique_ptr<OnlineClassifier>> binaries_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_ONE_VS_REST_H_
