#include "core/model/model_spec.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/algorithms/one_vs_rest.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
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

}  // namespace

FeatureSpace MakeFeatureSpace(const ModelSpec& spec) {
  return FeatureSpace(spec.dimension, spec.hash_bits, spec.interactions);
}

int64_t FeatureWidth(const ModelSpec& spec) {
  return spec.dimension +
         (spec.hash_bits > 0 ? int64_t{1} << spec.hash_bits : 0);
}

int64_t ClassBytes(const ModelSpec& spec) {
  const int64_t width = FeatureWidth(spec);
  const int64_t doubles =
      std::visit([width](const auto& p) { return p.DoublesPerClass(width); },
                 spec.algorithm);
  return doubles * int64_t{sizeof(double)} + kClassOverheadBytes;
}

int64_t ModelBytes(const ModelSpec& spec, int64_t classes) {
  // Its means and sums of squares (the standardized copy of an example
  // being learned is the learning thread's, for the batch).
  const int64_t standardizer =
      spec.standardize ? 2 * spec.dimension * int64_t{sizeof(double)} : 0;
  // A drift reaction's challenger and the weights it replaced (binary
  // models only), reserved from the start so that it never waits for
  // memory and decides alike on every replica.
  const int64_t reaction = spec.drift.challenge ? 2 * ClassBytes(spec) : 0;
  return kModelOverheadBytes + standardizer +
         ProgressWindow::Bytes(spec.progress_window, spec.window_losses) +
         DriftDetector::Bytes(spec.drift) + reaction +
         (IsMulticlass(spec) ? classes : 1) * ClassBytes(spec);
}

namespace {

// The I-th algorithm's parameters at their defaults.
template <size_t I>
AlgorithmParams DefaultOf() {
  return AlgorithmParams(std::in_place_index<I>);
}

template <size_t... I>
AlgorithmParams DefaultAt(size_t i, std::index_sequence<I...>) {
  constexpr AlgorithmParams (*kDefaults[])() = {&DefaultOf<I>...};
  return kDefaults[i]();
}

}  // namespace

AlgorithmParams DefaultParams(Algorithm algorithm) {
  constexpr size_t kAlgorithms = std::variant_size_v<AlgorithmParams>;
  const size_t i = static_cast<size_t>(algorithm) - 1;
  return DefaultAt(i < kAlgorithms ? i : 0,
                   std::make_index_sequence<kAlgorithms>());
}

absl::string_view AlgorithmName(const AlgorithmParams& params) {
  return std::visit([](const auto& p) { return p.kName; }, params);
}

std::optional<AlgorithmParams> AlgorithmNamed(absl::string_view name) {
  for (size_t i = 1; i <= std::variant_size_v<AlgorithmParams>; ++i) {
    AlgorithmParams params = DefaultParams(static_cast<Algorithm>(i));
    if (AlgorithmName(params) == name) return params;
  }
  return std::nullopt;
}

bool IsNativelyMulticlass(const AlgorithmParams& algorithm) {
  return std::visit(
      [](const auto& p) {
        return kNativelyMulticlass<std::decay_t<decltype(p)>>;
      },
      algorithm);
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

namespace {

// Whether the algorithm's parameters declare Probabilistic() (else false).
template <typename Params, typename = void>
struct HasProbabilistic : std::false_type {};
template <typename Params>
struct HasProbabilistic<
    Params, std::void_t<decltype(std::declval<Params>().Probabilistic())>>
    : std::true_type {};

// Whether they declare InterceptDecay() (else 1).
template <typename Params, typename = void>
struct HasInterceptDecay : std::false_type {};
template <typename Params>
struct HasInterceptDecay<
    Params, std::void_t<decltype(std::declval<Params>().InterceptDecay())>>
    : std::true_type {};

}  // namespace

bool IsProbabilistic(const ModelSpec& spec) {
  return std::visit(
      [](const auto& p) {
        if constexpr (HasProbabilistic<std::decay_t<decltype(p)>>::value) {
          return p.Probabilistic();
        } else {
          return false;
        }
      },
      spec.algorithm);
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
  if (absl::Status s = CheckDriftOptions(spec.drift); !s.ok()) return s;
  if (absl::Status s = CheckSelectiveSampling(spec.sampling); !s.ok()) {
    return s;
  }
  if (spec.drift.challenge && IsMulticlass(spec)) {
    return absl::InvalidArgumentError(
        "drift.challenge is for binary models: a multiclass model's "
        "challenger would grow classes of its own");
  }
  if (absl::Status s = ValidateFeatureSpace(spec); !s.ok()) return s;
  if (absl::Status s = std::visit([](const auto& p) { return p.Validate(); },
                                  spec.algorithm);
      !s.ok()) {
    return s;
  }
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
  return std::visit(
      [](const auto& p) {
        if constexpr (HasInterceptDecay<std::decay_t<decltype(p)>>::value) {
          return p.InterceptDecay();
        } else {
          return 1.0;
        }
      },
      spec.algorithm);
}

std::unique_ptr<OnlineClassifier> MakeBinaryAlgorithm(const ModelSpec& spec) {
  const int64_t width = FeatureWidth(spec);
  return std::visit(
      [width](const auto& p) -> std::unique_ptr<OnlineClassifier> {
        if constexpr (kNativelyMulticlass<std::decay_t<decltype(p)>>) {
          return nullptr;
        } else {
          return p.MakeClassifier(width);
        }
      },
      spec.algorithm);
}

std::unique_ptr<MulticlassClassifier> MakeMulticlassAlgorithm(
    const ModelSpec& spec) {
  if (spec.one_vs_rest) {
    return std::make_unique<OneVsRest>(
        [spec] { return MakeBinaryClassifier(spec); });
  }
  const int64_t width = FeatureWidth(spec);
  return std::visit(
      [width](const auto& p) -> std::unique_ptr<MulticlassClassifier> {
        if constexpr (kNativelyMulticlass<std::decay_t<decltype(p)>>) {
          return p.MakeClassifier(width);
        } else {
          return nullptr;
        }
      },
      spec.algorithm);
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
