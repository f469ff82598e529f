#include "core/features/feature_space.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/features/feature_hash.h"

namespace halfspace {
namespace {

constexpr uint32_t kInteractionPrime = 16777619u;

// The positions of the features of `group` among `groups` (each feature's
// group), into `members`.
void GroupMembers(absl::Span<const absl::string_view> groups,
                  absl::string_view group, std::vector<uint32_t>& members) {
  members.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i] == group) members.push_back(static_cast<uint32_t>(i));
  }
}

// How many of `input`'s named features, hashed or not, are in `group`.
int64_t InGroup(const FeatureInput& input, absl::string_view group) {
  int64_t n = 0;
  for (const NamedFeature& f : input.named) n += f.group == group ? 1 : 0;
  for (const HashedGroup& g : input.hashed) {
    if (g.group == group) n += static_cast<int64_t>(g.hashes.size());
  }
  return n;
}

using Entry = std::pair<uint32_t, double>;

// Sorts `entries` by index, then value: as std::sort would leave them. A
// few (named features) by insertion; the hundreds that crossed groups make
// in O(n) by radix, least significant byte first, stable, skipping bytes
// all indices share, and then each run of one index (a hash collision) by
// value.
void SortEntries(std::vector<Entry>& entries, std::vector<Entry>& buffer) {
  constexpr size_t kRadixFrom = 128;   // below it, std::sort is as fast
  constexpr size_t kInsertionTo = 48;  // below it, an insertion sort wins
  if (entries.size() <= kInsertionTo) {
    // One mispredicted branch per entry, where std::sort's comparisons of
    // random keys mispredict half the time.
    for (size_t i = 1; i < entries.size(); ++i) {
      const Entry e = entries[i];
      size_t j = i;
      for (; j > 0 && e < entries[j - 1]; --j) entries[j] = entries[j - 1];
      entries[j] = e;
    }
    return;
  }
  if (entries.size() < kRadixFrom) {
    std::sort(entries.begin(), entries.end());
    return;
  }
  buffer.resize(entries.size());
  for (int shift = 0; shift < 32; shift += 8) {
    size_t count[257] = {};
    for (const Entry& e : entries) ++count[((e.first >> shift) & 0xFF) + 1];
    if (std::find(count + 1, count + 257, entries.size()) != count + 257) {
      continue;  // one byte value for all: nothing to reorder
    }
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (const Entry& e : entries)
      buffer[count[(e.first >> shift) & 0xFF]++] = e;
    entries.swap(buffer);
  }
  for (size_t i = 0; i < entries.size();) {
    size_t j = i + 1;
    while (j < entries.size() && entries[j].first == entries[i].first) ++j;
    if (j - i > 1) std::sort(entries.begin() + i, entries.begin() + j);
    i = j;
  }
}

}  // namespace

int64_t FeatureSpace::InteractionProducts(const FeatureInput& input) const {
  int64_t products = 0;
  for (const Interaction& pair : interactions_) {
    const int64_t first = InGroup(input, pair.first);
    const int64_t second = InGroup(input, pair.second);
    products +=
        pair.first == pair.second ? first * (first - 1) / 2 : first * second;
  }
  return products;
}

FeatureSpace::FeatureSpace(int64_t dimension, int hash_bits,
                           std::vector<Interaction> interactions)
    : dimension_(dimension),
      bucket_mask_(hash_bits > 0 ? (uint32_t{1} << hash_bits) - 1 : 0),
      width_(dimension + (hash_bits > 0 ? int64_t{1} << hash_bits : 0)),
      interactions_(std::move(interactions)) {}

absl::StatusOr<bool> FeatureSpace::CheckSparse(const FeatureInput& input,
                                               bool has_dense) const {
  bool ascending = true;
  for (size_t k = 0; k < input.sparse_indices.size(); ++k) {
    const uint32_t index = input.sparse_indices[k];
    if (index >= width_ || (has_dense && index < dimension_)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse index ", index, " is out of range: indices run from ",
          has_dense ? dimension_ : 0, " (past the dense features) to ",
          width_ - 1));
    }
    ascending = ascending && (k == 0 || input.sparse_indices[k - 1] < index);
  }
  return ascending;
}

