#include "core/features/feature_space.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "core/features/feature_hash.h"
#include "core/features/murmur_hash.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// FeatureSpace::Prepare as a StatusOr, for short assertions.
absl::StatusOr<Features> PrepareOr(const FeatureSpace& space,
                                   const FeatureInput& input,
                                   FeatureSpace::Scratch& scratch) {
  Features x;
  if (absl::Status s = space.Prepare(input, scratch, x); !s.ok()) return s;
  return x;
}

TEST(MurmurHash3Test, MatchesTheReferenceVectors) {
  EXPECT_EQ(MurmurHash3("", 0), 0u);
  EXPECT_EQ(MurmurHash3("", 1), 0x514E28B7u);
  EXPECT_EQ(MurmurHash3("hello", 0), 0x248BFA47u);
  EXPECT_EQ(MurmurHash3("The quick brown fox jumps over the lazy dog", 0),
            0x2E4FF723u);
}

TEST(FeatureSpaceTest, DenseInputPassesThroughWithAnExactDimensionCheck) {
  FeatureSpace space(3, 0, {});
  FeatureSpace::Scratch scratch;
  const std::vector<double> x = {1, 2, 3}, short_x = {1, 2};
  absl::StatusOr<Features> f = PrepareOr(space, x, scratch);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->dense.data(), x.data());  // no copy
  EXPECT_TRUE(f->indices.empty());
  EXPECT_THAT(
      PrepareOr(space, short_x, scratch).status().message(),
      HasSubstr("features has 2 values but the model's dimension is 3"));
  EXPECT_FALSE(PrepareOr(space, FeatureInput(), scratch).ok());
}

TEST(FeatureSpaceTest, SparseEntriesAreSortedAndSummedAndChecked) {
  FeatureSpace space(2, 2, {});  // width 2 + 4
  EXPECT_EQ(space.width(), 6);
  FeatureSpace::Scratch scratch;
  const std::vector<uint32_t> indices = {5, 1, 5};
  const std::vector<double> values = {1.5, -2, 0.5};
  FeatureInput input;
  input.sparse_indices = indices;
  input.sparse_values = values;
  absl::StatusOr<Features> f = PrepareOr(space, input, scratch);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->indices, ElementsAre(1, 5));
  EXPECT_THAT(f->values, ElementsAre(-2, 2));

  const std::vector<double> dense = {7, 8};
  input.dense = dense;  // with dense values, index 1 overlaps them
  EXPECT_THAT(PrepareOr(space, input, scratch).status().message(),
              HasSubstr("sparse index 1 is out of range"));
  const std::vector<uint32_t> past_the_end = {6};
  const std::vector<double> one = {1};
  input.sparse_indices = past_the_end;
  input.sparse_values = one;
  EXPECT_FALSE(PrepareOr(space, input, scratch).ok());
  input.sparse_values = values;  // 3 values for 1 index
  EXPECT_THAT(PrepareOr(space, input, scratch).status().message(),
              HasSubstr("1 indices but 3 values"));
  const std::vector<uint32_t> three = {2, 3, 4};
  input.dense = {};
  input.sparse_indices = three;  // 3 indices for 1 value
  input.sparse_values = one;
  EXPECT_THAT(PrepareOr(space, input, scratch).status().message(),
              HasSubstr("3 indices but 1 values"));
}

