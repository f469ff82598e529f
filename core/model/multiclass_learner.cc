#include "core/model/multiclass_learner.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

absl::Status MulticlassLearner::CheckNewClass(absl::string_view label) const {
  if (absl::Status s = ValidateClassLabel(label); !s.ok()) return s;
  const int64_t classes = static_cast<int64_t>(classes_.size()) + 1;
  if (classes > kMaxClasses || classes * (width_ + 1) > kMaxMulticlassWeights) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot add class ", Quoted(label), ": the model has ", classes_.size(),
        " classes, the most its dimension allows"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> MulticlassLearner::ClassIndex(absl::string_view label) {
  auto it = class_index_.find(label);
  if (it != class_index_.end()) return it->second;
  if (absl::Status s = CheckNewClass(label); !s.ok()) return s;
  classifier_->AddClass();
  classes_.emplace_back(label);
  class_index_.emplace(classes_.back(), classifier_->num_classes() - 1);
  return classifier_->num_classes() - 1;
}

absl::Status MulticlassLearner::AddClass(absl::string_view label) {
  if (class_index_.contains(label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("class ", Quoted(label), " is listed twice"));
  }
  return ClassIndex(label).status();
}

void MulticlassLearner::RemoveLastClass() {
  class_index_.erase(classes_.back());
  classes_.pop_back();
  classifier_->RemoveLastClass();
}

void MulticlassLearner::Learn(Features x, int y, double s,
                              ExampleOutcome& outcome) {
  const MulticlassUpdate m = classifier_->Learn(x, y, s, outcome.class_scores,
                                                outcome.class_probabilities);
  Update& u = outcome.update;
  u.score = outcome.class_scores[y];
  u.margin = m.margin;
  u.predicted_label = 0;
  u.updated = m.updated;
  u.loss = m.loss;
  u.probability = outcome.class_probabilities.empty()
                      ? std::nullopt
                      : std::optional<double>(outcome.class_probabilities[y]);
  outcome.predicted_class = m.predicted_class;
  outcome.mistake = m.predicted_class != y;
}

absl::Status MulticlassLearner::Predict(absl::Span<const Features> xs,
                                        absl::Span<Prediction> out) const {
  if (classes_.empty()) {
    return absl::FailedPreconditionError(
        "the model knows no class yet; train it or list classes at creation");
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    Prediction& p = out[i];
    classifier_->Predict(xs[i], p.class_scores, p.class_probabilities);
    p.predicted_class = ArgMax(p.class_scores);
  }
  return absl::OkStatus();
}

void MulticlassLearner::Evaluate(Features x, const PreparedExample& example,
                                 std::optional<double>,
                                 Evaluation& evaluation) const {
  if (classes_.empty()) {
    evaluation.Reject(
        absl::FailedPreconditionError("the model knows no class yet"));
    return;
  }
  std::vector<double> scores, probabilities;
  classifier_->Predict(x, scores, probabilities);
  for (double score : scores) {
    if (!std::isfinite(score)) {
      evaluation.Reject(ScoreOverflowError(score));
      return;
    }
  }
  const int predicted = ArgMax(scores);
  const int truth = evaluation.ClassIndex(example.class_label);
  auto known = class_index_.find(example.class_label);
  std::optional<double> p;
  if (!probabilities.empty()) {
    p = known == class_index_.end() ? 0.0 : probabilities[known->second];
  }
  evaluation.Add(truth, evaluation.ClassIndex(classes_[predicted]), p);
}

absl::Status MulticlassLearner::CheckSetWeights(absl::string_view label) const {
  if (label.empty()) {
    return absl::InvalidArgumentError(
        "a multiclass model's weights are set per class: name the class");
  }
  return class_index_.contains(label) ? absl::OkStatus() : CheckNewClass(label);
}

absl::Status MulticlassLearner::SetWeights(absl::string_view label,
                                           LinearWeights weights) {
  if (absl::Status s = CheckSetWeights(label); !s.ok()) return s;
  absl::StatusOr<int> k = ClassIndex(label);
  if (!k.ok()) return k.status();
  classifier_->set_weights(*k, std::move(weights));
  return absl::OkStatus();
}

double MulticlassLearner::WeightNorm() const {
  double sum = 0.0;
  for (int k = 0; k < classifier_->num_classes(); ++k) {
    sum += SquaredNorm(classifier_->weights(k).w);
  }
  return std::sqrt(sum);
}

int64_t MulticlassLearner::NonzeroWeights() const {
  int64_t nonzeros = 0;
  for (int k = 0; k < classifier_->num_classes(); ++k) {
    const std::vector<double>& w = classifier_->weights(k).w;
    nonzeros +=
        std::count_if(w.begin(), w.end(), [](double wj) { return wj != 0.0; });
  }
  return nonzeros;
}

void MulticlassLearner::CopyWeights(ModelSnapshot& out, int64_t offset,
                                    int64_t count) const {
  out.classes = classes_;
  for (int k = 0; k < classifier_->num_classes(); ++k) {
    out.class_weights.push_back(classifier_->weights(k).Slice(offset, count));
  }
}

}  // namespace halfspace
