#include "core/model/model_spec.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/algorithms/adagrad_classifier.h"
#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/logistic_regression.h"
#include "core/algorithms/multiclass_perceptron.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/algorithms/perceptron.h"
#include "core/algorithms/pocket_perceptron.h"
#include "core/algorithms/softmax_regression.h"
#include "core/algorithms/voted_perceptron.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
}

// OK when `value` lies in [min, kMaxParameter] (in (min, kMaxParameter]
// when `min_open`), which also rules out NaN and the infinities.
absl::Status CheckRange(absl::string_view field, double value, double min,
                        bool min_open, double max = kMaxParameter) {
  const bool above_min = min_open ? value > min : value >= min;
  if (above_min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", value, "; it must be in ",
                   min_open ? "(" : "[", min, ", ", max, "]"));
}

absl::Status CheckLearningRate(absl::string_view algorithm, double eta) {
  return CheckRange(absl::StrCat(algorithm, ".learning_rate"), eta, 0.0,
                    /*min_open=*/true);
}

// λ >= 0 with η·λ < 1, or each step would flip or zero the weights.
absl::Status CheckL2(absl::string_view algorithm, double eta, double l2) {
  const std::string field = absl::StrCat(algorithm, ".l2");
  if (absl::Status s = CheckRange(field, l2, 0.0, false); !s.ok()) return s;
  if (eta * l2 < 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      algorithm, ".learning_rate * ", field, " is ", eta * l2,
      "; it must be below 1, or each step would flip or zero the weights"));
}

// The dense dimension, the hash buckets and the interactions.
absl::Status ValidateFeatureSpace(const ModelSpec& spec) {
  if (spec.hash_bits < 0 || spec.hash_bits > kMaxHashBits) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash_bits is ", spec.hash_bits, "; it must be from 0 to ",
                     kMaxHashBits));
  }
  const int64_t min_dimension = spec.hash_bits > 0 ? 0 : 1;
  if (spec.dimension < min_dimension || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimension is ", spec.dimension, "; it must be from ",
                     min_dimension, " to ", kMaxDimension,
                     spec.hash_bits > 0 ? "" : " (0 only with hash buckets)"));
  }
  if (!spec.interactions.empty() && spec.hash_bits == 0) {
    return absl::InvalidArgumentError(
        "interactions need hash buckets: set hash_bits");
  }
  if (spec.interactions.size() > kMaxInteractions) {
    return absl::InvalidArgumentError(
        absl::StrCat("there are ", spec.interactions.size(),
                     " interactions; the limit is ", kMaxInteractions));
  }
  for (const Interaction& i : spec.interactions) {
    if (i.first.empty() || i.second.empty() || i.first.size() > 64 ||
        i.second.size() > 64) {
      return absl::InvalidArgumentError(
          "an interaction names two groups of 1 to 64 bytes");
    }
  }
  if (spec.standardize && spec.hash_bits > 0) {
    return absl::InvalidArgumentError(
        "standardize applies to dense models; leave hash_bits 0");
  }
  return absl::OkStatus();
}

absl::Status ValidateSgd(const SgdParams& params) {
  const SgdOptions& o = params.options;
  if (o.loss < LossKind::kHinge || o.loss > LossKind::kPerceptron) {
    return absl::InvalidArgumentError("sgd.loss is not one of halfspace's");
  }
  if (o.penalty < Penalty::kNone || o.penalty > Penalty::kElasticNet) {
    return absl::InvalidArgumentError("sgd.penalty is not one of halfspace's");
  }
  if (o.schedule < Schedule::kConstant || o.schedule > Schedule::kAdaGrad) {
    return absl::InvalidArgumentError("sgd.schedule is not one of halfspace's");
  }
  if (o.schedule == Schedule::kOptimal && o.alpha == 0.0) {
    return absl::InvalidArgumentError(
        "sgd.alpha is 0; it must be above 0 with the OPTIMAL schedule, which "
        "divides by it");
  }
  for (absl::Status s :
       {CheckLearningRate("sgd", params.learning_rate),
        CheckRange("sgd.alpha", o.alpha, 0.0, false),
        CheckRange("sgd.l1_ratio", o.l1_ratio, 0.0, false, 1.0),
        CheckRange("sgd.power_t", o.power_t, 0.0, false),
        CheckRange("sgd.intercept_decay", o.intercept_decay, 0.0, false,
                   1.0)}) {
    if (!s.ok()) return s;
  }
  if (o.schedule == Schedule::kAdaGrad &&
      (o.penalty == Penalty::kL1 || o.penalty == Penalty::kElasticNet)) {
    return absl::InvalidArgumentError(
        "sgd.schedule ADAGRAD takes penalty NONE or L2, not L1 or "
        "ELASTIC_NET");
  }
  if (o.schedule == Schedule::kAdaGrad && o.average_from > 0) {
    return absl::InvalidArgumentError(
        "sgd.average_from takes the CONSTANT, OPTIMAL or INVERSE_SCALING "
        "schedule, not ADAGRAD");
  }
  return absl::OkStatus();
}

