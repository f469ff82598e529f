#include "core/features/feature_space.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/features/murmur_hash.h"

namespace halfspace {
namespace {

constexpr uint32_t kInteractionPrime = 16777619u;

// The positions of the features of `group` in `named`, into `members`.
void GroupMembers(absl::Span<const NamedFeature> named, absl::string_view group,
                  std::vector<uint32_t>& members) {
  members.clear();
  for (size_t i = 0; i < named.size(); ++i) {
    if (named[i].group == group) members.push_back(static_cast<uint32_t>(i));
  }
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

int64_t FeatureSpace::InteractionProducts(
    absl::Span<const NamedFeature> named) const {
  int64_t products = 0;
  for (const Interaction& pair : interactions_) {
    int64_t first = 0, second = 0;
    for (const NamedFeature& f : named) {
      first += f.group == pair.first ? 1 : 0;
      second += f.group == pair.second ? 1 : 0;
    }
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

void FeatureSpace::AppendHashed(absl::Span<const NamedFeature> named,
                                Scratch& scratch) const {
  std::vector<std::pair<uint32_t, double>>& entries = scratch.entries;
  std::vector<uint32_t>& hashes = scratch.hashes;
  hashes.clear();
  // A group's hash seeds its names' hashes; features of one group tend to
  // come together, so it is hashed again only when the group changes.
  absl::string_view group;
  uint32_t seed = MurmurHash3(group, 0);
  for (const NamedFeature& f : named) {
    if (f.group != group) {
      group = f.group;
      seed = MurmurHash3(group, 0);
    }
    hashes.push_back(MurmurHash3(f.name, seed));
    entries.emplace_back(dimension_ + (hashes.back() & bucket_mask_), f.value);
  }
  for (const Interaction& pair : interactions_) {
    GroupMembers(named, pair.first, scratch.first);
    GroupMembers(named, pair.second, scratch.second);
    const bool self = pair.first == pair.second;
    for (const uint32_t i : scratch.first) {
      for (const uint32_t j : scratch.second) {
        if (self && j <= i) continue;
        const uint32_t h = (hashes[i] * kInteractionPrime) ^ hashes[j];
        entries.emplace_back(dimension_ + (h & bucket_mask_),
                             named[i].value * named[j].value);
      }
    }
  }
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
  if (!input.named.empty() && bucket_mask_ == 0) {
    return absl::InvalidArgumentError(
        "named features need hash buckets: create the model with hash_bits");
  }
  absl::StatusOr<bool> ascending = CheckSparse(input, has_dense);
  if (!ascending.ok()) return ascending.status();
  if (*ascending && input.named.empty()) {
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
  AppendHashed(input.named, scratch);
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