TEST(FeatureSpaceTest, NamedFeaturesHashIntoBucketsAndInteract) {
  FeatureSpace space(1, 10, {{"a", "b"}, {"a", "a"}});
  FeatureSpace::Scratch scratch;
  const std::vector<NamedFeature> named = {
      {"a", "x", 2.0}, {"a", "y", 3.0}, {"b", "z", 5.0}};
  const std::vector<double> dense = {0.5};
  FeatureInput input(dense);
  input.named = named;
  absl::StatusOr<Features> f = PrepareOr(space, input, scratch);
  ASSERT_TRUE(f.ok()) << f.status();
  auto bucket = [](absl::string_view group, absl::string_view name) {
    return 1 + (MurmurHash3(name, MurmurHash3(group, 0)) & 1023);
  };
  const uint32_t hx = MurmurHash3("x", MurmurHash3("a", 0));
  const uint32_t hy = MurmurHash3("y", MurmurHash3("a", 0));
  const uint32_t hz = MurmurHash3("z", MurmurHash3("b", 0));
  auto cross = [](uint32_t h1, uint32_t h2) {
    return 1 + (((h1 * 16777619u) ^ h2) & 1023);
  };
  // 3 features, a×b gives x·z and y·z, a×a gives x·y once: 6 entries.
  std::vector<std::pair<uint32_t, double>> expected = {
      {bucket("a", "x"), 2.0}, {bucket("a", "y"), 3.0}, {bucket("b", "z"), 5.0},
      {cross(hx, hz), 10.0},   {cross(hy, hz), 15.0},   {cross(hx, hy), 6.0}};
  double total = 0;
  for (const auto& [index, value] : expected) total += value;
  double got = 0;
  for (size_t k = 0; k < f->indices.size(); ++k) {
    EXPECT_GE(f->indices[k], 1u);
    EXPECT_LT(f->indices[k], 1025u);
    got += f->values[k];
  }
  EXPECT_EQ(got, total);
  EXPECT_THAT(f->dense, ElementsAre(0.5));

  FeatureSpace no_buckets(1, 0, {});
  EXPECT_THAT(PrepareOr(no_buckets, input, scratch).status().message(),
              HasSubstr("named features need hash buckets"));
}

// Named features as a sender hashes them: each run of one group a
// HashedGroup, its values left out when all are 1. `hashes` and `values`
// hold the groups' data.
std::vector<HashedGroup> Hashed(absl::Span<const NamedFeature> named,
                                std::vector<std::vector<uint32_t>>& hashes,
                                std::vector<std::vector<double>>& values) {
  hashes.clear();
  values.clear();
  std::vector<absl::string_view> groups;
  for (size_t i = 0; i < named.size(); ++i) {
    if (i == 0 || named[i].group != named[i - 1].group) {
      groups.push_back(named[i].group);
      hashes.emplace_back();
      values.emplace_back();
    }
    hashes.back().push_back(
        FeatureHash(named[i].name, GroupSeed(named[i].group)));
    values.back().push_back(named[i].value);
  }
  std::vector<HashedGroup> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const bool ones = std::all_of(values[g].begin(), values[g].end(),
                                  [](double v) { return v == 1.0; });
    if (ones) values[g].clear();
    out.push_back({groups[g], hashes[g], values[g]});
  }
  return out;
}

// Expects `got` to hold `indices` and, bit for bit, `values`.
void ExpectBitIdentical(const Features& got,
                        const std::vector<uint32_t>& indices,
                        const std::vector<double>& values) {
  EXPECT_THAT(got.indices, ::testing::ElementsAreArray(indices));
  ASSERT_EQ(got.values.size(), values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    EXPECT_EQ(absl::bit_cast<uint64_t>(got.values[k]),
              absl::bit_cast<uint64_t>(values[k]))
        << "index " << got.indices[k];
  }
}

TEST(FeatureSpaceTest, HashedGroupsPrepareAsTheirNamedFeaturesBitForBit) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uniform(-2, 2);
  const FeatureSpace space(2, 8, {{"a", "b"}, {"a", "a"}, {"c", "c"}});
  std::vector<std::string> names;
  for (int k = 0; k < 40; ++k) names.push_back(absl::StrCat("f", k));
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    std::vector<NamedFeature> named;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      const char* group = k % 7 < 3 ? "a" : k % 7 < 5 ? "b" : "c";
      // Whole groups of ones in some rounds: their values are left out.
      const double value = round % 3 == 0 ? 1.0 : uniform(rng);
      named.push_back({group, names[rng() % names.size()], value});
    }
    const std::vector<double> dense = {0.25, -4};
    FeatureInput as_named(dense);
    as_named.named = named;
    FeatureSpace::Scratch scratch;
    absl::StatusOr<Features> expected = PrepareOr(space, as_named, scratch);
    ASSERT_TRUE(expected.ok()) << expected.status();
    const std::vector<uint32_t> indices(expected->indices.begin(),
                                        expected->indices.end());
    const std::vector<double> values(expected->values.begin(),
                                     expected->values.end());

    // All hashed; then the first features named and the rest hashed.
    for (const size_t split : {size_t{0}, named.size() / 2}) {
      std::vector<std::vector<uint32_t>> hash_data;
      std::vector<std::vector<double>> value_data;
      const std::vector<HashedGroup> hashed = Hashed(
          absl::MakeConstSpan(named).subspan(split), hash_data, value_data);
      FeatureInput input(dense);
      input.named = absl::MakeConstSpan(named).subspan(0, split);
      input.hashed = hashed;
      EXPECT_EQ(input.named_count(), named.size());
      EXPECT_EQ(space.InteractionProducts(input),
                space.InteractionProducts(as_named));
      FeatureSpace::Scratch other;
      absl::StatusOr<Features> got = PrepareOr(space, input, other);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectBitIdentical(*got, indices, values);
    }
  }
}