// The algorithm's parameters, each in its range.
absl::Status ValidateAlgorithm(const AlgorithmParams& algorithm) {
  return std::visit(
      Overloaded{
          [](const PerceptronParams& p) {
            absl::Status s = CheckLearningRate("perceptron", p.learning_rate);
            if (!s.ok()) return s;
            return CheckRange("perceptron.margin_threshold", p.margin_threshold,
                              0.0, false);
          },
          [](const AveragedPerceptronParams& p) {
            absl::Status s =
                CheckLearningRate("averaged_perceptron", p.learning_rate);
            if (!s.ok()) return s;
            return CheckRange("averaged_perceptron.margin_threshold",
                              p.margin_threshold, 0.0, false);
          },
          [](const PocketPerceptronParams& p) {
            return CheckLearningRate("pocket_perceptron", p.learning_rate);
          },
          [](const PassiveAggressiveParams& p) {
            if (p.variant < PaVariant::kPa || p.variant > PaVariant::kPaII) {
              return absl::InvalidArgumentError(
                  "passive_aggressive.variant is not one of halfspace's");
            }
            absl::Status s = CheckRange("passive_aggressive.aggressiveness",
                                        p.aggressiveness, 0.0, true);
            if (!s.ok()) return s;
            return CheckRange("passive_aggressive.intercept_decay",
                              p.intercept_decay, 0.0, false, 1.0);
          },
          [](const LogisticRegressionParams& p) {
            absl::Status s =
                CheckLearningRate("logistic_regression", p.learning_rate);
            if (!s.ok()) return s;
            return CheckL2("logistic_regression", p.learning_rate, p.l2);
          },
          [](const SgdParams& p) { return ValidateSgd(p); },
          [](const MulticlassPerceptronParams& p) {
            return CheckLearningRate("multiclass_perceptron", p.learning_rate);
          },
          [](const SoftmaxRegressionParams& p) {
            absl::Status s =
                CheckLearningRate("softmax_regression", p.learning_rate);
            if (!s.ok()) return s;
            return CheckL2("softmax_regression", p.learning_rate, p.l2);
          },
          [](const ConfidenceWeightedParams& p) {
            if (p.variant < CwVariant::kCw || p.variant > CwVariant::kNherd) {
              return absl::InvalidArgumentError(
                  "confidence_weighted.variant is not one of halfspace's");
            }
            for (absl::Status s :
                 {CheckRange("confidence_weighted.phi", p.phi, 0.0, true),
                  CheckRange("confidence_weighted.r", p.r, 0.0, true),
                  CheckRange("confidence_weighted.aggressiveness",
                             p.aggressiveness, 0.0, true)}) {
              if (!s.ok()) return s;
            }
            return absl::OkStatus();
          },
          [](const VotedPerceptronParams& p) {
            if (p.max_vectors < 1 || p.max_vectors > kMaxVotedVectors) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "voted_perceptron.max_vectors is ", p.max_vectors,
                  "; it must be in [1, ", kMaxVotedVectors, "]"));
            }
            return absl::OkStatus();
          },
      },
      algorithm);
}

}  // namespace

FeatureSpace MakeFeatureSpace(const ModelSpec& spec) {
  return FeatureSpace(spec.dimension, spec.hash_bits, spec.interactions);
}

int64_t FeatureWidth(const ModelSpec& spec) {
  return spec.dimension +
         (spec.hash_bits > 0 ? int64_t{1} << spec.hash_bits : 0);
}

