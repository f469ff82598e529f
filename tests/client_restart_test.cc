// The client library against a real server process that goes away and comes
// back: reads retried, changes not, deadlines kept, and a BatchingTrainer
// that holds producers back while the server is down and then trains every
// example exactly once.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/batching_trainer.h"
#include "client/halfspace_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

class ClientRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        dir_.File("data"), dir_.File("log"), kFlags, address_);
    ASSERT_TRUE(server_->WaitUntilReady());
  }
  ~ClientRestartTest() override {
    if (restarter_.joinable()) restarter_.join();
  }

  void Kill() { server_->Stop(SIGKILL); }
  // Starts the server again on the same address and data, after `delay`,
  // on another thread.
  void RestartAfter(absl::Duration delay) {
    restarter_ = std::thread([this, delay] {
      absl::SleepFor(delay);
      server_ = std::make_unique<ServerProcess>(
          dir_.File("data"), dir_.File("log"), kFlags, address_);
    });
  }
  void WaitForRestart() {
    restarter_.join();
    ASSERT_TRUE(server_->WaitUntilReady());
  }
  Client NewClient() {
    return Client(FastReconnectingChannel(address_), absl::Seconds(20));
  }

  const std::vector<std::string> kFlags = {"--log_level=warn"};
  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  // A Unix socket: a TCP port freed by a kill could be taken by another
  // test's process before the restart binds it again.
  const std::string address_ = "unix:" + dir_.File("sock");
  std::thread restarter_;
};

TEST_F(ClientRestartTest, ReadsAreRetriedThroughARestartAndChangesAreNot) {
  Client client = NewClient();
  Client::RetryPolicy retry;
  retry.max_attempts = 1000;
  retry.initial_backoff = absl::Milliseconds(20);
  retry.max_backoff = absl::Milliseconds(100);
  client.set_retry_policy(retry);
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());

  Kill();
  RestartAfter(absl::Milliseconds(300));
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::vector<v1::Prediction>> p = client.Predict("m", {{1, 2}});
  EXPECT_TRUE(p.ok()) << p.status();
  WaitForRestart();

  // A create while the server is down fails at once, though the server
  // comes back while the call could still be retried.
  Kill();
  RestartAfter(absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsUnavailable(
      client.CreateModel("n", TextAlgorithm("perceptron"), 2).status()));
  WaitForRestart();
  EXPECT_TRUE(absl::IsNotFound(client.GetModel("n").status()));
}

TEST_F(ClientRestartTest, WithoutRetriesOrPastTheDeadlineAReadFails) {
  Kill();
  Client::RetryPolicy retry;
  retry.max_attempts = 1;
  Client once = NewClient();
  once.set_retry_policy(retry);
  EXPECT_TRUE(absl::IsUnavailable(once.GetModel("m").status()));

  retry.max_attempts = 1000000;
  Client patient = NewClient();
  patient.set_timeout(absl::Milliseconds(300));
  patient.set_retry_policy(retry);
  const absl::Time start = absl::Now();
  const absl::Status status = patient.ListModels().status();
  EXPECT_TRUE(absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status))
      << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10))
      << "the deadline was not kept";
}

TEST_F(ClientRestartTest, BatchingTrainerHoldsProducersBackAndTrainsOnce) {
  Client client = NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  std::atomic<int> answered{0};
  BatchingOptions options;
  options.max_batch = 4;
  options.max_pending = 8;
  options.retry.initial_backoff = absl::Milliseconds(20);
  options.retry.max_backoff = absl::Milliseconds(100);
  auto trainer = BatchingTrainer::Open(
      &client, "m", "producer",
      [&](uint64_t, const v1::ExampleResult& r) {
        if (!r.duplicate()) ++answered;
      },
      options);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((*trainer)->Add({{1.0 * i, -1.0}, i % 2 ? 1 : -1}).ok());
  }
  ASSERT_TRUE((*trainer)->Flush().ok());

  Kill();
  std::atomic<int> added{0};
  std::thread producer([&] {
    for (int i = 0; i < 30; ++i) {
      EXPECT_TRUE((*trainer)->Add({{-1.0, 1.0 * i}, i % 3 ? 1 : -1}).ok());
      ++added;
    }
  });
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(added.load(), 8) << "max_pending did not hold the producer back";
  RestartAfter(absl::ZeroDuration());
  producer.join();
  WaitForRestart();
  ASSERT_TRUE((*trainer)->Close().ok());
  EXPECT_EQ((*trainer)->last_applied(), 40u);
  EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 40u);
  EXPECT_EQ(*client.GetSourceSequence("m", "producer"), 40u);
}

}  // namespace
}  // namespace halfspace
