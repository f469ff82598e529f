// The Train stream reads ahead while responses wait for the log: many
// messages of one stream share an fdatasync, responses stay in order and
// each still waits for its examples to be durable, and a stream that ends
// (by error or cancellation) with responses waiting ends cleanly.
//
// Every fdatasync here is counted and slowed to kSyncTime, so that a stream
// that waited for each message's sync before reading the next would need
// one sync per message.

#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace {
std::atomic<int> fdatasyncs{0};
constexpr absl::Duration kSyncTime = absl::Milliseconds(20);
}  // namespace

extern "C" {
int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd) {
  fdatasyncs.fetch_add(1);
  absl::SleepFor(kSyncTime);
  return __real_fdatasync(fd);
}
}

namespace halfspace {
namespace {

using ::testing::HasSubstr;

TEST(PipeliningTest, MessagesOfOneStreamShareASync) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  auto stub = server.NewStub();
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub->Train(&context);
  constexpr int kMessages = 200;
  const int syncs_before = fdatasyncs.load();
  for (int i = 0; i < kMessages; ++i) {
    v1::TrainRequest request;
    if (i == 0) request.set_model("m");
    AddExample(request, {1.0, i % 2 ? 1.0 : -1.0}, i % 2 ? 1 : -1);
    ASSERT_TRUE(stream->Write(request));
  }
  stream->WritesDone();
  v1::TrainResponse response;
  uint64_t seen = 0;
  while (stream->Read(&response)) {
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).examples_seen(), ++seen);  // in order
  }
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_EQ(seen, kMessages);
  // One sync per message would be 200 (4 s); reading ahead shares them.
  EXPECT_LT(fdatasyncs.load() - syncs_before, kMessages / 10);
}

TEST(PipeliningTest, ResponsesBeforeAnErrorAreWrittenFirst) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  ASSERT_TRUE(client.CreateModel("other", TextAlgorithm("perceptron"), 2).ok());
  auto stub = server.NewStub();
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub->Train(&context);
  for (int i = 0; i < 5; ++i) {
    v1::TrainRequest request;
    if (i == 0) request.set_model("m");
    AddExample(request, {1.0, 2.0}, 1);
    ASSERT_TRUE(stream->Write(request));
  }
  v1::TrainRequest wrong;
  wrong.set_model("other");  // a stream serves one model
  AddExample(wrong, {1.0, 2.0}, 1);
  stream->Write(wrong);
  v1::TrainRequest after;
  AddExample(after, {1.0, 2.0}, 1);
  stream->Write(after);  // never read
  stream->WritesDone();
  v1::TrainResponse response;
  int responses = 0;
  while (stream->Read(&response)) ++responses;
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(responses, 5);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("other"));
  // What was acknowledged is what was learned, and no more.
  absl::StatusOr<v1::Model> model = client.GetModel("m");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->stats().examples_seen(), 5u);
}

TEST(PipeliningTest, CancellingWithResponsesWaitingLeavesTheServerWell) {
  TestServer server;
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  for (int round = 0; round < 5; ++round) {
    auto stub = server.NewStub();
    grpc::ClientContext context;
    std::unique_ptr<TrainStream> stream = stub->Train(&context);
    for (int i = 0; i < 50; ++i) {
      v1::TrainRequest request;
      if (i == 0) request.set_model("m");
      AddExample(request, {1.0, 2.0}, 1);
      stream->Write(request);
    }
    absl::SleepFor(kSyncTime / 2);  // responses are waiting for the sync
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server goes on serving, and drains when stopped (the test server's
  // destructor).
  absl::StatusOr<std::vector<v1::Prediction>> predicted =
      client.Predict("m", {{1.0, 2.0}});
  ASSERT_TRUE(predicted.ok()) << predicted.status();
}

}  // namespace
}  // namespace halfspace