namespace {

// The weight vectors (each with its bias) an algorithm keeps per class: the
// weights it predicts with and its state (see each classifier's members).
int64_t VectorsPerClass(const AlgorithmParams& algorithm) {
  return std::visit(
      Overloaded{
          [](const PerceptronParams&) -> int64_t { return 1; },
          [](const LogisticRegressionParams&) -> int64_t { return 1; },
          [](const AveragedPerceptronParams&) -> int64_t { return 3; },
          [](const PassiveAggressiveParams& p) -> int64_t {
            return p.average_from > 0 ? 3 : 1;
          },
          [](const SgdParams& p) -> int64_t {
            const SgdOptions& o = p.options;
            if (o.schedule == Schedule::kAdaGrad) return 2;
            const bool l1 =
                o.penalty == Penalty::kL1 ||
                (o.penalty == Penalty::kElasticNet && o.l1_ratio > 0.0);
            return 2 + (o.average_from > 0 ? 1 : 0) + (l1 ? 1 : 0);
          },
          [](const PocketPerceptronParams&) -> int64_t { return 2; },
          [](const MulticlassPerceptronParams&) -> int64_t { return 1; },
          [](const SoftmaxRegressionParams&) -> int64_t { return 1; },
          [](const ConfidenceWeightedParams&) -> int64_t { return 2; },
          // The voting vectors, the merged sum and the average, and the
          // counts (at most one more vector's worth: see ClassBytes).
          [](const VotedPerceptronParams& p) -> int64_t {
            return p.max_vectors + 2;
          },
      },
      algorithm);
}

}  // namespace

int64_t ClassBytes(const ModelSpec& spec) {
  // A voted perceptron's counts and vector headers: a few words per vector.
  const auto* voted = std::get_if<VotedPerceptronParams>(&spec.algorithm);
  const int64_t per_vote = voted != nullptr ? 8 * voted->max_vectors : 0;
  return (VectorsPerClass(spec.algorithm) * (FeatureWidth(spec) + 1) +
          per_vote) *
             int64_t{sizeof(double)} +
         kClassOverheadBytes;
}

int64_t ModelBytes(const ModelSpec& spec, int64_t classes) {
  const int64_t standardizer =
      spec.standardize ? 3 * spec.dimension * int64_t{sizeof(double)} : 0;
  return kModelOverheadBytes + standardizer +
         ProgressWindow::Bytes(spec.progress_window) +
         (IsMulticlass(spec) ? classes : 1) * ClassBytes(spec);
}

AlgorithmParams DefaultParams(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kPerceptron:
      return PerceptronParams();
    case Algorithm::kLogisticRegression:
      return LogisticRegressionParams();
    case Algorithm::kAveragedPerceptron:
      return AveragedPerceptronParams();
    case Algorithm::kPassiveAggressive:
      return PassiveAggressiveParams();
    case Algorithm::kSgd:
      return SgdParams();
    case Algorithm::kPocketPerceptron:
      return PocketPerceptronParams();
    case Algorithm::kMulticlassPerceptron:
      return MulticlassPerceptronParams();
    case Algorithm::kSoftmaxRegression:
      return SoftmaxRegressionParams();
    case Algorithm::kConfidenceWeighted:
      return ConfidenceWeightedParams();
    case Algorithm::kVotedPerceptron:
      return VotedPerceptronParams();
  }
  return PerceptronParams();
}

bool IsNativelyMulticlass(const AlgorithmParams& algorithm) {
  return std::holds_alternative<MulticlassPerceptronParams>(algorithm) ||
         std::holds_alternative<SoftmaxRegressionParams>(algorithm);
}

ModelSpec DenseSpec(AlgorithmParams algorithm, int64_t dimension) {
  ModelSpec spec;
  spec.algorithm = std::move(algorithm);
  spec.dimension = dimension;
  return spec;
}

bool IsMulticlass(const ModelSpec& spec) {
  return spec.one_vs_rest || IsNativelyMulticlass(spec.algorithm);
}

bool IsProbabilistic(const ModelSpec& spec) {
  if (const auto* sgd = std::get_if<SgdParams>(&spec.algorithm)) {
    return sgd->options.loss == LossKind::kLog ||
           sgd->options.loss == LossKind::kModifiedHuber;
  }
  return std::holds_alternative<LogisticRegressionParams>(spec.algorithm) ||
         std::holds_alternative<SoftmaxRegressionParams>(spec.algorithm);
}

