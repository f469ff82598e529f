#include "core/model/binary_learner.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace halfspace {

void BinaryLearner::Learn(Features x, int y, double s,
                          ExampleOutcome& outcome) {
  // ‖w‖ is marked stale by EndBatch, which ends every batch of Learn calls
  // before anything reads it.
  outcome.update = classifier_->Learn(x, y, s);
  outcome.mistake = outcome.update.predicted_label != y;
  outcome.predicted_class = -1;
  outcome.class_scores.clear();
  outcome.class_probabilities.clear();
}

absl::Status BinaryLearner::Predict(absl::Span<const Features> xs,
                                    absl::Span<Prediction> out) const {
  // A classifier that is not linear has no hyperplane to be distant from.
  const double norm = classifier_->linear() ? WeightNorm() : 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    Prediction& p = out[i];
    p.score = classifier_->Score(xs[i]);
    p.label = PredictedLabel(p.score);
    p.signed_distance =
        norm > 0.0 ? std::optional<double>(p.score / norm) : std::nullopt;
    p.probability = classifier_->Probability(p.score);
  }
  return absl::OkStatus();
}

void BinaryLearner::StartEvaluation(Evaluation& evaluation) const {
  evaluation.ClassIndex("-1");  // the binary classes, in their order
  evaluation.ClassIndex("+1");
}

void BinaryLearner::Evaluate(Features x, const PreparedExample& example,
                             std::optional<double> threshold,
                             Evaluation& evaluation) const {
  const double score = classifier_->Score(x);
  if (!std::isfinite(score)) {
    evaluation.Reject(ScoreOverflowError(score));
    return;
  }
  const std::optional<double> p = classifier_->Probability(score);
  const int predicted = threshold.has_value() && p.has_value()
                            ? (*p >= *threshold ? 1 : -1)
                            : PredictedLabel(score);
  std::optional<double> p_true;
  if (p.has_value()) p_true = example.label > 0 ? *p : 1.0 - *p;
  evaluation.Add(example.label > 0 ? 1 : 0, predicted > 0 ? 1 : 0, p_true);
}

absl::Status BinaryLearner::AddClass(absl::string_view) {
  return absl::InvalidArgumentError(
      "classes apply to multiclass models; binary labels are -1 and +1");
}

absl::Status BinaryLearner::CheckSetWeights(absl::string_view label) const {
  if (!label.empty()) {
    return absl::InvalidArgumentError(
        "a binary model has one weight vector: leave the class unset");
  }
  return absl::OkStatus();
}

absl::Status BinaryLearner::SetWeights(absl::string_view label,
                                       LinearWeights weights) {
  if (absl::Status s = CheckSetWeights(label); !s.ok()) return s;
  classifier_->set_weights(std::move(weights));
  summary_.MarkStale();
  return absl::OkStatus();
}

const BinaryLearner::WeightSummary& BinaryLearner::Summary() const {
  return summary_.Get([this](WeightSummary& summary) {
    const std::vector<double>& w = classifier_->weights().w;
    summary.norm = std::sqrt(SquaredNorm(w));
    summary.nonzeros =
        std::count_if(w.begin(), w.end(), [](double wj) { return wj != 0.0; });
  });
}

}  // namespace halfspace
