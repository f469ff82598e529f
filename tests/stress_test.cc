// Many clients at once, for a bounded time, doing everything at random:
// creating, training, predicting, evaluating, reading, deleting, and
// cancelling streams and calls midway. Then the invariants: the server is
// up, the counters of the models that were never deleted add up to the
// examples their trainers were told were learned, those models come back
// bit for bit after a restart, the memory accounting matches the models
// that remain, and the process's memory is back near where it started.
//
// STRESS_SECONDS sets the length (10 by default).

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

constexpr int kClients = 8;
// AddressSanitizer holds freed memory in quarantine (256 MiB by default) and
// checks for leaks itself: there, the process's memory does not come back.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kMemoryComesBack = false;
#else
constexpr bool kMemoryComesBack = true;
#endif
constexpr int kDimension = 8;
// Never deleted: their counters must add up.
const std::vector<std::string> kKept = {"kept-binary", "kept-multiclass"};

int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

absl::Duration StressTime() {
  const char* seconds = std::getenv("STRESS_SECONDS");
  return absl::Seconds(seconds != nullptr ? std::atoi(seconds) : 10);
}

class Worker {
 public:
  Worker(const TestServer& server, int id)
      : client_(server.NewClient()), stub_(server.NewStub()), random_(id) {}

  // Runs random operations until `end`; returns how many.
  int64_t Run(absl::Time end) {
    int64_t operations = 0;
    while (absl::Now() < end) {
      ++operations;
      switch (Uniform(9)) {
        case 0:
          Create();
          break;
        case 1:
          client_.DeleteModel(Churn()).IgnoreError();
          break;
        case 2:
          TrainKept();
          break;
        case 3:
          TrainChurn();
          break;
        case 4:
          Predict();
          break;
        case 5:
          client_.Evaluate(Kept(), Examples(10, false)).IgnoreError();
          break;
        case 6:
          client_.GetWeights(Uniform(2) ? Kept() : Churn()).IgnoreError();
          break;
        case 7:
          client_.ListModels().IgnoreError();
          break;
        default:
          Stats();
          break;
      }
    }
    return operations;
  }

  // Examples the server acknowledged as learned, per kept model.
  const std::vector<uint64_t>& learned() const { return learned_; }

 private:
  int Uniform(int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(random_);
  }
  std::string Kept() { return kKept[Uniform(2)]; }
  std::string Churn() { return absl::StrCat("churn-", Uniform(12)); }

  std::vector<LabeledExample> Examples(int n, bool multiclass) {
    std::vector<LabeledExample> examples(n);
    std::normal_distribution<double> normal;
    for (LabeledExample& e : examples) {
      for (int j = 0; j < kDimension; ++j)
        e.features.push_back(normal(random_));
      e.label = e.features[0] + e.features[1] >= 0 ? 1 : -1;
      if (multiclass) e.class_label = absl::StrCat("c", Uniform(5));
      if (Uniform(20) == 0) e.features.pop_back();  // a bad example, in-band
    }
    return examples;
  }

  void Create() {
    v1::CreateModelRequest create;
    create.set_model(Churn());
    static const char* const kAlgorithms[] = {
        "perceptron", "averaged_perceptron", "softmax_regression",
        "sgd { loss: LOSS_LOG average_from: 1 }"};
    *create.mutable_algorithm() = TextAlgorithm(kAlgorithms[Uniform(4)]);
    create.set_dimension(kDimension);
    if (Uniform(2)) create.set_hash_bits(10);
    client_.CreateModel(create).IgnoreError();
  }

  // A stream on a kept model: every response read, so that each learned
  // example is known.
  void TrainKept() {
    const int k = Uniform(2);
    std::unique_ptr<TrainingStream> stream = client_.Train(kKept[k]);
    for (int r = 1 + Uniform(4); r > 0; --r) {
      if (!stream->Send(Examples(1 + Uniform(50), k == 1)).ok()) break;
      absl::StatusOr<v1::TrainResponse> response = stream->Receive();
      if (!response.ok()) break;
      for (const v1::ExampleResult& result : response->results()) {
        if (result.error().code() == 0) ++learned_[k];
      }
    }
    stream->Finish().IgnoreError();
  }

  // A stream on a model that may vanish, sometimes abandoned midway.
  void TrainChurn() {
    std::unique_ptr<TrainingStream> stream = client_.Train(Churn());
    for (int r = 1 + Uniform(4); r > 0; --r) {
      if (!stream->Send(Examples(1 + Uniform(100), Uniform(2))).ok()) break;
      if (Uniform(4) == 0) {
        stream->Cancel();
        break;
      }
      if (!stream->Receive().ok()) break;
    }
    stream->Finish().IgnoreError();
  }