TEST(FeatureSpaceTest, HashedGroupsAreChecked) {
  const FeatureSpace space(0, 4, {});
  FeatureSpace::Scratch scratch;
  const std::vector<uint32_t> hashes = {7, 9};
  const std::vector<double> one_value = {2.0};
  std::vector<HashedGroup> hashed = {{"words", hashes, one_value}};
  FeatureInput input;
  input.hashed = hashed;
  EXPECT_THAT(PrepareOr(space, input, scratch).status().message(),
              HasSubstr("hashed group 'words' has 2 hashes but 1 values"));
  const std::vector<double> not_finite = {1.0, std::nan("")};
  hashed[0].values = not_finite;
  EXPECT_THAT(ValidateFinite(input).message(),
              HasSubstr("hashed feature 1 of group 'words' is nan"));
  hashed[0].values = {};
  ASSERT_TRUE(PrepareOr(space, input, scratch).ok());
  const FeatureSpace no_buckets(1, 0, {});
  EXPECT_THAT(PrepareOr(no_buckets, input, scratch).status().message(),
              HasSubstr("named features need hash buckets"));
}

// What Prepare must give for `entries` (index, value): sorted by index,
// then value, each index's values summed in that order.
std::pair<std::vector<uint32_t>, std::vector<double>> SortedAndSummed(
    std::vector<std::pair<uint32_t, double>> entries) {
  std::sort(entries.begin(), entries.end());
  std::vector<uint32_t> indices;
  std::vector<double> values;
  for (const auto& [index, value] : entries) {
    if (!indices.empty() && indices.back() == index) {
      values.back() += value;
    } else {
      indices.push_back(index);
      values.push_back(value);
    }
  }
  return {indices, values};
}

// Expects `space` to prepare `input` as SortedAndSummed(entries), bit for
// bit.
void ExpectPreparedAs(const FeatureSpace& space, const FeatureInput& input,
                      const std::vector<std::pair<uint32_t, double>>& entries) {
  const auto [indices, values] = SortedAndSummed(entries);
  FeatureSpace::Scratch scratch;
  absl::StatusOr<Features> f = PrepareOr(space, input, scratch);
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectBitIdentical(*f, indices, values);
}

TEST(FeatureSpaceTest, ManyEntriesAreSortedAndSummedAsOneSortWould) {
  // Hundreds of entries take the radix sort; few buckets make collisions,
  // and values with many bits make the order of each sum matter.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  FeatureSpace space(0, 6, {{"a", "b"}});
  std::vector<std::string> names;
  for (int k = 0; k < 60; ++k) names.push_back(absl::StrCat("n", k));
  std::vector<NamedFeature> named;
  for (int k = 0; k < 30; ++k) named.push_back({"a", names[k], uniform(rng)});
  for (int k = 30; k < 60; ++k) named.push_back({"b", names[k], uniform(rng)});
  std::vector<std::pair<uint32_t, double>> entries;
  std::vector<uint32_t> hashes;
  for (const NamedFeature& f : named) {
    hashes.push_back(MurmurHash3(f.name, MurmurHash3(f.group, 0)));
    entries.emplace_back(hashes.back() & 63, f.value);
  }
  for (int i = 0; i < 30; ++i) {
    for (int j = 30; j < 60; ++j) {
      entries.emplace_back(((hashes[i] * 16777619u) ^ hashes[j]) & 63,
                           named[i].value * named[j].value);
    }
  }
  for (int round = 0; round < 10; ++round) {  // whatever the input's order
    FeatureInput input;
    input.named = named;
    ExpectPreparedAs(space, input, entries);
    std::shuffle(named.begin(), named.end(), rng);
  }

  // Sparse input out of order: every size of sort (insertion for a few,
  // std::sort, radix for hundreds) into 4 indices, so that most collide;
  // then wide indices.
  for (const int n : {2, 17, 48, 49, 127, 128, 300, 500}) {
    const bool wide = n == 500;
    const FeatureSpace sparse_space(0, wide ? 24 : 2, {});
    std::vector<uint32_t> sparse_indices;
    std::vector<double> sparse_values;
    entries.clear();
    for (int k = 0; k < n; ++k) {
      sparse_indices.push_back(wide ? rng() % 300 * 50000 + (k % 7 == 0)
                                    : rng() % 4);
      sparse_values.push_back(uniform(rng));
      entries.emplace_back(sparse_indices.back(), sparse_values.back());
    }
    FeatureInput input;
    input.sparse_indices = sparse_indices;
    input.sparse_values = sparse_values;
    SCOPED_TRACE(absl::StrCat(n, " entries"));
    ExpectPreparedAs(sparse_space, input, entries);
  }
}

