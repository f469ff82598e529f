// halfspace_benchmark: prints throughput and latency numbers; asserts nothing.
//
//   build/tests/halfspace_benchmark [--examples=N] [--dimension=D]
//
// Runs an in-process server on 127.0.0.1 and measures, in one run so the
// numbers compare as ratios on a shared machine:
//   - the core: a bare perceptron loop vs Model::Learn over the same data;
//   - the Train stream, one example per message and 1000 per message;
//   - Predict round trips, one vector per call.

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/model.h"
#include "spdlog/spdlog.h"
#include "tests/test_server.h"

ABSL_FLAG(int, examples, 400000, "examples per throughput measurement");
ABSL_FLAG(int, dimension, 32, "feature dimension");

namespace halfspace {
namespace {

struct Data {
  int dimension;
  std::vector<double> x;  // row-major, n × d
  std::vector<int> y;
  size_t size() const { return y.size(); }
  absl::Span<const double> row(size_t i) const {
    return absl::Span<const double>(x.data() + i * dimension, dimension);
  }
};

Data MakeData(int n, int d) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  Data data{d, std::vector<double>(size_t{1} * n * d), std::vector<int>(n)};
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < d; ++j) {
      data.x[size_t{1} * i * d + j] = normal(rng);
      s += data.x[size_t{1} * i * d + j] * (j % 3 - 1);
    }
    data.y[i] = s + 0.3 * normal(rng) >= 0 ? 1 : -1;  // noisy: keeps updating
  }
  return data;
}

double PerSecond(size_t n, absl::Duration elapsed) {
  return n / absl::ToDoubleSeconds(elapsed);
}

// The perceptron written as the tightest loop we know, as a yardstick.
double BareLoop(const Data& data) {
  const int d = data.dimension;
  std::vector<double> w(d, 0.0);
  double b = 0;
  const absl::Time start = absl::Now();
  for (size_t i = 0; i < data.size(); ++i) {
    const double* x = data.x.data() + i * d;
    double f = b;
    for (int j = 0; j < d; ++j) f += w[j] * x[j];
    if (data.y[i] * f <= 0) {
      for (int j = 0; j < d; ++j) w[j] += data.y[i] * x[j];
      b += data.y[i];
    }
  }
  const absl::Duration elapsed = absl::Now() - start;
  if (w[0] == 12345.678) std::puts("");  // keep the loop
  return PerSecond(data.size(), elapsed);
}

// Learns a batch as the training stream does: prepares every example into
// reused scratch, then learns under the model's lock.
void LearnBatch(Model& model, absl::Span<const Example> batch,
                std::vector<PreparedExample>& prepared,
                std::vector<ExampleOutcome>& outcomes) {
  if (prepared.size() < batch.size()) prepared.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) model.Prepare(batch[i], prepared[i]);
  (void)model.Learn(absl::MakeConstSpan(prepared.data(), batch.size()),
                    absl::MakeSpan(outcomes.data(), batch.size()));
}

double ModelLearn(const Data& data) {
  ModelSpec spec;
  spec.dimension = data.dimension;
  std::unique_ptr<Model> model = *Model::Create("bench", spec);
  constexpr size_t kBatch = 1000;
  std::vector<Example> batch(kBatch);
  std::vector<PreparedExample> prepared;
  std::vector<ExampleOutcome> outcomes(kBatch);
  const absl::Time start = absl::Now();
  for (size_t first = 0; first < data.size(); first += kBatch) {
    const size_t n = std::min(kBatch, data.size() - first);
    for (size_t i = 0; i < n; ++i) {
      batch[i] = {data.row(first + i), data.y[first + i]};
    }
    LearnBatch(*model, absl::MakeConstSpan(batch.data(), n), prepared,
               outcomes);
  }
  return PerSecond(data.size(), absl::Now() - start);
}

// SGD (hinge, L2, averaged) on a hashed model of 2^20 buckets, 30 named
// features per example: the cost must follow the nonzeros, not the width.
double HashedSgd(int n) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kSgd);
  spec.dimension = 0;
  spec.hash_bits = 20;
  std::get<SgdParams>(spec.algorithm).options.average_from = 1;
  std::unique_ptr<Model> model = *Model::Create("hashed", spec);
  std::vector<std::string> names;
  for (int k = 0; k < 1000; ++k) names.push_back(absl::StrCat("w", k));
  constexpr size_t kBatch = 1000;
  std::vector<std::vector<NamedFeature>> named(kBatch);
  std::vector<Example> batch(kBatch);
  std::vector<PreparedExample> prepared;
  std::vector<ExampleOutcome> outcomes(kBatch);
  std::mt19937 rng(1);
  const absl::Time start = absl::Now();
  for (int first = 0; first < n; first += kBatch) {
    for (size_t i = 0; i < kBatch; ++i) {
      named[i].clear();
      for (int f = 0; f < 30; ++f) {
        named[i].push_back({"text", names[rng() % names.size()], 1.0});
      }
      batch[i].features = FeatureInput();
      batch[i].features.named = named[i];
      batch[i].label = named[i][0].name < named[i][1].name ? 1 : -1;
    }
    LearnBatch(*model, batch, prepared, outcomes);
  }
  return PerSecond(n, absl::Now() - start);
}

