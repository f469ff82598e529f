// The Learner of binary models: labels -1 and +1, one OnlineClassifier that
// learns and predicts. See learner.h.

#ifndef HALFSPACE_CORE_MODEL_BINARY_LEARNER_H_
#define HALFSPACE_CORE_MODEL_BINARY_LEARNER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/algorithms/lazy.h"
#include "core/algorithms/online_classifier.h"
#include "core/model/learner.h"

namespace halfspace {

class BinaryLearner final : public Learner {
 public:
  explicit BinaryLearner(std::unique_ptr<OnlineClassifier> classifier)
      : classifier_(std::move(classifier)) {}

  absl::StatusOr<int> Target(const PreparedExample& example) override {
    return example.label;  // checked by Model::Prepare
  }
  void Learn(Features x, int y, double s, ExampleOutcome& outcome) override;
  void EndBatch() override {
    classifier_->EndBatch();
    summary_.MarkStale();
  }
  void set_undo_log(UndoLog* log) override { classifier_->set_undo_log(log); }
  absl::Status Predict(absl::Span<const Features> xs,
                       absl::Span<Prediction> out) const override;
  void StartEvaluation(Evaluation& evaluation) const override;
  void Evaluate(Features x, const PreparedExample& example,
                std::optional<double> threshold,
                Evaluation& evaluation) const override;
  bool HasClass(absl::string_view) const override { return true; }
  const std::vector<std::string>& classes() const override {
    static const std::vector<std::string>* const kNone =
        new std::vector<std::string>();
    return *kNone;
  }
  absl::Status AddClass(absl::string_view label) override;
  void RemoveLastClass() override {}
  absl::Status CheckSetWeights(absl::string_view label) const override;
  absl::Status SetWeights(absl::string_view label,
                          LinearWeights weights) override;
  double WeightNorm() const override { return Summary().norm; }
  int64_t NonzeroWeights() const override { return Summary().nonzeros; }
  double Bias() const override { return classifier_->weights().b; }
  void CopyWeights(ModelSnapshot& out, int64_t offset,
                   int64_t count) const override {
    out.weights = classifier_->weights().Slice(offset, count);
  }
  std::vector<double> ExportState() const override {
    return classifier_->ExportState();
  }
  absl::Status ImportState(absl::Span<const double> state) override {
    summary_.MarkStale();
    return classifier_->ImportState(state);
  }

 private:
  // ‖w‖ of the weights predicted with, for signed distances, and how many
  // of them are not 0: O(d), so computed once per change, not per
  // prediction or per read of the model's stats.
  struct WeightSummary {
    double norm = 0.0;
    int64_t nonzeros = 0;
  };
  const WeightSummary& Summary() const;

  const std::unique_ptr<OnlineClassifier> classifier_;
  Lazy<WeightSummary> summary_{WeightSummary(), /*stale=*/true};
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_BINARY_LEARNER_H_
