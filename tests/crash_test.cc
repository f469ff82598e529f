// The crash test: clients stream into several models while the server is
// killed with SIGKILL at random moments (during snapshots and log rotations
// too, which small checkpoint and segment sizes make frequent) and
// restarted. The clients resume exactly once. At the end every model equals,
// bit for bit, the model of one uninterrupted run over the same data, and
// counts every example exactly once.

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/exactly_once_trainer.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/convert.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"

namespace halfspace {
namespace {

constexpr int kDimension = 8;
constexpr int kExamples = 6000;  // per model
constexpr int kKills = 24;

struct Stream {
  std::string model;
  std::string algorithm;  // as CreateModel takes it
  bool multiclass = false;
};

const std::vector<Stream>& Streams() {
  static const auto* streams = new std::vector<Stream>{
      {"perceptron", "perceptron", false},
      {"sgd", "sgd { loss: LOSS_LOG average_from: 10 }", false},
      {"softmax", "softmax_regression { learning_rate: 0.1 }", true},
      {"ftrl", "ftrl_proximal { alpha: 0.5 l1: 0.05 l2: 1 }", false},
  };
  return *streams;
}

// The model's fixed data: dense features from a seeded generator, labels
// from a fixed hyperplane (binary) or three (multiclass).
std::vector<LabeledExample> Data(const Stream& stream, int seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<LabeledExample> data(kExamples);
  for (LabeledExample& e : data) {
    e.features.resize(kDimension);
    for (double& x : e.features) x = u(rng);
    double best = -1e300;
    for (int k = 0; k < 3; ++k) {
      double score = 0.0;
      for (int j = 0; j < kDimension; ++j) {
        score += e.features[j] * ((j * 7 + k * 3) % 5 - 2);
      }
      if (stream.multiclass && score > best) {
        best = score;
        e.class_label = absl::StrCat("c", k);
      }
      if (!stream.multiclass && k == 0)
        e.label = score + 0.1 * u(rng) >= 0 ? 1 : -1;
    }
  }
  return data;
}

v1::CreateModelRequest CreateRequest(const Stream& stream) {
  v1::CreateModelRequest request;
  request.set_model(stream.model);
  absl::StatusOr<v1::Algorithm> algorithm = ParseAlgorithm(stream.algorithm);
  EXPECT_TRUE(algorithm.ok()) << algorithm.status();
  *request.mutable_algorithm() = *algorithm;
  request.set_dimension(kDimension);
  return request;
}

// The same data trained in process without interruption.
std::unique_ptr<Model> Uninterrupted(const Stream& stream,
                                     const std::vector<LabeledExample>& data) {
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(CreateRequest(stream));
  EXPECT_TRUE(spec.ok()) << spec.status();
  std::unique_ptr<Model> model = *Model::Create(stream.model, *spec);
  std::vector<ExampleOutcome> out(1);
  for (const LabeledExample& e : data) {
    Example example;
    example.features = FeatureInput(e.features);
    example.label = e.label;
    example.class_label = e.class_label;
    EXPECT_TRUE(model->Learn({example}, absl::MakeSpan(out)).ok());
  }
  return model;
}

TEST(CrashTest, KilledAtRandomEveryModelEqualsAnUninterruptedRun) {
  TempDir dir;
  const std::string data_dir = dir.File("data");
  const std::vector<std::string> flags = {
      "--durability=sync", "--checkpoint_bytes=65536",
      "--log_segment_bytes=16384", "--log_level=warn"};
  // A Unix socket: a TCP port freed by a kill could be taken by another
  // test's process before the restart binds it again.
  const std::string address = "unix:" + dir.File("sock");
  auto server = std::make_unique<ServerProcess>(data_dir, dir.File("log"),
                                                flags, address);
  ASSERT_TRUE(server->WaitUntilReady()) << Tail(dir.File("log"));
  Client admin(FastReconnectingChannel(server->target()), absl::Seconds(5));
  std::vector<std::vector<LabeledExample>> data;
  for (size_t m = 0; m < Streams().size(); ++m) {
    ASSERT_TRUE(admin.CreateModel(CreateRequest(Streams()[m])).ok());
    data.push_back(Data(Streams()[m], 1000 + m));
  }

  // One producer per model, in batches of 1 to 37 examples.
  std::atomic<int> producing{static_cast<int>(Streams().size())};
  std::atomic<uint64_t> acknowledged{0};
  std::vector<std::string> failures(Streams().size());
  std::vector<std::thread> producers;
  for (size_t m = 0; m < Streams().size(); ++m) {
    producers.emplace_back([&, m] {
      Client client(FastReconnectingChannel(server->target()),
                    absl::Seconds(5));
      RetryOptions retry;
      retry.give_up_after = absl::Seconds(60);
      auto trainer = ExactlyOnceTrainer::Open(&client, Streams()[m].model,
                                              "producer", retry);
      size_t next = 0, batch = 1;
      while (trainer.ok() && next < data[m].size()) {
        const size_t n = std::min(batch, data[m].size() - next);
        absl::StatusOr<v1::TrainResponse> r =
            (*trainer)->Train(absl::MakeConstSpan(data[m]).subspan(next, n));
        if (!r.ok()) {
          failures[m] = r.status().ToString();
          break;
        }
        next += n;
        acknowledged.fetch_add(n);
        batch = batch % 37 + 1;
      }
      if (!trainer.ok()) failures[m] = trainer.status().ToString();
      producing.fetch_sub(1);
    });
  }

  // Kill and restart at random points of the data (however fast this
  // machine runs), each a random moment after the point is passed.
  std::mt19937 rng(7);
  const uint64_t total = kExamples * Streams().size();
  std::uniform_int_distribution<uint64_t> point(total / 20, total * 4 / 5);
  std::vector<uint64_t> points(kKills);
  for (uint64_t& p : points) p = point(rng);
  std::sort(points.begin(), points.end());
  std::uniform_int_distribution<int> delay_us(0, 20000);
  int kills = 0;
  for (uint64_t p : points) {
    while (acknowledged.load() < p && producing.load() > 0) {
      absl::SleepFor(absl::Microseconds(200));
    }
    if (producing.load() == 0) break;
    absl::SleepFor(absl::Microseconds(delay_us(rng)));
    server->Stop(SIGKILL);
    ++kills;
    server = std::make_unique<ServerProcess>(data_dir, dir.File("log"), flags,
                                             address);
  }
  for (std::thread& t : producers) t.join();
  for (size_t m = 0; m < failures.size(); ++m) {
    EXPECT_EQ(failures[m], "") << Streams()[m].model;
  }
  if (HasFailure())
    ADD_FAILURE() << "the servers' log ends:\n" << Tail(dir.File("log"));
  // On a fast machine the producers may finish the last fifth between the
  // last points and their kills; at least the first half of the points
  // always comes while they produce.
  EXPECT_GE(kills, kKills / 2) << "the producers finished almost unkilled";

  // Every model equals the uninterrupted run.
  ASSERT_TRUE(server->WaitUntilReady()) << Tail(dir.File("log"));
  for (size_t m = 0; m < Streams().size(); ++m) {
    const Stream& stream = Streams()[m];
    std::unique_ptr<Model> want = Uninterrupted(stream, data[m]);
    const ModelSnapshot w = want->Weights();
    const ModelStats stats = want->Stats();
    absl::StatusOr<v1::Model> got = admin.GetModel(stream.model);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->stats().examples_seen(), kExamples) << stream.model;
    EXPECT_EQ(got->stats().updates(), stats.counters.updates) << stream.model;
    EXPECT_EQ(got->stats().mistakes(), stats.counters.mistakes) << stream.model;
    absl::StatusOr<v1::GetWeightsResponse> weights =
        admin.GetWeights(stream.model);
    ASSERT_TRUE(weights.ok()) << weights.status();
    if (stream.multiclass) {
      ASSERT_EQ(weights->classes_size(), static_cast<int>(w.classes.size()));
      for (int k = 0; k < weights->classes_size(); ++k) {
        EXPECT_EQ(weights->classes(k).label(), w.classes[k]);
        EXPECT_THAT(weights->classes(k).weights(),
                    ::testing::ElementsAreArray(w.class_weights[k].w))
            << stream.model << " class " << k;
        EXPECT_EQ(weights->classes(k).bias(), w.class_weights[k].b);
      }
    } else {
      EXPECT_THAT(weights->weights(), ::testing::ElementsAreArray(w.weights.w))
          << stream.model;
      EXPECT_EQ(weights->bias(), w.weights.b) << stream.model;
    }
  }
  // Checkpoints ran and trimmed the log; segments rotated.
  int segments = 0;
  uint64_t newest = 0;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/wal")) {
    ++segments;
    newest = std::max<uint64_t>(newest, std::stoull(e.path().stem().string()));
  }
  EXPECT_GT(newest, 10u) << "the log rotated too rarely to test rotation";
  EXPECT_LT(segments * 2, static_cast<int>(newest))
      << "checkpoints did not trim the log";
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// Runs `call` until it gets an answer that is not a lost connection (the
// server being killed and restarted), for up to a minute.
template <typename Call>
auto Answered(Call call) -> decltype(call()) {
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (;;) {
    auto result = call();
    const absl::Status& s = [&]() -> const absl::Status& {
      if constexpr (std::is_same_v<decltype(result), absl::Status>) {
        return result;
      } else {
        return result.status();
      }
    }();
    if (!(absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ||
          absl::IsCancelled(s)) ||
        absl::Now() > give_up) {
      return result;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

// A model deleted, imported from a backup, deleted and created again, over
// and over, while the server is killed at random moments — between each
// change and the next snapshot too. A deletion and an import are barriers:
// what comes back after every kill is what the last acknowledged change
// made, never a record from before it.
TEST(CrashTest, DeletionsAndImportsAreBarriersAcrossKills) {
  TempDir dir;
  const std::string data_dir = dir.File("data");
  const std::vector<std::string> flags = {
      "--durability=sync", "--checkpoint_bytes=8192",
      "--log_segment_bytes=4096", "--log_level=warn"};
  const std::string address = "unix:" + dir.File("sock");
  auto server = std::make_unique<ServerProcess>(data_dir, dir.File("log"),
                                                flags, address);
  ASSERT_TRUE(server->WaitUntilReady()) << Tail(dir.File("log"));
  const std::string target = server->target();
  std::atomic<bool> churning{true};
  std::string failure;
  // At least 40 rounds and 8 kills, however fast this machine churns.
  constexpr int kRounds = 40, kChurnKills = 8;
  int rounds = 0;
  std::atomic<int> kills{0};
  std::thread churn([&] {
    Client client(FastReconnectingChannel(target), absl::Seconds(5));
    const Stream stream{"churn", "perceptron", false};
    const std::vector<LabeledExample> data = Data(stream, 99);
    auto fail = [&](const std::string& what) {
      if (failure.empty()) failure = absl::StrCat("round ", rounds, ": ", what);
    };
    for (; (rounds < kRounds || kills.load() < kChurnKills) &&
           rounds < 100 * kRounds && failure.empty();
         ++rounds) {
      // Create (an earlier attempt may have been applied: ALREADY_EXISTS).
      absl::Status created = Answered(
          [&] { return client.CreateModel(CreateRequest(stream)).status(); });
      if (!created.ok() && !absl::IsAlreadyExists(created)) {
        fail(created.ToString());
        break;
      }
      const size_t n = 5 + rounds % 7;
      RetryOptions retry;
      retry.give_up_after = absl::Seconds(60);
      auto trainer = ExactlyOnceTrainer::Open(
          &client, "churn", absl::StrCat("round-", rounds), retry);
      if (!trainer.ok() ||
          !(*trainer)->Train(absl::MakeConstSpan(data).subspan(0, n)).ok()) {
        fail("training failed");
        break;
      }
      absl::StatusOr<std::string> backup =
          Answered([&] { return client.ExportModel("churn"); });
      absl::Status deleted =
          Answered([&] { return client.DeleteModel("churn"); });
      if (!backup.ok() || !(deleted.ok() || absl::IsNotFound(deleted))) {
        fail("export or delete failed");
        break;
      }
      if (absl::IsNotFound(Answered(
              [&] { return client.GetModel("churn").status(); })) == false) {
        fail("a deleted model came back");
        break;
      }
      absl::Status imported = Answered(
          [&] { return client.ImportModel("churn", *backup).status(); });
      if (!imported.ok() && !absl::IsAlreadyExists(imported)) {
        fail(imported.ToString());
        break;
      }
      absl::StatusOr<v1::Model> model =
          Answered([&] { return client.GetModel("churn"); });
      if (!model.ok() || model->stats().examples_seen() != n ||
          !model->unavailable_reason().empty()) {
        fail(absl::StrCat(
            "the import came back as ",
            model.ok() ? model->DebugString() : model.status().ToString()));
        break;
      }
      deleted = Answered([&] { return client.DeleteModel("churn"); });
      if (!deleted.ok() && !absl::IsNotFound(deleted)) {
        fail(deleted.ToString());
        break;
      }
    }
    churning = false;
  });
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> delay_ms(20, 150);
  while (churning.load()) {
    absl::SleepFor(absl::Milliseconds(delay_ms(rng)));
    if (!churning.load()) break;
    server->Stop(SIGKILL);
    ++kills;
    server = std::make_unique<ServerProcess>(data_dir, dir.File("log"), flags,
                                             address);
    if (!server->WaitUntilReady()) {
      ADD_FAILURE() << "a restarted server did not come up: "
                    << server->State();
      break;  // the churn gives up on it
    }
  }
  churn.join();
  EXPECT_EQ(failure, "");
  EXPECT_GE(rounds, kRounds);
  EXPECT_GE(kills.load(), kChurnKills);
  if (HasFailure())
    ADD_FAILURE() << "the servers' log ends:\n" << Tail(dir.File("log"));
  // After the last deletion, and a kill, the name is free.
  server->Stop(SIGKILL);
  server = std::make_unique<ServerProcess>(data_dir, dir.File("log"), flags,
                                           address);
  ASSERT_TRUE(server->WaitUntilReady()) << Tail(dir.File("log"));
  Client client(FastReconnectingChannel(target), absl::Seconds(5));
  EXPECT_TRUE(absl::IsNotFound(client.GetModel("churn").status()));
  EXPECT_TRUE(client.CreateModel(CreateRequest({"churn", "perceptron"})).ok());
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace halfspace
