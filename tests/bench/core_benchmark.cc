// halfspace_core_benchmark: the core's learning, in process, against a bare
// loop of the same arithmetic in the same floating-point order (so the two
// end with bit-identical weights; each benchmark checks that it does).
//
//   build/tests/halfspace_core_benchmark [--benchmark_filter=REGEX]
//       [--benchmark_min_time=0.5] [--benchmark_out=FILE.json ...]
//
// Each Model benchmark prepares and learns batches of 1000 examples as the
// Train stream does. After Google Benchmark's table, a second table gives
// each Model benchmark as a fraction of its bare loop from the same run,
// and a third the heap a model takes in process, against its raw weights.
// Numbers, not assertions.

#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/algorithms/logistic_regression.h"
#include "core/model/model.h"

namespace halfspace {
namespace {

constexpr size_t kBatch = 1000;
constexpr int kExamples = 20000;  // per pass; passes repeat over them

// Examples with `nonzeros` features each, dense (d = nonzeros) or sparse
// (nonzeros of d coordinates, ascending), labeled by a noisy hyperplane.
struct Data {
  int64_t dimension;
  bool sparse;
  std::vector<std::vector<double>> values;
  std::vector<std::vector<uint32_t>> indices;
  std::vector<int> labels;
};

Data MakeData(int64_t dimension, int nonzeros, bool sparse) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  Data data{dimension, sparse, {}, {}, {}};
  for (int i = 0; i < kExamples; ++i) {
    std::vector<double> x(nonzeros);
    std::vector<uint32_t> index(sparse ? nonzeros : 0);
    double s = 0;
    for (int k = 0; k < nonzeros; ++k) {
      x[k] = normal(rng);
      const int64_t j = sparse ? (dimension / nonzeros) * k +
                                     int64_t(rng() % (dimension / nonzeros))
                               : k;
      if (sparse) index[k] = static_cast<uint32_t>(j);
      s += x[k] * (j % 3 - 1);
    }
    data.labels.push_back(s + 0.3 * normal(rng) >= 0 ? 1 : -1);
    data.values.push_back(std::move(x));
    data.indices.push_back(std::move(index));
  }
  return data;
}

const Data& DataFor(int64_t dimension, int nonzeros, bool sparse) {
  static std::map<std::tuple<int64_t, int, bool>, Data> cache;
  auto key = std::make_tuple(dimension, nonzeros, sparse);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, MakeData(dimension, nonzeros, sparse)).first;
  }
  return it->second;
}

// The bare loops: the core's arithmetic for one example, written flat.
struct BarePerceptron {
  void Learn(const double* x, const uint32_t* index, int n, int y) {
    double f = 0.0;
    for (int k = 0; k < n; ++k) f += w[index ? index[k] : k] * x[k];
    f += b;
    if (y * f <= 0.0) {
      for (int k = 0; k < n; ++k) w[index ? index[k] : k] += y * x[k];
      b += y;
    }
  }
  std::vector<double> Weights() const { return w; }
  std::vector<double> w;
  double b = 0.0;
};

struct BareLogistic {
  void Learn(const double* x, const uint32_t* index, int n, int y) {
    double f = 0.0;
    for (int k = 0; k < n; ++k) f += w[index ? index[k] : k] * x[k];
    f += b;
    const double t = (y + 1) / 2;
    const double step = eta * (t - Sigmoid(f));
    for (int k = 0; k < n; ++k) w[index ? index[k] : k] += step * x[k];
    b += step;
  }
  std::vector<double> Weights() const { return w; }
  std::vector<double> w;
  double b = 0.0;
  double eta = 0.1;
};

