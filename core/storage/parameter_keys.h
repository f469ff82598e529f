// A model's specification as numbers under keys that never change meaning:
// how every model file format and log record stores an algorithm's
// parameters and the feature options. Each algorithm names its parameters'
// keys beside its update rule (see core/algorithms/parameters.h); this
// stores and reads them for every algorithm alike. A later version may add
// a key and still read older files (a missing key keeps its default).

#ifndef HALFSPACE_CORE_STORAGE_PARAMETER_KEYS_H_
#define HALFSPACE_CORE_STORAGE_PARAMETER_KEYS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/model/model_spec.h"

namespace halfspace {

using KeyedValues = std::vector<std::pair<uint32_t, double>>;

// The spec's algorithm parameters and feature options (not its dimension or
// interactions), keyed.
KeyedValues KeyedParameters(const ModelSpec& spec);

// Sets the spec's algorithm (numbered as Algorithm) and options from keyed
// values; a missing key keeps its default, an unknown key is ignored. False
// for an unknown algorithm.
bool SetParameters(uint32_t algorithm, const KeyedValues& values,
                   ModelSpec& spec);

// The drift settings alone, keyed as KeyedParameters keys them (none for
// no detector), and back.
KeyedValues KeyedDriftParameters(const DriftOptions& drift);
DriftOptions DriftFromParameters(const KeyedValues& values);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_PARAMETER_KEYS_H_
