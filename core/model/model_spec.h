// What a model is, fixed at creation: its algorithm with that algorithm's
// parameters, and its feature space; their validation; and the classifiers
// they describe.

#ifndef HALFSPACE_CORE_MODEL_MODEL_SPEC_H_
#define HALFSPACE_CORE_MODEL_MODEL_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/averaged_perceptron.h"
#include "core/algorithms/confidence_weighted.h"
#include "core/algorithms/ftrl_proximal.h"
#include "core/algorithms/logistic_regression.h"
#include "core/algorithms/multiclass_classifier.h"
#include "core/algorithms/multiclass_perceptron.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"
#include "core/algorithms/passive_aggressive.h"
#include "core/algorithms/perceptron.h"
#include "core/algorithms/pocket_perceptron.h"
#include "core/algorithms/sgd_classifier.h"
#include "core/algorithms/softmax_regression.h"
#include "core/algorithms/voted_perceptron.h"
#include "core/features/feature_space.h"
#include "core/monitors/drift_detector.h"
#include "core/monitors/progress_window.h"
#include "core/monitors/selective_sampling.h"

namespace halfspace {

// The algorithms, numbered as the alternatives of AlgorithmParams (from 1).
// The numbers are stored in model files: never change one. (Names for tests
// and tools: the numbers are AlgorithmParams's order.)
enum class Algorithm {
  kPerceptron = 1,
  kLogisticRegression = 2,
  kAveragedPerceptron = 3,
  kPassiveAggressive = 4,
  kSgd = 5,
  kPocketPerceptron = 6,
  kMulticlassPerceptron = 7,
  kSoftmaxRegression = 8,
  kConfidenceWeighted = 9,
  kVotedPerceptron = 10,
  kFtrlProximal = 11,
};

// One algorithm and its parameters: a parameter of another algorithm cannot
// be given. The list of algorithms: each alternative declares its name,
// parameters, validation, memory and classifier (see parameters.h), and
// its place (from 1) is its number in Algorithm and in model files.
using AlgorithmParams =
    std::variant<PerceptronParams, LogisticRegressionParams,
                 AveragedPerceptronParams, PassiveAggressiveParams, SgdParams,
                 PocketPerceptronParams, MulticlassPerceptronParams,
                 SoftmaxRegressionParams, ConfidenceWeightedParams,
                 VotedPerceptronParams, FtrlProximalParams>;

// A visitor from lambdas, one per alternative:
// std::visit(Overloaded{[](const PerceptronParams& p) {...}, ...}, params).
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

// The algorithm `params` holds.
inline Algorithm AlgorithmOf(const AlgorithmParams& params) {
  return static_cast<Algorithm>(params.index() + 1);
}

// The algorithm's parameters at their defaults.
AlgorithmParams DefaultParams(Algorithm algorithm);

// Whether `Params` makes a multiclass classifier by itself (no one-vs-rest
// needed).
template <typename Params>
inline constexpr bool kNativelyMulticlass =
    std::is_base_of_v<MulticlassClassifier,
                      typename decltype(std::declval<const Params&>()
                                            .MakeClassifier(0))::element_type>;

// The algorithm's name in the API ("perceptron", "sgd", ...).
absl::string_view AlgorithmName(const AlgorithmParams& params);

// The algorithm of that name, at its defaults; nullopt for none.
std::optional<AlgorithmParams> AlgorithmNamed(absl::string_view name);

// The largest feature dimension a model may have (128 MiB of weights).
inline constexpr int64_t kMaxDimension = int64_t{1} << 24;

// The most classes a multiclass model may have, and the most weights all its
// classes may hold together (256 MiB).
inline constexpr int kMaxClasses = 4096;
inline constexpr int64_t kMaxMulticlassWeights = int64_t{1} << 25;

// What a model is: fixed at creation.
// Where a replicated model's changes are ordered: a stream of a replicated
// log and the subject its records go to (see core/replication/), and how
// many servers of the log store the stream.
// The per-model limits (see limits.h) by which every replica of a
// replicated model decides its records alike, whatever its own server's
// flags: the creating server's, kept in the creation record and the
// model's files. 0 for one not kept (a model created before they were):
// the server's own then.
struct ReplicaLimits {
  int64_t max_model_bytes = 0;
  int64_t max_classes = 0;
  int64_t max_named_features = 0;
  int64_t max_interaction_products = 0;
};

struct Replication {
  std::string stream;
  std::string subject;
  int replicas = 0;
  // Which model of the name this is: drawn when it is created, and kept in
  // its creation record, its files and the catalog, so that a replica
  // tells this model's records and snapshots from those an earlier model
  // of the same name left in the stream. Empty for models created before
  // it was kept (all of a stream's then match).
  std::string creation;
  ReplicaLimits limits;
};

struct ModelSpec {
  AlgorithmParams algorithm;
  int64_t dimension = 0;
  bool one_vs_rest = false;   // a multiclass model of a binary algorithm
  bool standardize = false;   // learn on online-standardized features
  bool fit_intercept = true;  // learn a bias (false: b stays 0)
  // Progressive validation's recent window, in examples (see
  // progress_window.h).
  int64_t progress_window = kDefaultProgressWindow;
  // Whether the window keeps each example's loss, for the exact mean loss
  // over it (8 bytes an example); without, it keeps mistakes alone (a bit
  // each).
  bool window_losses = false;
  // The drift detector on progressive validation's stream, if any (see
  // drift_detector.h).
  DriftOptions drift;
  // Which predictions ask for their labels (see selective_sampling.h).
  SelectiveSampling sampling;
  int hash_bits = 0;  // 2^hash_bits buckets after the dense part
  std::vector<Interaction> interactions;  // with buckets
  // A replicated model's stream; an empty one for a model of this server
  // alone.
  Replication replication;
};

// Whether `spec` is of a replicated model.
inline bool IsReplicated(const ModelSpec& spec) {
  return !spec.replication.stream.empty();
}

// A dense model of `dimension` features learning with `algorithm`; every
// other field at its default.
ModelSpec DenseSpec(AlgorithmParams algorithm, int64_t dimension);

// The most hash bits, and interactions, a model may have.
inline constexpr int kMaxHashBits = 24;
inline constexpr int kMaxInteractions = 16;

// The model's feature space: dense coordinates, then hash buckets.
FeatureSpace MakeFeatureSpace(const ModelSpec& spec);

// The number of weights per class: dimension + 2^hash_bits (if any).
int64_t FeatureWidth(const ModelSpec& spec);

// The memory a model of `spec` takes with `classes` classes (ignored for a
// binary model): its weights and algorithm state, the standardizer's
// statistics, and a fixed overhead per class and per model. Known before
// the model is made, so that limits are checked before memory is taken.
int64_t ModelBytes(const ModelSpec& spec, int64_t classes);

// What one more class adds to ModelBytes (for a binary model, the weights).
int64_t ClassBytes(const ModelSpec& spec);

// The fixed parts of ModelBytes: a class's label and index entries; the
// model's name, spec, counters and sources.
inline constexpr int64_t kClassOverheadBytes = 256;
inline constexpr int64_t kModelOverheadBytes = 4096;

// Whether the spec describes a multiclass model: one-vs-rest, or a natively
// multiclass algorithm.
bool IsMulticlass(const ModelSpec& spec);

// Whether the algorithm is multiclass by itself (no one-vs-rest needed).
bool IsNativelyMulticlass(const AlgorithmParams& algorithm);

// OK when `name` is 1 to 64 characters from [A-Za-z0-9_.-] and starts with a
// letter or digit, so it is safe as a file name.
absl::Status ValidateModelName(absl::string_view name);

// OK when the spec describes a model that can be built.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Whether models of this spec give probabilities: logistic and softmax
// regression, and SGD on the log or modified Huber loss (also one-vs-rest).
bool IsProbabilistic(const ModelSpec& spec);

// The longest class label, in bytes.
inline constexpr size_t kMaxClassLabelBytes = 128;

// OK when `label` can name a class: 1 to kMaxClassLabelBytes bytes.
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

#endif  // HALFSPACE_CORE_MODEL_MODEL_SPEC_H_
