#include "core/model_spec.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/logistic_regression.h"
#include "core/algorithms/multiclass_perceptron.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/algorithms/perceptron.h"
#include "core/algorithms/pocket_perceptron.h"
#include "core/algorithms/softmax_regression.h"

namespace halfspace {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
}

// OK when `ok`; otherwise "<field> is <value>; it must be <rule>".
absl::Status Require(bool ok, absl::string_view field, double value,
                     absl::string_view rule) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", value, "; it must be ", rule));
}

// Hyperparameters of other algorithms must keep their defaults, so that a
// typo'd request fails instead of silently training something else.
absl::Status ValidateApplicability(const ModelSpec& spec) {
  const ModelSpec defaults;
  const Algorithm a = spec.algorithm;
  struct Field {
    const char* names;
    bool set;
    bool applies;
    const char* owners;
  };
  const SgdOptions& sgd = spec.sgd;
  const SgdOptions& d = defaults.sgd;
  const bool sgd_set = sgd.loss != d.loss || sgd.penalty != d.penalty ||
                       sgd.alpha != d.alpha || sgd.l1_ratio != d.l1_ratio ||
                       sgd.schedule != d.schedule ||
                       sgd.power_t != d.power_t ||
                       sgd.average_from != d.average_from;
  const bool pa_set = spec.pa_variant != defaults.pa_variant ||
                      spec.aggressiveness != defaults.aggressiveness;
  const bool pocket_set = spec.ratchet != defaults.ratchet ||
                          spec.predict_with_pocket !=
                              defaults.predict_with_pocket;
  const Field fields[] = {
      {"l2", spec.l2 != defaults.l2,
       a == Algorithm::kLogisticRegression || a == Algorithm::kSoftmaxRegression,
       "logistic and softmax regression"},
      {"margin_threshold", spec.margin_threshold != defaults.margin_threshold,
       a == Algorithm::kPerceptron, "the perceptron"},
      {"loss, penalty, alpha, l1_ratio, schedule, power_t and average_from",
       sgd_set, a == Algorithm::kSgd, "SGD"},
      {"pa_variant and aggressiveness", pa_set,
       a == Algorithm::kPassiveAggressive, "passive-aggressive"},
      {"ratchet and predict_with_pocket", pocket_set,
       a == Algorithm::kPocketPerceptron, "the pocket perceptron"},
      {"one_vs_rest", spec.one_vs_rest,
       a != Algorithm::kMulticlassPerceptron &&
           a != Algorithm::kSoftmaxRegression,
       "binary algorithms (the others are multiclass already)"},
  };
  for (const Field& f : fields) {
    if (f.set && !f.applies) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.names, ": for ", f.owners,
                       " only; leave unset for this algorithm"));
    }
  }
  return absl::OkStatus();
}

// The dense dimension, the hash buckets and the interactions.
absl::Status ValidateFeatureSpace(const ModelSpec& spec) {
  if (spec.hash_bits < 0 || spec.hash_bits > kMaxHashBits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hash_bits is ", spec.hash_bits, "; it must be from 0 to ",
        kMaxHashBits));
  }
  const int64_t min_dimension = spec.hash_bits > 0 ? 0 : 1;
  if (spec.dimension < min_dimension || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dimension is ", spec.dimension, "; it must be from ", min_dimension,
        " to ", kMaxDimension,
        spec.hash_bits > 0 ? "" : " (0 only with hash buckets)"));
  }
  if (!spec.interactions.empty() && spec.hash_bits == 0) {
    return absl::InvalidArgumentError(
        "interactions need hash buckets: set hash_bits");
  }
  if (spec.interactions.size() > kMaxInteractions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "there are ", spec.interactions.size(), " interactions; the limit is ",
        kMaxInteractions));
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

absl::Status ValidateSgdOptions(const SgdOptions& o) {
  if (o.loss < LossKind::kHinge || o.loss > LossKind::kPerceptron) {
    return absl::InvalidArgumentError("loss is not one of halfspace's");
  }
  if (o.penalty < Penalty::kNone || o.penalty > Penalty::kElasticNet) {
    return absl::InvalidArgumentError("penalty is not one of halfspace's");
  }
  if (o.schedule < Schedule::kConstant || o.schedule > Schedule::kAdaGrad) {
    return absl::InvalidArgumentError("schedule is not one of halfspace's");
  }
  if (absl::Status s = Require(std::isfinite(o.alpha) && o.alpha >= 0.0,
                               "alpha", o.alpha, ">= 0");
      !s.ok()) {
    return s;
  }
  if (o.schedule == Schedule::kOptimal && o.alpha <= 0.0) {
    return Require(false, "alpha", o.alpha,
                   "> 0 with the OPTIMAL schedule, which divides by it");
  }
  if (absl::Status s = Require(o.l1_ratio >= 0.0 && o.l1_ratio <= 1.0,
                               "l1_ratio", o.l1_ratio, "in [0, 1]");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Require(std::isfinite(o.power_t) && o.power_t >= 0.0,
                               "power_t", o.power_t, ">= 0");
      !s.ok()) {
    return s;
  }
  if (o.schedule == Schedule::kAdaGrad &&
      (o.penalty == Penalty::kL1 || o.penalty == Penalty::kElasticNet)) {
    return absl::InvalidArgumentError(
        "the ADAGRAD schedule takes penalty NONE or L2, not L1 or ELASTIC_NET");
  }
  if (o.schedule == Schedule::kAdaGrad && o.average_from > 0) {
    return absl::InvalidArgumentError(
        "average_from takes the CONSTANT, OPTIMAL or INVERSE_SCALING "
        "schedule, not ADAGRAD");
  }
  return absl::OkStatus();
}

}  // namespace