// scikit-learn's SGD: hinge loss, L2 penalty, the "optimal" schedule, no
// averaging; w = wscale·v.
struct BareSgd {
  explicit BareSgd(double alpha_) : alpha(alpha_) {
    // scikit-learn's initial step: typical_w / max(1, hinge'(-typical_w)).
    const double typical_w = std::sqrt(1.0 / std::sqrt(alpha));
    t0 = 1.0 / (typical_w * alpha);
  }
  void Learn(const double* x, const uint32_t* index, int n, int y) {
    double dot = 0.0;
    for (int k = 0; k < n; ++k) dot += w[index ? index[k] : k] * x[k];
    const double f = wscale * dot + b;
    const double eta = 1.0 / (alpha * (t0 + t - 1.0));
    const double derivative = y * f < 1.0 ? -y : 0.0;
    const double step = -eta * derivative;
    wscale *= std::max(0.0, 1.0 - eta * alpha);
    if (step != 0.0) {
      for (int k = 0; k < n; ++k) {
        w[index ? index[k] : k] += step / wscale * x[k];
      }
      b += step;
    }
    t += 1.0;
  }
  // The weights, as the model reports them.
  std::vector<double> Weights() const {
    std::vector<double> out(w.size());
    for (size_t j = 0; j < w.size(); ++j) out[j] = wscale * w[j];
    return out;
  }
  double alpha, t0 = 0;
  std::vector<double> w;  // v
  double b = 0.0, wscale = 1.0, t = 1.0;
};

// FTRL-Proximal (McMahan et al. 2013): α = 0.1, β = 1, λ1 = 0.1, λ2 = 0,
// the bias unregularized; w kept formed from z and n.
struct BareFtrl {
  void Learn(const double* x, const uint32_t* index, int n, int y) {
    if (z.size() != w.size()) {
      z.assign(w.size(), 0.0);
      squares.assign(w.size(), 0.0);
    }
    double f = 0.0;
    for (int k = 0; k < n; ++k) f += w[index ? index[k] : k] * x[k];
    f += b;
    const double t = (y + 1) / 2;
    const double g = 1.0 / (1.0 + std::exp(-f)) - t;
    for (int k = 0; k < n; ++k) {
      const uint32_t j = index ? index[k] : k;
      Step(g * x[k], l1, w[j], z[j], squares[j]);
    }
    Step(g, 0.0, b, zb, squares_b);
  }
  void Step(double g, double l, double& wj, double& zj, double& nj) const {
    const double root = std::sqrt(nj + g * g);
    const double sigma = (root - std::sqrt(nj)) / alpha;
    zj += g - sigma * wj;
    nj += g * g;
    wj = std::fabs(zj) <= l
             ? 0.0
             : ((zj < 0.0 ? -l : l) - zj) / ((beta + root) / alpha);
  }
  std::vector<double> Weights() const { return w; }
  std::vector<double> w, z, squares;
  double b = 0.0, zb = 0.0, squares_b = 0.0;
  double alpha = 0.1, beta = 1.0, l1 = 0.1;
};

AlgorithmParams Ftrl() { return FtrlProximalParams{0.1, 1.0, 0.1, 0.0}; }

// One batch of the bare loop, from example `i` on (advanced).
template <typename Bare>
void BareBatch(Bare& bare, const Data& data, size_t& i) {
  for (size_t k = 0; k < kBatch; ++k, i = (i + 1) % data.labels.size()) {
    bare.Learn(data.values[i].data(),
               data.sparse ? data.indices[i].data() : nullptr,
               static_cast<int>(data.values[i].size()), data.labels[i]);
  }
}

template <typename Bare>
void RunBare(benchmark::State& state, Bare bare, const Data& data) {
  bare.w.assign(data.dimension, 0.0);
  size_t i = 0, learned = 0;
  for (auto _ : state) {
    BareBatch(bare, data, i);
    learned += kBatch;
  }
  benchmark::DoNotOptimize(bare.b);
  state.SetItemsProcessed(learned);
}