TEST(FeaturesTest, ForEachCoordinateVisitsZerosInOrder) {
  const std::vector<double> dense = {1, 2};
  const std::vector<uint32_t> indices = {3, 5};
  const std::vector<double> values = {4, 6};
  Features x(dense);
  x.indices = indices;
  x.values = values;
  std::vector<double> all;
  x.ForEachCoordinate(7, [&](size_t j, double v) {
    EXPECT_EQ(j, all.size());
    all.push_back(v);
  });
  EXPECT_THAT(all, ElementsAre(1, 2, 0, 4, 0, 6, 0));
  EXPECT_EQ(SquaredNorm(x), 1 + 4 + 16 + 36);
  const std::vector<double> w = {1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(Dot(w, x), 13);
}

// Every algorithm learns exactly the same from a vector sent dense or as its
// nonzeros.
TEST(FeatureSpaceTest, SparseAndDenseInputsTrainIdenticalModels) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(-1, 1);
  constexpr int kDim = 8;
  std::vector<std::vector<double>> dense(200, std::vector<double>(kDim, 0.0));
  std::vector<std::vector<uint32_t>> indices(dense.size());
  std::vector<std::vector<double>> values(dense.size());
  std::vector<int> labels;
  for (size_t i = 0; i < dense.size(); ++i) {
    for (int j = 0; j < kDim; ++j) {
      if (rng() % 3 != 0) continue;  // about a third nonzero
      dense[i][j] = uniform(rng);
      indices[i].push_back(j);
      values[i].push_back(dense[i][j]);
    }
    labels.push_back(dense[i][0] - dense[i][1] > 0 ? 1 : -1);
  }
  for (Algorithm a :
       {Algorithm::kPerceptron, Algorithm::kLogisticRegression,
        Algorithm::kAveragedPerceptron, Algorithm::kPassiveAggressive,
        Algorithm::kSgd, Algorithm::kPocketPerceptron}) {
    SCOPED_TRACE(static_cast<int>(a));
    ModelSpec spec;
    spec.algorithm = DefaultParams(a);
    spec.dimension = kDim;
    if (a == Algorithm::kLogisticRegression) {
      spec.algorithm = LogisticRegressionParams{1.0, 0.01};
    }
    if (a == Algorithm::kSgd) {  // L1 charges only stored coordinates
      std::get<SgdParams>(spec.algorithm).options.average_from = 5;
    }
    std::unique_ptr<Model> from_dense = *Model::Create("d", spec);
    std::unique_ptr<Model> from_sparse = *Model::Create("s", spec);
    std::vector<Example> dense_batch, sparse_batch;
    for (size_t i = 0; i < dense.size(); ++i) {
      dense_batch.push_back({FeatureInput(dense[i]), labels[i]});
      FeatureInput input;
      input.has_sparse = true;
      input.sparse_indices = indices[i];
      input.sparse_values = values[i];
      sparse_batch.push_back({input, labels[i]});
    }
    std::vector<ExampleOutcome> out(dense.size());
    ASSERT_TRUE(from_dense->Learn(dense_batch, absl::MakeSpan(out)).ok());
    ASSERT_TRUE(from_sparse->Learn(sparse_batch, absl::MakeSpan(out)).ok());
    for (const ExampleOutcome& o : out) ASSERT_TRUE(o.error.ok()) << o.error;
    ModelSnapshot d = from_dense->Snapshot(), s = from_sparse->Snapshot();
    EXPECT_EQ(d.weights.w, s.weights.w);
    EXPECT_EQ(d.weights.b, s.weights.b);
    EXPECT_EQ(d.state, s.state);
  }
}

}  // namespace
}  // namespace halfspace
