#include "core/model/shared_spec.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"

namespace halfspace {
namespace {

// Appends the bytes of a number (a parameter, a count, a flag).
template <typename T>
void AppendValue(std::string& out, T value) {
  static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Appends a string with its length, so that ("ab", "c") and ("a", "bc")
// differ.
void AppendString(std::string& out, const std::string& s) {
  AppendValue(out, s.size());
  out.append(s);
}

// The specs in use, by identity. An entry whose spec no model holds any
// more is swept when the table has doubled since the last sweep.
class SpecTable {
 public:
  std::shared_ptr<const SpecAndSpace> Share(const ModelSpec& spec) {
    std::string identity = SpecIdentity(spec);
    MutexLock lock(mu_);
    auto [it, added] = specs_.try_emplace(std::move(identity));
    if (std::shared_ptr<const SpecAndSpace> shared = it->second.lock()) {
      return shared;
    }
    auto shared = std::make_shared<const SpecAndSpace>(spec);
    it->second = shared;
    if (added && specs_.size() >= 2 * swept_size_) Sweep();
    return shared;
  }

 private:
  void Sweep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::erase_if(specs_,
                   [](const auto& entry) { return entry.second.expired(); });
    swept_size_ = std::max<size_t>(specs_.size(), kFirstSweep);
  }

  static constexpr size_t kFirstSweep = 64;
  Mutex mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const SpecAndSpace>> specs_
      ABSL_GUARDED_BY(mu_);
  size_t swept_size_ ABSL_GUARDED_BY(mu_) = kFirstSweep;
};

}  // namespace

std::string SpecIdentity(const ModelSpec& spec) {
  // A field added to ModelSpec, DriftOptions, SelectiveSampling, Replication
  // or ReplicaLimits must be appended below: two specs differing in it must
  // not be shared.
  static_assert(sizeof(ModelSpec) == 392 && sizeof(DriftOptions) == 104 &&
                    sizeof(SelectiveSampling) == 16 &&
                    sizeof(Replication) == 136 && sizeof(ReplicaLimits) == 32,
                "a spec's field is missing from its identity");
  std::string out;
  AppendValue(out, spec.algorithm.index());
  std::visit(
      [&out](const auto& params) {
        ForEachParameter(params, [&out](const auto& value, const auto&) {
          AppendValue(out, value);
        });
      },
      spec.algorithm);
  AppendValue(out, spec.dimension);
  AppendValue(out, spec.one_vs_rest);
  AppendValue(out, spec.standardize);
  AppendValue(out, spec.fit_intercept);
  AppendValue(out, spec.progress_window);
  AppendValue(out, spec.window_losses);
  const DriftOptions& d = spec.drift;
  AppendValue(out, d.method);
  AppendValue(out, d.input);
  AppendValue(out, d.adwin_delta);
  AppendValue(out, d.adwin_warning_delta);
  AppendValue(out, d.adwin_clock);
  AppendValue(out, d.page_hinkley.min_instances);
  AppendValue(out, d.page_hinkley.delta);
  AppendValue(out, d.page_hinkley.threshold);
  AppendValue(out, d.page_hinkley.alpha);
  AppendValue(out, d.page_hinkley.warning_threshold);
  AppendValue(out, d.ddm.warm_start);
  AppendValue(out, d.ddm.warning_level);
  AppendValue(out, d.ddm.drift_level);
  AppendValue(out, d.challenge);
  AppendValue(out, d.challenge_alpha);
  AppendValue(out, spec.sampling.b);
  AppendValue(out, spec.sampling.seed);
  AppendValue(out, spec.sampling.unweighted);
  AppendValue(out, spec.hash_bits);
  AppendValue(out, spec.interactions.size());
  for (const Interaction& interaction : spec.interactions) {
    AppendString(out, interaction.first);
    AppendString(out, interaction.second);
  }
  const Replication& r = spec.replication;
  AppendString(out, r.stream);
  AppendString(out, r.subject);
  AppendValue(out, r.replicas);
  AppendString(out, r.creation);
  AppendValue(out, r.limits.max_model_bytes);
  AppendValue(out, r.limits.max_classes);
  AppendValue(out, r.limits.max_named_features);
  AppendValue(out, r.limits.max_interaction_products);
  return out;
}

std::shared_ptr<const SpecAndSpace> SharedSpec(const ModelSpec& spec) {
  static SpecTable* const table = new SpecTable;  // never destroyed
  return table->Share(spec);
}

}  // namespace halfspace