// Prepares and learns one batch as the Train stream does, from example `i`
// on (advanced).
struct ModelBatch {
  void operator()(Model& model, const Data& data, size_t& i) {
    for (size_t k = 0; k < kBatch; ++k, i = (i + 1) % data.labels.size()) {
      Example& e = batch[k];
      e.features = FeatureInput();
      if (data.sparse) {
        e.features.has_sparse = true;
        e.features.sparse_indices = data.indices[i];
        e.features.sparse_values = data.values[i];
      } else {
        e.features.dense = data.values[i];
      }
      e.label = data.labels[i];
      model.Prepare(e, prepared[k]);
    }
    benchmark::DoNotOptimize(model.Learn(prepared, absl::MakeSpan(outcomes)));
  }
  std::vector<Example> batch = std::vector<Example>(kBatch);
  std::vector<PreparedExample> prepared = std::vector<PreparedExample>(kBatch);
  std::vector<ExampleOutcome> outcomes = std::vector<ExampleOutcome>(kBatch);
};

void RunModel(benchmark::State& state, const ModelSpec& spec,
              const Data& data) {
  std::unique_ptr<Model> model = *Model::Create("bench", spec);
  ModelBatch learn;
  size_t i = 0, learned = 0;
  for (auto _ : state) {
    learn(*model, data, i);
    learned += kBatch;
  }
  state.SetItemsProcessed(learned);
}

// Whether the Model and the bare loop end 30 batches with the very same
// weights: the premise of comparing them.
template <typename Bare>
bool SameWeights(Bare bare, const ModelSpec& spec, const Data& data) {
  bare.w.assign(data.dimension, 0.0);
  std::unique_ptr<Model> model = *Model::Create("check", spec);
  ModelBatch learn;
  size_t i = 0, j = 0;
  for (int batch = 0; batch < 30; ++batch) {
    BareBatch(bare, data, i);
    learn(*model, data, j);
  }
  const ModelSnapshot snapshot = model->Snapshot();
  return snapshot.weights.w == bare.Weights() && snapshot.weights.b == bare.b;
}

std::map<std::string, bool>& Checks() {
  static std::map<std::string, bool> checks;
  return checks;
}

AlgorithmParams Logistic() {
  LogisticRegressionParams p;
  p.learning_rate = 0.1;
  return p;
}

AlgorithmParams Sgd() {
  SgdParams p;
  p.options.alpha = 1e-4;
  return p;
}

// Registers the bare loop and the Model for one algorithm and shape.
template <typename Bare>
void Register(const std::string& algorithm, Bare bare,
              const AlgorithmParams& params, int64_t dimension, int nonzeros,
              bool sparse) {
  const std::string shape =
      sparse ? absl::StrCat("sparse/d=", dimension, "/nnz=", nonzeros)
             : absl::StrCat("dense/d=", dimension);
  Checks()[absl::StrCat(algorithm, "/", shape)] = SameWeights(
      bare, DenseSpec(params, dimension), DataFor(dimension, nonzeros, sparse));
  benchmark::RegisterBenchmark(
      absl::StrCat("bare/", algorithm, "/", shape).c_str(),
      [=](benchmark::State& state) {
        RunBare(state, bare, DataFor(dimension, nonzeros, sparse));
      });
  benchmark::RegisterBenchmark(
      absl::StrCat("model/", algorithm, "/", shape).c_str(),
      [=](benchmark::State& state) {
        RunModel(state, DenseSpec(params, dimension),
                 DataFor(dimension, nonzeros, sparse));
      });
}

// Named features hashed into 2^20 buckets, as a text pipeline sends them:
// SGD with log loss, 30 features per example, and optionally an interaction
// of two groups of 30.
void HashedNamed(benchmark::State& state, bool interaction) {
  ModelSpec spec;
  SgdParams params;
  params.options.loss = LossKind::kLog;
  spec.algorithm = params;
  spec.dimension = 0;
  spec.hash_bits = 20;
  if (interaction) spec.interactions.push_back(Interaction{"a", "b"});
  std::unique_ptr<Model> model = *Model::Create("hashed", spec);
  std::vector<std::string> words;
  for (int k = 0; k < 5000; ++k) words.push_back(absl::StrCat("w", k));
  std::mt19937 rng(1);
  constexpr int kDistinct = 64;  // batches of examples, reused
  std::vector<std::vector<NamedFeature>> named(kDistinct * kBatch);
  for (auto& features : named) {
    for (int f = 0; f < 30; ++f) {
      features.push_back({"a", words[rng() % words.size()], 1.0});
      if (interaction)
        features.push_back({"b", words[rng() % words.size()], 1.0});
    }
  }
  std::vector<Example> batch(kBatch);
  std::vector<PreparedExample> prepared(kBatch);
  std::vector<ExampleOutcome> outcomes(kBatch);
  size_t i = 0, learned = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < kBatch; ++k, i = (i + 1) % named.size()) {
      batch[k].features = FeatureInput();
      batch[k].features.named = named[i];
      batch[k].label = named[i][0].name < named[i][1].name ? 1 : -1;
      model->Prepare(batch[k], prepared[k]);
    }
    benchmark::DoNotOptimize(model->Learn(prepared, absl::MakeSpan(outcomes)));
    learned += kBatch;
  }
  state.SetItemsProcessed(learned);
}