FeatureSpace MakeFeatureSpace(const ModelSpec& spec) {
  return FeatureSpace(spec.dimension, spec.hash_bits, spec.interactions);
}

int64_t FeatureWidth(const ModelSpec& spec) {
  return spec.dimension +
         (spec.hash_bits > 0 ? int64_t{1} << spec.hash_bits : 0);
}

bool IsMulticlass(const ModelSpec& spec) {
  return spec.one_vs_rest ||
         spec.algorithm == Algorithm::kMulticlassPerceptron ||
         spec.algorithm == Algorithm::kSoftmaxRegression;
}

bool IsProbabilistic(const ModelSpec& spec) {
  switch (spec.algorithm) {
    case Algorithm::kLogisticRegression:
    case Algorithm::kSoftmaxRegression:
      return true;
    case Algorithm::kSgd:
      return spec.sgd.loss == LossKind::kLog ||
             spec.sgd.loss == LossKind::kModifiedHuber;
    default:
      return false;
  }
}

absl::Status ValidateClassLabel(absl::string_view label) {
  if (label.empty()) {
    return absl::InvalidArgumentError(
        "class_label is empty; a multiclass model needs each example's class");
  }
  if (label.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat(
        "class_label has ", label.size(), " bytes; the limit is 128"));
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
        "model name '", name,
        "' is invalid: use letters, digits, '_', '.', '-', starting with a "
        "letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelSpec(const ModelSpec& spec) {
  const Algorithm a = spec.algorithm;
  if (a < Algorithm::kPerceptron || a > Algorithm::kSoftmaxRegression) {
    return absl::InvalidArgumentError("algorithm is not one of halfspace's");
  }
  if (absl::Status s = ValidateFeatureSpace(spec); !s.ok()) return s;
  if (!(std::isfinite(spec.learning_rate) && spec.learning_rate > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning_rate is ", spec.learning_rate, "; it must be positive"));
  }
  if (absl::Status s = ValidateApplicability(spec); !s.ok()) return s;
  switch (a) {
    case Algorithm::kPerceptron:
      return Require(std::isfinite(spec.margin_threshold) &&
                         spec.margin_threshold >= 0.0,
                     "margin_threshold", spec.margin_threshold, ">= 0");
    case Algorithm::kLogisticRegression:
    case Algorithm::kSoftmaxRegression:
      if (!(std::isfinite(spec.l2) && spec.l2 >= 0.0)) {
        return Require(false, "l2", spec.l2, ">= 0");
      }
      return Require(spec.learning_rate * spec.l2 < 1.0,
                     "learning_rate * l2", spec.learning_rate * spec.l2,
                     "below 1, or each step would flip or zero the weights");
    case Algorithm::kPassiveAggressive:
      return Require(std::isfinite(spec.aggressiveness) &&
                         spec.aggressiveness > 0.0,
                     "aggressiveness (C)", spec.aggressiveness, "> 0");
    case Algorithm::kSgd:
      return ValidateSgdOptions(spec.sgd);
    case Algorithm::kAveragedPerceptron:
    case Algorithm::kPocketPerceptron:
    case Algorithm::kMulticlassPerceptron:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

std::unique_ptr<OnlineClassifier> MakeBinaryClassifier(const ModelSpec& spec) {
  switch (spec.algorithm) {
    case Algorithm::kPerceptron:
      return std::make_unique<Perceptron>(FeatureWidth(spec), spec.learning_rate,
                                          spec.margin_threshold);
    case Algorithm::kLogisticRegression:
      return std::make_unique<LogisticRegression>(
          FeatureWidth(spec), spec.learning_rate, spec.l2);
    case Algorithm::kAveragedPerceptron:
      return std::make_unique<AveragedPerceptron>(FeatureWidth(spec),
                                                  spec.learning_rate);
    case Algorithm::kPassiveAggressive:
      return std::make_unique<PassiveAggressive>(
          FeatureWidth(spec), spec.pa_variant, spec.aggressiveness);
    case Algorithm::kSgd:
      return std::make_unique<SgdClassifier>(FeatureWidth(spec),
                                             spec.learning_rate, spec.sgd);
    case Algorithm::kPocketPerceptron:
      return std::make_unique<PocketPerceptron>(
          FeatureWidth(spec), spec.learning_rate, spec.ratchet,
          spec.predict_with_pocket);
    case Algorithm::kMulticlassPerceptron:
    case Algorithm::kSoftmaxRegression:
      return nullptr;
  }
  return nullptr;
}

std::unique_ptr<MulticlassClassifier> MakeMulticlassClassifier(
    const ModelSpec& spec) {
  if (spec.one_vs_rest) {
    return std::make_unique<OneVsRest>([spec] {
      return MakeBinaryClassifier(spec);
    });
  }
  if (spec.algorithm == Algorithm::kMulticlassPerceptron) {
    return std::make_unique<MulticlassPerceptron>(FeatureWidth(spec),
                                                  spec.learning_rate);
  }
  return std::make_unique<SoftmaxRegression>(FeatureWidth(spec),
                                             spec.learning_rate, spec.l2);
}

}  // namespace halfspace