// Streams `data` to a fresh model in messages of `batch` examples, one thread
// writing and this one reading, and returns examples per second.
double Stream(const TestServer& server, const Data& data, size_t batch,
              const std::string& name) {
  Client client = server.NewClient();
  (void)client.CreateModel(name, TextAlgorithm("perceptron"), data.dimension);
  std::vector<v1::TrainRequest> requests;
  for (size_t first = 0; first < data.size(); first += batch) {
    v1::TrainRequest& r = requests.emplace_back();
    if (first == 0) r.set_model(name);
    for (size_t i = first; i < std::min(first + batch, data.size()); ++i) {
      v1::Example* e = r.add_examples();
      e->mutable_features()->mutable_dense()->Add(data.row(i).begin(), data.row(i).end());
      e->set_label(data.y[i]);
    }
  }
  auto stub = server.NewStub();
  grpc::ClientContext context;
  auto stream = stub->Train(&context);
  const absl::Time start = absl::Now();
  std::thread writer([&] {
    for (const v1::TrainRequest& r : requests) stream->Write(r);
    stream->WritesDone();
  });
  v1::TrainResponse response;
  size_t results = 0;
  while (stream->Read(&response)) results += response.results_size();
  const absl::Duration elapsed = absl::Now() - start;
  writer.join();
  if (!stream->Finish().ok() || results != data.size()) {
    std::fprintf(stderr, "stream failed after %zu results\n", results);
  }
  return PerSecond(data.size(), elapsed);
}

// `streams` streams at once, each into its own model, one message per
// example: examples per second over all of them.
double ConcurrentStreams(const TestServer& server, const Data& data,
                         int streams, const std::string& name) {
  std::vector<double> rates(streams);
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int k = 0; k < streams; ++k) {
    threads.emplace_back([&, k] {
      rates[k] = Stream(server, data, 1, absl::StrCat(name, k));
    });
  }
  for (std::thread& t : threads) t.join();
  return PerSecond(data.size() * streams, absl::Now() - start);
}

void PredictLatency(const TestServer& server, const Data& data) {
  Client client = server.NewClient();
  (void)client.CreateModel("predict", TextAlgorithm("perceptron"), data.dimension);
  const std::vector<double> x(data.row(0).begin(), data.row(0).end());
  std::vector<double> micros;
  for (int i = 0; i < 5000; ++i) {
    const absl::Time start = absl::Now();
    (void)client.Predict("predict", {x});
    micros.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::sort(micros.begin(), micros.end());
  std::printf("| Predict, 1 vector per call      | p50 %.0f µs, p99 %.0f µs |\n",
              micros[micros.size() / 2], micros[micros.size() * 99 / 100]);
}

}  // namespace
}  // namespace halfspace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  using namespace halfspace;
  const int n = absl::GetFlag(FLAGS_examples), d = absl::GetFlag(FLAGS_dimension);
  const Data data = MakeData(n, d);
  const Data small = MakeData(std::max(1, n / 10), d);

  std::printf("%d examples, dimension %d, perceptron\n\n", n, d);
  std::printf("| measurement                      | result |\n|---|---|\n");
  const double bare = BareLoop(data), learn = ModelLearn(data);
  std::printf("| core: bare loop                  | %.2fM examples/s |\n",
              bare / 1e6);
  std::printf("| core: Model::Learn, batches 1000 | %.2fM examples/s (%.0f%% of bare) |\n",
              learn / 1e6, 100 * learn / bare);
  std::printf("| core: SGD, 2^20 hashed buckets, 30 named features | %.2fM examples/s |\n",
              HashedSgd(n / 4) / 1e6);
  // Training at each durability level (the data directory is on this
  // machine's disk); "sync", the default, last.
  for (const char* level : {"snapshot", "write", "sync"}) {
    TestServer server([&](ServerOptions& options) {
      options.durability = *ParseDurability(level);
    });
    std::printf("| Train stream, 1000 per message, durability=%s | %.2fM examples/s |\n",
                level, Stream(server, data, 1000, "batched") / 1e6);
    std::printf("| Train stream, 1 per message, durability=%s | %.0fk examples/s |\n",
                level, Stream(server, small, 1, "single") / 1e3);
    std::printf("| 4 Train streams, 1 per message, durability=%s | %.0fk examples/s |\n",
                level, ConcurrentStreams(server, small, 4, "concurrent") / 1e3);
    if (std::string(level) == "sync") PredictLatency(server, data);
  }
  return 0;
}