absl::Status ValidateClassLabel(absl::string_view label) {
  if (label.empty()) {
    return absl::InvalidArgumentError(
        "class_label is empty; a multiclass model needs each example's class");
  }
  if (label.size() > kMaxClassLabelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("class_label has ", label.size(), " bytes; the limit is ",
                     kMaxClassLabelBytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("model name is empty");
  if (name.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model name has ", name.size(), " characters; the limit is 64"));
  }
  if (!absl::ascii_isalnum(name[0]) ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model name ", Quoted(name),
        " is invalid: use letters, digits, '_', '.', '-', starting with a "
        "letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelSpec(const ModelSpec& spec) {
  if (spec.progress_window < 1 || spec.progress_window > kMaxProgressWindow) {
    return absl::InvalidArgumentError(
        absl::StrCat("progress_window is ", spec.progress_window,
                     "; it must be in [1, ", kMaxProgressWindow, "]"));
  }
  if (absl::Status s = ValidateFeatureSpace(spec); !s.ok()) return s;
  if (absl::Status s = ValidateAlgorithm(spec.algorithm); !s.ok()) return s;
  if (spec.one_vs_rest && IsNativelyMulticlass(spec.algorithm)) {
    return absl::InvalidArgumentError(
        "one_vs_rest is for binary algorithms; multiclass_perceptron and "
        "softmax_regression are multiclass already");
  }
  return absl::OkStatus();
}

namespace {

// The factor of the bias's steps: 0 without intercept, else the
// algorithm's intercept decay (1 for those that have none).
double InterceptFactor(const ModelSpec& spec) {
  if (!spec.fit_intercept) return 0.0;
  if (const auto* p = std::get_if<SgdParams>(&spec.algorithm)) {
    return p->options.intercept_decay;
  }
  if (const auto* p = std::get_if<PassiveAggressiveParams>(&spec.algorithm)) {
    return p->intercept_decay;
  }
  return 1.0;
}

std::unique_ptr<OnlineClassifier> MakeBinaryAlgorithm(const ModelSpec& spec) {
  const int64_t width = FeatureWidth(spec);
  return std::visit(
      Overloaded{
          [&](const PerceptronParams& p) -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<Perceptron>(width, p.learning_rate,
                                                p.margin_threshold);
          },
          [&](const LogisticRegressionParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<LogisticRegression>(width, p.learning_rate,
                                                        p.l2);
          },
          [&](const AveragedPerceptronParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<AveragedPerceptron>(width, p.learning_rate,
                                                        p.margin_threshold);
          },
          [&](const PassiveAggressiveParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<PassiveAggressive>(
                width, p.variant, p.aggressiveness, p.average_from);
          },
          [&](const SgdParams& p) -> std::unique_ptr<OnlineClassifier> {
            const SgdOptions& o = p.options;
            if (o.schedule == Schedule::kAdaGrad) {
              return std::make_unique<AdaGradClassifier>(
                  width, p.learning_rate, o.loss,
                  o.penalty == Penalty::kL2 ? o.alpha : 0.0);
            }
            return std::make_unique<SgdClassifier>(width, p.learning_rate, o);
          },
          [&](const PocketPerceptronParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<PocketPerceptron>(
                width, p.learning_rate, p.ratchet, p.predict_with_pocket);
          },
          [](const MulticlassPerceptronParams&)
              -> std::unique_ptr<OnlineClassifier> { return nullptr; },
          [](const SoftmaxRegressionParams&)
              -> std::unique_ptr<OnlineClassifier> { return nullptr; },
          [&](const ConfidenceWeightedParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<ConfidenceWeighted>(width, p.variant, p.phi,
                                                        p.r, p.aggressiveness);
          },
          [&](const VotedPerceptronParams& p)
              -> std::unique_ptr<OnlineClassifier> {
            return std::make_unique<VotedPerceptron>(width, p.max_vectors);
          },
      },
      spec.algorithm);
}

std::unique_ptr<MulticlassClassifier> MakeMulticlassAlgorithm(
    const ModelSpec& spec) {
  if (spec.one_vs_rest) {
    return std::make_unique<OneVsRest>(
        [spec] { return MakeBinaryClassifier(spec); });
  }
  if (const auto* p =
          std::get_if<MulticlassPerceptronParams>(&spec.algorithm)) {
    return std::make_unique<MulticlassPerceptron>(FeatureWidth(spec),
                                                  p->learning_rate);
  }
  const auto& p = std::get<SoftmaxRegressionParams>(spec.algorithm);
  return std::make_unique<SoftmaxRegression>(FeatureWidth(spec),
                                             p.learning_rate, p.l2);
}

}  // namespace

std::unique_ptr<OnlineClassifier> MakeBinaryClassifier(const ModelSpec& spec) {
  std::unique_ptr<OnlineClassifier> classifier = MakeBinaryAlgorithm(spec);
  if (classifier != nullptr) {
    classifier->set_intercept_factor(InterceptFactor(spec));
  }
  return classifier;
}

std::unique_ptr<MulticlassClassifier> MakeMulticlassClassifier(
    const ModelSpec& spec) {
  std::unique_ptr<MulticlassClassifier> classifier =
      MakeMulticlassAlgorithm(spec);
  classifier->set_intercept_factor(InterceptFactor(spec));
  return classifier;
}

}  // namespace halfspace