// Collects each run's rate, for the ratio table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) rates_[run.benchmark_name()] = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    std::printf(
        "\n| Model vs bare loop, same run | Model | bare | ratio | same "
        "weights |\n");
    std::printf("|---|---:|---:|---:|---|\n");
    for (const auto& [name, rate] : rates_) {
      if (name.rfind("model/", 0) != 0) continue;
      auto bare = rates_.find("bare/" + name.substr(6));
      if (bare == rates_.end()) continue;
      std::printf("| %s | %.2fM/s | %.2fM/s | %.0f%% | %s |\n",
                  name.substr(6).c_str(), rate / 1e6, bare->second / 1e6,
                  100 * rate / bare->second,
                  Checks()[name.substr(6)] ? "yes" : "NO");
    }
  }

 private:
  std::map<std::string, double> rates_;
};

// The heap 10,000 perceptrons of d = 100 take in process, per model, with
// the defaults and with the window's losses: the core's part of what the
// server's --sweep=models reads from its resident memory.
void PrintModelMemory() {
  constexpr int kModels = 10000;
  constexpr int64_t kDimension = 100;
  const double raw = (kDimension + 1) * sizeof(double);
  std::printf("\n%-40s %12s %8s\n", "model memory (heap, in process)",
              "bytes/model", "x raw");
  for (const bool window_losses : {false, true}) {
    ModelSpec spec = DenseSpec(PerceptronParams(), kDimension);
    spec.window_losses = window_losses;
    std::vector<std::unique_ptr<Model>> models;
    models.reserve(kModels);
    const size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kModels; ++i) {
      models.push_back(*Model::Create(absl::StrCat("m", i), spec));
    }
    const double per_model =
        static_cast<double>(mallinfo2().uordblks - before) / kModels;
    std::printf("%-40s %12.0f %8.2f\n",
                window_losses ? "perceptron d=100, window_losses"
                              : "perceptron d=100, defaults",
                per_model, per_model / raw);
  }
}

}  // namespace
}  // namespace halfspace

int main(int argc, char** argv) {
  using namespace halfspace;
  for (int64_t d : {20, 100, 1000}) {
    Register("perceptron", BarePerceptron(), PerceptronParams(), d, d, false);
    Register("logistic", BareLogistic(), Logistic(), d, d, false);
    Register("sgd", BareSgd(1e-4), Sgd(), d, d, false);
    Register("ftrl", BareFtrl(), Ftrl(), d, d, false);
  }
  for (int nonzeros : {20, 100}) {
    Register("perceptron", BarePerceptron(), PerceptronParams(), 100000,
             nonzeros, true);
    Register("logistic", BareLogistic(), Logistic(), 100000, nonzeros, true);
    Register("sgd", BareSgd(1e-4), Sgd(), 100000, nonzeros, true);
    Register("ftrl", BareFtrl(), Ftrl(), 100000, nonzeros, true);
  }
  benchmark::RegisterBenchmark(
      "hashed/sgd_log/30_named",
      [](benchmark::State& s) { HashedNamed(s, false); });
  benchmark::RegisterBenchmark(
      "hashed/sgd_log/interaction_30x30",
      [](benchmark::State& s) { HashedNamed(s, true); });
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  PrintModelMemory();
  benchmark::Shutdown();
  return 0;
}