  // Sometimes with a deadline too short to make.
  void Predict() {
    v1::PredictRequest request;
    request.set_model(Uniform(2) ? Kept() : Churn());
    std::normal_distribution<double> normal;
    for (int i = 1 + Uniform(100); i > 0; --i) {
      v1::FeatureVector* x = request.add_instances();
      for (int j = 0; j < kDimension; ++j) x->add_dense(normal(random_));
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(Uniform(2) ? 50 : 5000000));
    v1::PredictResponse response;
    (void)stub_->Predict(&context, request, &response);
  }

  void Stats() {
    grpc::ClientContext context;
    v1::GetStatsResponse response;
    (void)stub_->GetStats(&context, v1::GetStatsRequest(), &response);
  }

  Client client_;
  std::unique_ptr<v1::HalfspaceService::Stub> stub_;
  std::mt19937_64 random_;
  std::vector<uint64_t> learned_ = std::vector<uint64_t>(kKept.size());
};

TEST(StressTest, EverythingAtOnceThenTheInvariantsHold) {
  TestServer server([](ServerOptions& o) {
    o.limits.max_models = 16;
    o.limits.max_total_model_bytes = int64_t{32} << 20;
    o.limits.max_model_bytes = int64_t{4} << 20;
    o.limits.max_classes = 4;    // the fifth class is refused in-band
    o.streams.max_streams = 12;  // more than the clients open: some refused
    o.streams.max_streams_per_client = 12;
    o.checkpoint_bytes = 1 << 20;  // checkpoints while it runs
  });
  Client admin = server.NewClient();
  ASSERT_TRUE(admin
                  .CreateModel(kKept[0], TextAlgorithm("averaged_perceptron"),
                               kDimension)
                  .ok());
  v1::CreateModelRequest multiclass;
  multiclass.set_model(kKept[1]);
  *multiclass.mutable_algorithm() = TextAlgorithm("softmax_regression");
  multiclass.set_dimension(kDimension);
  ASSERT_TRUE(admin.CreateModel(multiclass).ok());
  const int64_t memory_before = ResidentBytes();

  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < kClients; ++i) {
    workers.push_back(std::make_unique<Worker>(server, i + 1));
  }
  const absl::Time end = absl::Now() + StressTime();
  std::atomic<int64_t> operations{0};
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, w = worker.get()] { operations += w->Run(end); });
  }
  for (std::thread& t : threads) t.join();
  std::printf("stress: %lld operations by %d clients in %s\n",
              static_cast<long long>(operations.load()), kClients,
              absl::FormatDuration(StressTime()).c_str());

  // The kept models learned exactly what their trainers were told.
  std::vector<v1::GetWeightsResponse> weights;
  std::vector<v1::ModelStats> stats;
  for (size_t k = 0; k < kKept.size(); ++k) {
    uint64_t learned = 0;
    for (auto& worker : workers) learned += worker->learned()[k];
    absl::StatusOr<v1::Model> model = admin.GetModel(kKept[k]);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->stats().examples_seen(), learned) << kKept[k];
    EXPECT_GT(learned, 0u);
    stats.push_back(model->stats());
    weights.push_back(*admin.GetWeights(kKept[k]));
    weights.back().clear_version();  // which counts within one run
  }
  EXPECT_LE(static_cast<int>(admin.GetModel(kKept[1])->classes_size()), 4);

  // The memory accounting matches the models there are.
  grpc::ClientContext context;
  v1::GetStatsResponse usage;
  ASSERT_TRUE(
      server.NewStub()->GetStats(&context, v1::GetStatsRequest(), &usage).ok());
  for (const v1::CallStats& c : usage.calls()) {
    std::printf("stress: %s %s %llu\n", c.method().c_str(), c.code().c_str(),
                static_cast<unsigned long long>(c.count()));
  }
  int64_t sum = 0;
  for (const v1::ModelUsage& m : usage.models()) sum += m.memory_bytes();
  EXPECT_EQ(sum, usage.model_memory_bytes());
  EXPECT_EQ(usage.open_streams(), 0);

  // Delete what churned; memory comes back near where it started.
  for (const v1::ModelUsage& m : usage.models()) {
    if (m.name().rfind("churn-", 0) == 0) {
      ASSERT_TRUE(admin.DeleteModel(m.name()).ok());
    }
  }
  if (kMemoryComesBack) {
    EXPECT_LT(ResidentBytes() - memory_before, int64_t{128} << 20);
  }

  // Nothing kept is lost or changed by a restart.
  server.Restart();
  Client after = server.NewClient();
  for (size_t k = 0; k < kKept.size(); ++k) {
    absl::StatusOr<v1::Model> model = after.GetModel(kKept[k]);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->stats().SerializeAsString(), stats[k].SerializeAsString());
    v1::GetWeightsResponse restored = *after.GetWeights(kKept[k]);
    restored.clear_version();
    EXPECT_EQ(restored.SerializeAsString(), weights[k].SerializeAsString());
  }
}

}  // namespace
}  // namespace halfspace