void FeatureSpace::AppendHashed(const FeatureInput& input,
                                Scratch& scratch) const {
  std::vector<std::pair<uint32_t, double>>& entries = scratch.entries;
  std::vector<uint32_t>& hashes = scratch.hashes;
  const bool crossed = !interactions_.empty();
  hashes.clear();
  scratch.groups.clear();
  scratch.named_values.clear();
  // Interactions pair features by group, and read their hashes and values
  // back: kept only when there are any.
  auto add = [&](absl::string_view group, uint32_t hash, double value) {
    entries.emplace_back(dimension_ + (hash & bucket_mask_), value);
    hashes.push_back(hash);
    if (crossed) {
      scratch.groups.push_back(group);
      scratch.named_values.push_back(value);
    }
  };
  // A group's hash seeds its names' hashes; features of one group tend to
  // come together, so it is hashed again only when the group changes.
  absl::string_view group;
  uint32_t seed = GroupSeed(group);
  for (const NamedFeature& f : input.named) {
    if (f.group != group) {
      group = f.group;
      seed = GroupSeed(group);
    }
    add(f.group, FeatureHash(f.name, seed), f.value);
  }
  for (const HashedGroup& g : input.hashed) {
    for (size_t k = 0; k < g.hashes.size(); ++k) {
      add(g.group, g.hashes[k], g.values.empty() ? 1.0 : g.values[k]);
    }
  }
  const std::vector<double>& values = scratch.named_values;
  for (const Interaction& pair : interactions_) {
    GroupMembers(scratch.groups, pair.first, scratch.first);
    GroupMembers(scratch.groups, pair.second, scratch.second);
    const bool self = pair.first == pair.second;
    for (const uint32_t i : scratch.first) {
      for (const uint32_t j : scratch.second) {
        if (self && j <= i) continue;
        const uint32_t h = (hashes[i] * kInteractionPrime) ^ hashes[j];
        entries.emplace_back(dimension_ + (h & bucket_mask_),
                             values[i] * values[j]);
      }
    }
  }
}

absl::Status FeatureSpace::CheckHashed(const FeatureInput& input) const {
  for (const HashedGroup& g : input.hashed) {
    if (!g.values.empty() && g.values.size() != g.hashes.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hashed group ", Quoted(g.group), " has ", g.hashes.size(),
          " hashes but ", g.values.size(),
          " values: give one value per hash, or none for values of 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status FeatureSpace::Prepare(const FeatureInput& input, Scratch& scratch,
                                   Features& x) const {
  const bool has_dense = !input.dense.empty();
  if ((has_dense || input.only_dense()) &&
      static_cast<int64_t>(input.dense.size()) != dimension_) {
    return absl::InvalidArgumentError(
        absl::StrCat("features has ", input.dense.size(),
                     " values but the model's dimension is ", dimension_));
  }
  x = Features(input.dense);
  if (input.only_dense()) return absl::OkStatus();
  if (input.sparse_indices.size() != input.sparse_values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse features have ", input.sparse_indices.size(),
                     " indices but ", input.sparse_values.size(), " values"));
  }
  if (input.has_named() && bucket_mask_ == 0) {
    return absl::InvalidArgumentError(
        "named features need hash buckets: create the model with hash_bits");
  }
  if (absl::Status s = CheckHashed(input); !s.ok()) return s;
  absl::StatusOr<bool> ascending = CheckSparse(input, has_dense);
  if (!ascending.ok()) return ascending.status();
  if (*ascending && !input.has_named()) {
    // Already as sorting would leave them: use them where they are.
    x.indices = input.sparse_indices;
    x.values = input.sparse_values;
    return absl::OkStatus();
  }
  std::vector<std::pair<uint32_t, double>>& entries = scratch.entries;
  entries.clear();
  for (size_t k = 0; k < input.sparse_indices.size(); ++k) {
    entries.emplace_back(input.sparse_indices[k], input.sparse_values[k]);
  }
  AppendHashed(input, scratch);
  SortEntries(entries, scratch.sorted);  // by index, then value
  scratch.indices.clear();
  scratch.values.clear();
  for (const auto& [index, value] : entries) {
    if (!scratch.indices.empty() && scratch.indices.back() == index) {
      scratch.values.back() += value;
    } else {
      scratch.indices.push_back(index);
      scratch.values.push_back(value);
    }
  }
  x.indices = scratch.indices;
  x.values = scratch.values;
  return absl::OkStatus();
}

}  // namespace halfspace
