// Model's read side: predictions (their size bounded before they are
// made, the top k classes kept) and evaluation, under the shared lock.

#include <algorithm>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/model/model.h"

namespace halfspace {
namespace {
// A prediction with the top k asked for holds every class's score for at
// most this many (instance, class) pairs at once.
constexpr size_t kScoresHeldWhilePredicting = size_t{1} << 16;

// INVALID_ARGUMENT naming the score when a prediction's score, or any of
// its class scores, is not finite.
absl::Status FiniteScores(const Prediction& p) {
  double score = p.score;
  for (double s : p.class_scores) {
    if (!std::isfinite(s)) score = s;
  }
  return std::isfinite(score) ? absl::OkStatus() : ScoreOverflowError(score);
}

// Copies `all` into `out` with only the k highest class scores, highest
// first; ties keep class order, so the first is the predicted class.
void KeepTopClasses(const Prediction& all, int64_t k, Prediction& out) {
  out = Prediction();
  out.label = all.label;
  out.score = all.score;
  out.signed_distance = all.signed_distance;
  out.probability = all.probability;
  out.predicted_class = all.predicted_class;
  const size_t classes = all.class_scores.size();
  const size_t kept = std::min<size_t>(k, classes);
  std::vector<int>& order = out.classes;
  order.resize(classes);
  for (size_t c = 0; c < classes; ++c) order[c] = static_cast<int>(c);
  std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                    [&](int a, int b) {
                      const double sa = all.class_scores[a];
                      const double sb = all.class_scores[b];
                      return sa > sb || (sa == sb && a < b);
                    });
  order.resize(kept);
  order.shrink_to_fit();
  for (int c : order) {
    out.class_scores.push_back(all.class_scores[c]);
    if (!all.class_probabilities.empty()) {
      out.class_probabilities.push_back(all.class_probabilities[c]);
    }
  }
}

absl::Status Stopped() {
  return absl::CancelledError(
      "the call was cancelled or its deadline passed; nothing was done");
}
}  // namespace

absl::Status Model::Predict(absl::Span<const FeatureInput> instances,
                            absl::Span<Prediction> out,
                            std::vector<std::string>* class_names,
                            const StopCheck& stop,
                            const PredictOptions& options) const {
  // Prepare every instance before taking the lock.
  std::vector<PreparedExample> prepared(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    if (stop && stop()) return Stopped();
    if (absl::Status s = PrepareFeatures(instances[i], prepared[i]); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("instance ", i, ": ", s.message()));
    }
  }
  std::vector<Features> xs(instances.size());
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = prepared[i].x;
  ReaderMutexLock lock(mu_);
  absl::Status status = CheckPredictionSize(xs.size(), options);
  if (status.ok()) {
    AppendClassNames(class_names);
    status = PredictLocked(xs, options.top_k, out);
  }
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("model ", Quoted(name_),
                                                    ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status Model::CheckPredictionSize(size_t instances,
                                        const PredictOptions& options) const {
  const std::vector<std::string>& classes = learner_->classes();
  size_t longest = 0;
  for (const std::string& label : classes) {
    longest = std::max(longest, label.size());
  }
  const size_t scores = options.top_k < 0
                            ? classes.size()
                            : std::min<size_t>(options.top_k, classes.size());
  // Neither term can overflow: instances and classes are bounded by the
  // request's size and kMaxClasses, labels by kMaxClassLabelBytes.
  const size_t bound =
      options.response_bytes +
      instances * (options.instance_bytes + longest +
                   scores * (options.class_score_bytes + longest));
  if (bound <= options.max_bytes) return absl::OkStatus();
  return LimitExceeded(
      absl::StrCat("the answer to ", instances, " instances with ", scores,
                   " class scores each could take ", bound,
                   " bytes (send fewer instances, or ask for fewer class "
                   "scores with top_k)"),
      options.max_bytes, "max_message_bytes");
}

absl::Status Model::PredictLocked(absl::Span<const Features> xs, int64_t top_k,
                                  absl::Span<Prediction> out) const {
  // With the top k asked for, the scores of every class are held for a
  // chunk of instances at a time, and only the k best are kept.
  const size_t classes = learner_->classes().size();
  const size_t chunk =
      top_k < 0 || classes == 0
          ? std::max<size_t>(xs.size(), 1)
          : std::max<size_t>(1, kScoresHeldWhilePredicting / classes);
  std::vector<Prediction> all(top_k < 0 ? 0 : std::min(chunk, xs.size()));
  for (size_t start = 0; start < xs.size(); start += chunk) {
    const size_t n = std::min(chunk, xs.size() - start);
    absl::Span<Prediction> to =
        top_k < 0 ? out.subspan(start, n) : absl::MakeSpan(all.data(), n);
    if (absl::Status s = PredictChunk(xs.subspan(start, n), to); !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < n; ++i) {
      if (absl::Status s = FiniteScores(to[i]); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("instance ", start + i, ": ", s.message()));
      }
      if (top_k >= 0) KeepTopClasses(to[i], top_k, out[start + i]);
    }
  }
  return absl::OkStatus();
}

absl::Status Model::PredictChunk(absl::Span<const Features> xs,
                                 absl::Span<Prediction> out) const {
  if (standardizer_ == nullptr) return learner_->Predict(xs, out);
  // One at a time: a standardized x is dense, of the dimension.
  std::vector<double> z;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Features x = Standardized(xs[i], z);
    if (absl::Status s =
            learner_->Predict(absl::MakeConstSpan(&x, 1), out.subspan(i, 1));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Model::CheckThreshold(double threshold) const {
  if (!(threshold >= 0.0 && threshold <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "threshold is ", threshold, "; it must be a probability in [0, 1]"));
  }
  if (!probabilistic() || multiclass()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a threshold applies to binary models with "
                     "probabilities; model ",
                     Quoted(name_), " is not one"));
  }
  return absl::OkStatus();
}

absl::Status Model::Evaluate(absl::Span<const Example> examples,
                             std::optional<double> threshold,
                             Evaluation& evaluation,
                             const StopCheck& stop) const {
  std::vector<PreparedExample> prepared(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    if (stop && stop()) return Stopped();
    Prepare(examples[i], prepared[i]);
  }
  std::vector<double> scratch;
  ReaderMutexLock lock(mu_);
  learner_->StartEvaluation(evaluation);
  for (const PreparedExample& e : prepared) {
    if (!e.error.ok()) {
      evaluation.Reject(e.error);
      continue;
    }
    learner_->Evaluate(Standardized(e.x, scratch), e, threshold, evaluation);
  }
  return absl::OkStatus();
}

}  // namespace halfspace
