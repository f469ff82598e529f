#include "core/storage/parameter_keys.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <variant>

namespace halfspace {
namespace {

using Key = ParameterKey;

// A parameter's value as stored: every value a double.
template <typename Value>
double Stored(Value value) {
  if constexpr (std::is_same_v<Value, bool>) return value ? 1.0 : 0.0;
  return static_cast<double>(value);
}

// The integer nearest `v` that `Integer` holds (NaN: 0). A damaged file's
// out-of-range value becomes one that validation refuses, never undefined
// behaviour; an unsigned value near 2^64 (which a double rounds up to
// 2^64) reads back as the largest.
template <typename Integer>
Integer Saturated(double v) {
  using Limits = std::numeric_limits<Integer>;
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(Limits::min())) return Limits::min();
  // 2^63 or 2^64: the first double past the type's range.
  const double past_max = 2.0 * static_cast<double>(Limits::max() / 2 + 1);
  if (v >= past_max) return Limits::max();
  return static_cast<Integer>(v);
}

// A stored value back in the parameter's type.
template <typename Value>
Value Loaded(double v) {
  if constexpr (std::is_same_v<Value, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_enum_v<Value>) {
    return static_cast<Value>(Saturated<std::underlying_type_t<Value>>(v));
  } else if constexpr (std::is_integral_v<Value>) {
    return Saturated<Value>(v);
  } else {
    return v;
  }
}

// Sets `value` from the key's stored value; a missing key keeps it.
template <typename Value>
void Load(const KeyedValues& values, Key key, Value& value) {
  for (const auto& [k, v] : values) {
    if (k == static_cast<uint32_t>(key)) {
      value = Loaded<Value>(v);
      return;
    }
  }
}

// The drift detector's settings: its method's alone, none without one.
template <typename Add>
void AddDriftParameters(const DriftOptions& d, Add&& add) {
  using Method = DriftOptions::Method;
  if (d.method == Method::kNone) return;
  add(Key::kDriftMethod, Stored(d.method));
  add(Key::kDriftInput, Stored(d.input));
  switch (d.method) {
    case Method::kNone:
      break;
    case Method::kAdwin:
      add(Key::kAdwinDelta, d.adwin_delta);
      add(Key::kAdwinWarningDelta, d.adwin_warning_delta);
      add(Key::kAdwinClock, Stored(d.adwin_clock));
      break;
    case Method::kPageHinkley:
      add(Key::kPageHinkleyMinInstances, Stored(d.page_hinkley.min_instances));
      add(Key::kPageHinkleyDelta, d.page_hinkley.delta);
      add(Key::kPageHinkleyThreshold, d.page_hinkley.threshold);
      add(Key::kPageHinkleyAlpha, d.page_hinkley.alpha);
      add(Key::kPageHinkleyWarningThreshold, d.page_hinkley.warning_threshold);
      break;
    case Method::kDdm:
      add(Key::kDdmWarmStart, Stored(d.ddm.warm_start));
      add(Key::kDdmWarningLevel, d.ddm.warning_level);
      add(Key::kDdmDriftLevel, d.ddm.drift_level);
      break;
  }
  if (d.challenge) {
    add(Key::kChallenge, Stored(d.challenge));
    add(Key::kChallengeAlpha, d.challenge_alpha);
  }
}

void LoadDriftParameters(const KeyedValues& values, DriftOptions& d) {
  d = DriftOptions();
  Load(values, Key::kDriftMethod, d.method);
  Load(values, Key::kDriftInput, d.input);
  Load(values, Key::kAdwinDelta, d.adwin_delta);
  Load(values, Key::kAdwinWarningDelta, d.adwin_warning_delta);
  Load(values, Key::kAdwinClock, d.adwin_clock);
  Load(values, Key::kPageHinkleyMinInstances, d.page_hinkley.min_instances);
  Load(values, Key::kPageHinkleyDelta, d.page_hinkley.delta);
  Load(values, Key::kPageHinkleyThreshold, d.page_hinkley.threshold);
  Load(values, Key::kPageHinkleyAlpha, d.page_hinkley.alpha);
  Load(values, Key::kPageHinkleyWarningThreshold,
       d.page_hinkley.warning_threshold);
  Load(values, Key::kDdmWarmStart, d.ddm.warm_start);
  Load(values, Key::kDdmWarningLevel, d.ddm.warning_level);
  Load(values, Key::kDdmDriftLevel, d.ddm.drift_level);
  Load(values, Key::kChallenge, d.challenge);
  Load(values, Key::kChallengeAlpha, d.challenge_alpha);
}

}  // namespace

KeyedValues KeyedParameters(const ModelSpec& spec) {
  KeyedValues out;
  auto add = [&out](Key key, double value) {
    out.emplace_back(static_cast<uint32_t>(key), value);
  };
  add(Key::kOneVsRest, Stored(spec.one_vs_rest));
  add(Key::kStandardize, Stored(spec.standardize));
  add(Key::kHashBits, Stored(spec.hash_bits));
  add(Key::kFitIntercept, Stored(spec.fit_intercept));
  add(Key::kProgressWindow, Stored(spec.progress_window));
  add(Key::kWindowLosses, Stored(spec.window_losses));
  AddDriftParameters(spec.drift, add);
  if (Enabled(spec.sampling)) {
    add(Key::kSamplingB, spec.sampling.b);
    add(Key::kSamplingSeed, Stored(spec.sampling.seed));
    add(Key::kSamplingUnweighted, Stored(spec.sampling.unweighted));
  }
  std::visit(
      [&](const auto& params) {
        ForEachParameter(params, [&](const auto& value, const auto& parameter) {
          add(parameter.key, Stored(value));
        });
      },
      spec.algorithm);
  return out;
}

bool SetParameters(uint32_t algorithm, const KeyedValues& values,
                   ModelSpec& spec) {
  spec.one_vs_rest = false;
  spec.standardize = false;
  spec.hash_bits = 0;
  spec.fit_intercept = true;
  spec.progress_window = kDefaultProgressWindow;
  // A model stored before the key was kept its window's losses.
  spec.window_losses = true;
  Load(values, Key::kOneVsRest, spec.one_vs_rest);
  Load(values, Key::kStandardize, spec.standardize);
  Load(values, Key::kHashBits, spec.hash_bits);
  Load(values, Key::kFitIntercept, spec.fit_intercept);
  Load(values, Key::kProgressWindow, spec.progress_window);
  Load(values, Key::kWindowLosses, spec.window_losses);
  LoadDriftParameters(values, spec.drift);
  spec.sampling = SelectiveSampling();
  Load(values, Key::kSamplingB, spec.sampling.b);
  Load(values, Key::kSamplingSeed, spec.sampling.seed);
  Load(values, Key::kSamplingUnweighted, spec.sampling.unweighted);
  if (algorithm < 1 || algorithm > std::variant_size_v<AlgorithmParams>) {
    return false;
  }
  spec.algorithm = DefaultParams(static_cast<Algorithm>(algorithm));
  std::visit(
      [&](auto& params) {
        ForEachParameter(params, [&](auto& value, const auto& parameter) {
          Load(values, parameter.key, value);
        });
      },
      spec.algorithm);
  return true;
}

KeyedValues KeyedDriftParameters(const DriftOptions& drift) {
  KeyedValues out;
  AddDriftParameters(drift, [&out](Key key, double value) {
    out.emplace_back(static_cast<uint32_t>(key), value);
  });
  return out;
}

DriftOptions DriftFromParameters(const KeyedValues& values) {
  DriftOptions drift;
  LoadDriftParameters(values, drift);
  return drift;
}

}  // namespace halfspace
