// What a model is, fixed at creation: its algorithm, dimension and
// hyperparameters; their validation; and the classifiers they describe.

#ifndef HALFSPACE_CORE_MODEL_SPEC_H_
#define HALFSPACE_CORE_MODEL_SPEC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/features/feature_space.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/passive_aggressive.h"
#include "core/algorithms/sgd_classifier.h"

namespace halfspace {

enum class Algorithm {
  kPerceptron = 1,
  kLogisticRegression = 2,
  kAveragedPerceptron = 3,
  kPassiveAggressive = 4,
  kSgd = 5,
  kPocketPerceptron = 6,
  kMulticlassPerceptron = 7,
  kSoftmaxRegression = 8,
};

// The largest feature dimension a model may have (128 MiB of weights).
inline constexpr int64_t kMaxDimension = int64_t{1} << 24;

// The most classes a multiclass model may have, and the most weights all its
// classes may hold together (256 MiB).
inline constexpr int kMaxClasses = 4096;
inline constexpr int64_t kMaxMulticlassWeights = int64_t{1} << 25;

// What a model is: fixed at creation. Each hyperparameter applies to the
// algorithms named beside it and must keep its default for the others.
struct ModelSpec {
  Algorithm algorithm = Algorithm::kPerceptron;
  int64_t dimension = 0;
  double learning_rate = 1.0;     // η: all but passive-aggressive
  double l2 = 0.0;                // λ: logistic and softmax regression
  double margin_threshold = 0.0;  // τ: perceptron
  SgdOptions sgd;                 // SGD
  PaVariant pa_variant = PaVariant::kPaI;  // passive-aggressive
  double aggressiveness = 1.0;             // C: passive-aggressive
  bool ratchet = true;                     // pocket perceptron
  bool predict_with_pocket = true;         // pocket perceptron
  bool one_vs_rest = false;  // a multiclass model of binary `algorithm`s
  bool standardize = false;  // all: learn on online-standardized features
  int hash_bits = 0;         // all: 2^hash_bits buckets after the dense part
  std::vector<Interaction> interactions;  // all, with buckets
};

// The most hash bits, and interactions, a model may have.
inline constexpr int kMaxHashBits = 24;
inline constexpr int kMaxInteractions = 16;

// The model's feature space: dense coordinates, then hash buckets.
FeatureSpace MakeFeatureSpace(const ModelSpec& spec);

// The number of weights per class: dimension + 2^hash_bits (if any).
int64_t FeatureWidth(const ModelSpec& spec);

// Whether the spec describes a multiclass model: one-vs-rest, or a natively
// multiclass algorithm.
bool IsMulticlass(const ModelSpec& spec);

// OK when `name` is 1 to 64 characters from [A-Za-z0-9_.-] and starts with a
// letter or digit, so it is safe as a file name.
absl::Status ValidateModelName(absl::string_view name);

// OK when the spec describes a model that can be built.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Whether models of this spec give probabilities: logistic and softmax
// regression, and SGD on the log or modified Huber loss (also one-vs-rest).
bool IsProbabilistic(const ModelSpec& spec);

// OK when `label` can name a class: 1 to 128 bytes.
absl::Status ValidateClassLabel(absl::string_view label);

// A fresh binary classifier for `spec.algorithm` (also one-vs-rest's per
// class).  REQUIRES: ValidateModelSpec(spec) is OK and the algorithm is
// binary.
std::unique_ptr<OnlineClassifier> MakeBinaryClassifier(const ModelSpec& spec);

// A fresh multiclass classifier with no classes yet.  REQUIRES:
// ValidateModelSpec(spec) is OK and IsMulticlass(spec).
std::unique_ptr<MulticlassClassifier> MakeMulticlassClassifier(
    const ModelSpec& spec);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MODEL_SPEC_H_
