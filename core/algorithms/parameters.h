// How an algorithm declares its parameters, beside its update rule: each
// algorithm's parameters are a struct (PerceptronParams, SgdParams, ...)
// that says, in one place,
//
//   static constexpr absl::string_view kName     its name in the API (the
//                                               field of
//                                               halfspace.v1.Algorithm)
//   static constexpr auto Parameters()          each parameter: its API name,
//                                               its key in model files, and
//                                               where it lives in the struct
//   absl::Status Validate() const               each parameter in its range
//   int64_t DoublesPerClass(int64_t width) const  the memory one class takes
//   MakeClassifier(int64_t width) const         a fresh classifier (binary:
//                                               OnlineClassifier; multiclass:
//                                               MulticlassClassifier)
//
// and, where they apply, bool Probabilistic() const (false if absent) and
// double InterceptDecay() const, the bias's step factor (1 if absent). The
// model's spec, the model
// files and the API read every algorithm through these (model_spec.h), so
// adding one touches its own files, the API and the list of algorithms.

#ifndef HALFSPACE_CORE_ALGORITHMS_PARAMETERS_H_
#define HALFSPACE_CORE_ALGORITHMS_PARAMETERS_H_

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace halfspace {

// The keys model files store parameters under. A key never changes meaning:
// several algorithms share one where the parameter means the same.
enum class ParameterKey : uint32_t {
  kLearningRate = 1,
  kL2 = 2,
  kMarginThreshold = 3,
  kLoss = 4,
  kPenalty = 5,
  kAlpha = 6,
  kL1Ratio = 7,
  kSchedule = 8,
  kPowerT = 9,
  kAverageFrom = 10,
  kPaVariant = 11,
  kAggressiveness = 12,
  kRatchet = 13,
  kPredictWithPocket = 14,
  kOneVsRest = 15,
  kStandardize = 16,
  kHashBits = 17,
  kInterceptDecay = 18,
  kFitIntercept = 19,
  kCwVariant = 20,
  kPhi = 21,
  kR = 22,
  kMaxVectors = 23,
  kProgressWindow = 24,
  kWindowLosses = 25,
  // The drift detector's (core/monitors/drift_detector.h).
  kDriftMethod = 26,
  kDriftInput = 27,
  kAdwinDelta = 28,
  kAdwinWarningDelta = 29,
  kAdwinClock = 30,
  kPageHinkleyMinInstances = 31,
  kPageHinkleyDelta = 32,
  kPageHinkleyThreshold = 33,
  kPageHinkleyAlpha = 34,
  kPageHinkleyWarningThreshold = 35,
  kDdmWarmStart = 36,
  kDdmWarningLevel = 37,
  kDdmDriftLevel = 38,
  // Selective sampling's (core/monitors/selective_sampling.h).
  kSamplingB = 39,
  kSamplingSeed = 40,
  kSamplingUnweighted = 41,
  // The drift reaction's (core/model/drift_reaction.h).
  kChallenge = 42,
  kChallengeAlpha = 43,
  // FTRL-Proximal's (ftrl_proximal.h).
  kFtrlAlpha = 44,
  kFtrlBeta = 45,
  kFtrlL1 = 46,
  kFtrlL2 = 47,
  kRegularizeBias = 48,
};

// One parameter: its name in the API, its key in model files, and `of`,
// which finds it in the algorithm's parameters (const or not).
template <typename Of>
struct Parameter {
  absl::string_view name;
  ParameterKey key;
  Of of;
};

template <typename Of>
constexpr Parameter<Of> Param(absl::string_view name, ParameterKey key, Of of) {
  return {name, key, of};
}

// A parameter that is a member of the algorithm's parameters.
template <typename Params, typename Value>
constexpr auto Param(absl::string_view name, ParameterKey key,
                     Value Params::*member) {
  return Param(
      name, key, [member](auto& params) -> auto& { return params.*member; });
}

// Calls f(value, parameter) for each of the algorithm's parameters, in
// their declared order; `value` is a reference into `params`.
template <typename Params, typename F>
void ForEachParameter(Params& params, F&& f) {
  std::apply(
      [&](const auto&... parameter) {
        (f(parameter.of(params), parameter), ...);
      },
      std::remove_const_t<Params>::Parameters());
}

// The largest value any real-valued parameter may take: beyond it, steps
// and penalties overflow long before they mean anything.
inline constexpr double kMaxParameter = 1e6;

// OK when `value` lies in [min, max] (in (min, max] when `min_open`), which
// also rules out NaN and the infinities; else names `field` and the range.
absl::Status CheckRange(absl::string_view field, double value, double min,
                        bool min_open, double max = kMaxParameter);

// OK when the learning rate η of `algorithm` is in (0, kMaxParameter].
absl::Status CheckLearningRate(absl::string_view algorithm, double eta);

// OK when λ >= 0 with η·λ < 1, or each step would flip or zero the weights.
absl::Status CheckL2(absl::string_view algorithm, double eta, double l2);

// The doubles `vectors` weight vectors of `width`, each with its bias, take.
constexpr int64_t Vectors(int64_t vectors, int64_t width) {
  return vectors * (width + 1);
}

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_PARAMETERS_H_
