// The Learner of multiclass models: classes named by strings, indexed in the
// order they arrive (at creation or mid-stream), and one
// MulticlassClassifier that keeps a weight row or a binary model per class.
// See learner.h.

#ifndef HALFSPACE_CORE_MODEL_MULTICLASS_LEARNER_H_
#define HALFSPACE_CORE_MODEL_MULTICLASS_LEARNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/model/learner.h"

namespace halfspace {

class MulticlassLearner final : public Learner {
 public:
  // `width`: the length of each class's weight vector, which bounds how many
  // classes fit (kMaxClasses, kMaxMulticlassWeights).
  MulticlassLearner(std::unique_ptr<MulticlassClassifier> classifier,
                    int64_t width)
      : classifier_(std::move(classifier)), width_(width) {}

  absl::StatusOr<int> Target(const PreparedExample& example) override {
    return ClassIndex(example.class_label);
  }
  void Learn(Features x, int y, double s, ExampleOutcome& outcome) override;
  void EndBatch() override { classifier_->EndBatch(); }
  void set_undo_log(UndoLog* log) override { classifier_->set_undo_log(log); }
  absl::Status Predict(absl::Span<const Features> xs,
                       absl::Span<Prediction> out) const override;
  void Evaluate(Features x, const PreparedExample& example,
                std::optional<double> threshold,
                Evaluation& evaluation) const override;
  bool HasClass(absl::string_view label) const override {
    return class_index_.contains(label);
  }
  const std::vector<std::string>& classes() const override { return classes_; }
  absl::Status AddClass(absl::string_view label) override;
  void RemoveLastClass() override;
  absl::Status CheckSetWeights(absl::string_view label) const override;
  absl::Status SetWeights(absl::string_view label,
                          LinearWeights weights) override;
  double WeightNorm() const override;
  int64_t NonzeroWeights() const override;
  double Bias() const override { return 0.0; }
  void CopyWeights(ModelSnapshot& out, int64_t offset,
                   int64_t count) const override;
  std::vector<double> ExportState() const override {
    return classifier_->ExportState();
  }
  absl::Status ImportState(absl::Span<const double> state) override {
    return classifier_->ImportState(state);
  }

 private:
  // The index of class `label`, added if new.
  absl::StatusOr<int> ClassIndex(absl::string_view label);
  // OK if class `label` can be added: a valid label within the limits.
  absl::Status CheckNewClass(absl::string_view label) const;

  const std::unique_ptr<MulticlassClassifier> classifier_;
  const int64_t width_;
  std::vector<std::string> classes_;  // append-only: indices never change
  absl::flat_hash_map<std::string, int> class_index_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_MULTICLASS_LEARNER_H_
