// Crash safety through the real service: every acknowledged change is in the
// data directory when the call returns, tagged examples apply exactly once,
// a call applies whole or not at all, and damage or a full disk costs no
// acknowledged change.

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/exactly_once_trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"
#include "tests/vw_socket.h"

// fdatasync, which a test can hold back (this test binary is linked with
// -Wl,--wrap=fdatasync): while held, the log cannot make records durable.
namespace {
std::mutex sync_mu;
std::condition_variable sync_released;
bool syncs_held = false;

void HoldSyncs(bool hold) {
  {
    std::lock_guard lock(sync_mu);
    syncs_held = hold;
  }
  sync_released.notify_all();
}
}  // namespace

extern "C" {
int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd) {
  {
    std::unique_lock lock(sync_mu);
    sync_released.wait(lock, [] { return !syncs_held; });
  }
  return __real_fdatasync(fd);
}
}

namespace halfspace {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class DurabilityTest : public ::testing::Test {
 protected:
  void CreatePerceptron(const std::string& name, int64_t dimension) {
    ASSERT_TRUE(
        client_.CreateModel(name, TextAlgorithm("perceptron"), dimension).ok());
  }

  // Sends one request on a new stream and returns its response, or the
  // stream's status.
  absl::StatusOr<v1::TrainResponse> TrainOnce(const v1::TrainRequest& request) {
    grpc::ClientContext context;
    std::unique_ptr<TrainStream> stream = stub_->Train(&context);
    v1::TrainResponse response;
    const bool answered = stream->Write(request) && stream->Read(&response);
    stream->WritesDone();
    absl::Status status = FromGrpcStatus(stream->Finish());
    if (!answered)
      return status.ok() ? absl::UnknownError("no response") : status;
    return response;
  }

  TestServer server_;
  Client client_ = server_.NewClient();
  std::unique_ptr<v1::HalfspaceService::Stub> stub_ = server_.NewStub();
};

TEST_F(DurabilityTest, EveryAcknowledgedChangeIsInTheDataDirectory) {
  CreatePerceptron("m", 2);
  CreatePerceptron("gone", 2);
  ASSERT_TRUE(client_.SetWeights("m", {3, 4}, -5).ok());
  std::unique_ptr<TrainingStream> stream = client_.Train("m");
  ASSERT_TRUE(stream->Send({{{-1, -1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(client_.DeleteModel("gone").ok());

  // No snapshot or shutdown has stored anything since.
  CrashCopy crash(server_.data_dir());
  Client client = crash.Start();
  absl::StatusOr<v1::GetWeightsResponse> weights = client.GetWeights("m");
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_THAT(weights->weights(), ElementsAre(2, 3));  // (3, 4) + (-1, -1)
  EXPECT_EQ(weights->bias(), -4);
  EXPECT_TRUE(absl::IsNotFound(client.GetModel("gone").status()));
  EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 1u);
}

// The log's segments in `data_dir`.
int LogSegments(const TempDir& data_dir) {
  int segments = 0;
  for (const auto& e : fs::directory_iterator(data_dir.File("wal"))) {
    segments += e.path().extension() == ".log";
  }
  return segments;
}

// Past --log_segment_bytes the log goes on in a new segment; a checkpoint
// deletes the segments its snapshots cover.
TEST(DurabilityLogTest, TheLogRollsOverAtItsSegmentSize) {
  TestServer server([](ServerOptions& o) { o.log_segment_bytes = 4096; });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 8).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  const std::vector<double> x(8, 1.0);
  for (int i = 0; i < 20; ++i) {  // 20 records of 20 examples: ~30 kB
    ASSERT_TRUE(stream->Send(std::vector<LabeledExample>(20, {x, 1})).ok());
    ASSERT_TRUE(stream->Receive().ok());
  }
  ASSERT_TRUE(stream->Finish().ok());
  // The sync thread starts the next segment once one is full.
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       LogSegments(server.data_dir()) < 4 && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GE(LogSegments(server.data_dir()), 4);
  ASSERT_TRUE(server.server().Checkpoint().ok());
  EXPECT_EQ(LogSegments(server.data_dir()), 1);
}

// The response to a batch waits until its record is synced.
TEST_F(DurabilityTest, ATrainResponseWaitsUntilItsExamplesAreSynced) {
  CreatePerceptron("m", 2);
  std::unique_ptr<TrainingStream> stream = client_.Train("m");
  HoldSyncs(true);
  ASSERT_TRUE(stream->Send({{{1, 2}, 1}}).ok());
  std::atomic<bool> answered{false};
  std::thread reader([&] {
    EXPECT_TRUE(stream->Receive().ok());
    answered = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(answered.load()) << "answered before the sync";
  // Reads go on meanwhile: the example is applied, just not acknowledged.
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 1u);
  HoldSyncs(false);
  reader.join();
  EXPECT_TRUE(answered.load());
  EXPECT_TRUE(stream->Finish().ok());
}

// So does a VW listener's answer to a labelled line, and the answers after
// it: the prediction that follows, which already sees the line, too.
TEST(VwDurabilityTest, AnAnswerWaitsUntilItsLineIsSynced) {
  TestServer server([](ServerOptions& o) {
    VwListenerOptions& vw = o.vw.emplace_back();
    vw.address = "127.0.0.1:0";
    vw.model = "m";
  });
  Client client = server.NewClient();
  v1::CreateModelRequest create;
  create.set_model("m");
  *create.mutable_algorithm() = TextAlgorithm("perceptron");
  create.set_hash_bits(10);
  ASSERT_TRUE(client.CreateModel(create).ok());
  VwSocket vw(server.server().vw_port());
  HoldSyncs(true);
  vw.Send("1 |f a\n|f a\n");
  std::vector<std::string> answers;
  std::atomic<bool> answered{false};
  std::thread reader([&] {
    answers = vw.Lines(2);
    answered = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(answered.load()) << "answered before the sync";
  EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 1u);
  HoldSyncs(false);
  reader.join();
  EXPECT_THAT(answers, ElementsAre("0", "2"));
}

TEST_F(DurabilityTest, SetWeightsThatFailsLeavesTheServedWeights) {
  CreatePerceptron("m", 2);
  ASSERT_TRUE(client_.SetWeights("m", {1, 2}, 3).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      client_.SetWeights("m", {1, std::nan("")}, 0).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_.SetWeights("m", {5}, 0).status()));
  v1::SetWeightsRequest with_class;  // a binary model has no classes
  with_class.set_model("m");
  with_class.set_class_label("cat");
  with_class.add_weights(7);
  with_class.add_weights(7);
  grpc::ClientContext context;
  v1::SetWeightsResponse response;
  EXPECT_EQ(stub_->SetWeights(&context, with_class, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  absl::StatusOr<v1::GetWeightsResponse> weights = client_.GetWeights("m");
  EXPECT_THAT(weights->weights(), ElementsAre(1, 2));
  EXPECT_EQ(weights->bias(), 3);
  // Nothing of the failed calls was logged: a crash leaves the model whole.
  CrashCopy crash(server_.data_dir());
  Client client = crash.Start();
  EXPECT_EQ(client.GetModel("m")->unavailable_reason(), "");
  EXPECT_THAT(client.GetWeights("m")->weights(), ElementsAre(1, 2));
}

TEST_F(DurabilityTest, ASecondServerOnTheSameDataDirectoryRefusesToStart) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.data_dir = server_.data_dir().path();
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("is in use by another"));
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("pid ", ::getpid())));
}

v1::TrainRequest Tagged(const std::string& source, uint64_t sequence,
                        int examples) {
  v1::TrainRequest request;
  request.set_model("m");
  request.set_source(source);
  request.set_sequence(sequence);
  for (int i = 0; i < examples; ++i) AddExample(request, {1, double(i)}, 1);
  return request;
}

TEST_F(DurabilityTest, TaggedExamplesApplyExactlyOnce) {
  CreatePerceptron("m", 2);
  absl::StatusOr<v1::TrainResponse> first = TrainOnce(Tagged("p", 1, 3));
  ASSERT_TRUE(first.ok()) << first.status();
  for (const v1::ExampleResult& r : first->results()) {
    EXPECT_FALSE(r.duplicate());
  }
  // A resend overlapping what was applied: 2 and 3 are duplicates, and a
  // pass does not count them.
  v1::TrainRequest overlapping = Tagged("p", 2, 3);
  overlapping.set_end_of_pass(true);
  absl::StatusOr<v1::TrainResponse> again = TrainOnce(overlapping);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->pass_summary().examples(), 1u);
  ASSERT_EQ(again->results_size(), 3);
  EXPECT_TRUE(again->results(0).duplicate());
  EXPECT_TRUE(again->results(1).duplicate());
  EXPECT_FALSE(again->results(2).duplicate());
  EXPECT_EQ(again->results(2).examples_seen(), 4u);
  EXPECT_EQ(*client_.GetSourceSequence("m", "p"), 4u);
  EXPECT_EQ(*client_.GetSourceSequence("m", "other"), 0u);
  // Another source numbers on its own.
  ASSERT_TRUE(TrainOnce(Tagged("q", 1, 1)).ok());
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 5u);

  // The positions survive a crash (from the log) and a restart (from the
  // snapshot), and resending is still deduplicated.
  {
    CrashCopy crash(server_.data_dir());
    Client client = crash.Start();
    EXPECT_EQ(*client.GetSourceSequence("m", "p"), 4u);
    EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 5u);
  }
  server_.Restart();
  Client client = server_.NewClient();
  EXPECT_EQ(*client.GetSourceSequence("m", "p"), 4u);
  stub_ = server_.NewStub();
  absl::StatusOr<v1::TrainResponse> resent = TrainOnce(Tagged("p", 1, 4));
  ASSERT_TRUE(resent.ok()) << resent.status();
  for (const v1::ExampleResult& r : resent->results()) {
    EXPECT_TRUE(r.duplicate());
  }
  EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 5u);
}

TEST_F(DurabilityTest, BadSourcesAndSequencesAreInvalidArguments) {
  CreatePerceptron("m", 2);
  v1::TrainRequest untagged_sequence = Tagged("", 5, 1);
  EXPECT_THAT(TrainOnce(untagged_sequence).status().message(),
              HasSubstr("sequence is set but source is not"));
  EXPECT_THAT(TrainOnce(Tagged("p", 0, 1)).status().message(),
              HasSubstr("numbered from 1"));
  EXPECT_THAT(TrainOnce(Tagged(std::string(129, 's'), 1, 1)).status().message(),
              HasSubstr("the most is 128"));
  EXPECT_THAT(TrainOnce(Tagged("p", UINT64_MAX, 2)).status().message(),
              HasSubstr("below 2^64"));
  // A stream keeps its source.
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub_->Train(&context);
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Write(Tagged("p", 1, 1)) && stream->Read(&response));
  v1::TrainRequest other = Tagged("q", 2, 1);
  other.clear_model();
  ASSERT_TRUE(stream->Write(other));
  EXPECT_FALSE(stream->Read(&response));
  absl::Status ended = FromGrpcStatus(stream->Finish());
  EXPECT_TRUE(absl::IsInvalidArgument(ended));
  EXPECT_THAT(ended.message(), HasSubstr("this stream's source is 'p'"));
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 1u);
}

TEST_F(DurabilityTest, ExactlyOnceTrainerNumbersOnFromWhereTheServerStands) {
  CreatePerceptron("m", 2);
  auto trainer = ExactlyOnceTrainer::Open(&client_, "m", "producer");
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ((*trainer)->last_applied(), 0u);
  const std::vector<LabeledExample> batch = {{{1, 2}, 1}, {{-1, 0}, -1}};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*trainer)->Train(batch).ok());
  EXPECT_EQ((*trainer)->last_applied(), 6u);

  // A producer that restarts resumes after the last applied example.
  auto resumed = ExactlyOnceTrainer::Open(&client_, "m", "producer");
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ((*resumed)->last_applied(), 6u);
  absl::StatusOr<v1::TrainResponse> more = (*resumed)->Train(batch);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(more->results(0).duplicate());
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 8u);

  // Errors a retry cannot cure come back at once.
  auto missing = ExactlyOnceTrainer::Open(&client_, "nope", "producer");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
}

TEST_F(DurabilityTest, ExportedModelsImportUnderANewNameWithTheirWholeState) {
  ASSERT_TRUE(
      client_
          .CreateModel(
              "avg", TextAlgorithm("sgd { loss: LOSS_LOG average_from: 2 }"), 2)
          .ok());
  std::unique_ptr<TrainingStream> stream = client_.Train("avg", "p", 1);
  ASSERT_TRUE(stream->Send({{{1, 2}, 1}, {{-1, 0}, -1}, {{2, -1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Finish().ok());

  absl::StatusOr<std::string> file = client_.ExportModel("avg");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->substr(0, 4), "HSPM");
  absl::StatusOr<v1::Model> copy = client_.ImportModel("copy", *file);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->name(), "copy");
  EXPECT_EQ(copy->stats().examples_seen(), 3u);
  EXPECT_EQ(*client_.GetSourceSequence("copy", "p"), 3u);
  EXPECT_TRUE(
      absl::IsAlreadyExists(client_.ImportModel("copy", *file).status()));

  // The copy learns on exactly as the original does, averaging state and
  // all, and survives a crash.
  for (const char* name : {"avg", "copy"}) {
    std::unique_ptr<TrainingStream> more = client_.Train(name);
    ASSERT_TRUE(more->Send({{{0.5, 1}, -1}, {{3, 1}, 1}}).ok());
    ASSERT_TRUE(more->Receive().ok());
  }
  auto weights = [](Client& c, const char* name) {
    absl::StatusOr<v1::GetWeightsResponse> w = c.GetWeights(name);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::vector<double>(w->weights().begin(), w->weights().end());
  };
  EXPECT_EQ(weights(client_, "avg"), weights(client_, "copy"));
  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  EXPECT_EQ(weights(recovered, "copy"), weights(client_, "avg"));

  std::string damaged = *file;
  damaged[damaged.size() / 2] ^= 1;
  const absl::Status refused = client_.ImportModel("bad", damaged).status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("checksum mismatch"));
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_.ImportModel("a/b", *file).status()));
  EXPECT_TRUE(absl::IsNotFound(client_.ExportModel("nope").status()));
}

TEST(DurabilityLimitsTest, ATrainRequestWhoseResponseCannotBeSentIsNotLearned) {
  TestServer server([](ServerOptions& o) { o.max_message_bytes = 64 << 10; });
  Client client = server.NewClient();
  v1::CreateModelRequest create;
  create.set_model("many");
  *create.mutable_algorithm() = TextAlgorithm("softmax_regression");
  create.set_dimension(2);
  for (int k = 0; k < 300; ++k) {
    create.add_classes(absl::StrCat(std::string(90, 'c'), k));
  }
  ASSERT_TRUE(client.CreateModel(create).ok());
  const std::vector<double> before = {
      client.GetWeights("many")->weights().begin(),
      client.GetWeights("many")->weights().end()};

  // Ten results of 300 class scores each would take ~400 kB.
  std::vector<LabeledExample> examples(10, {{1, 2}, 0, 1.0, "c-new"});
  std::unique_ptr<TrainingStream> stream = client.Train("many");
  ASSERT_TRUE(stream->Send(examples).ok());
  EXPECT_FALSE(stream->Receive().ok());
  absl::Status refused = stream->Finish();
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("send fewer examples per request"));
  absl::StatusOr<v1::Model> model = client.GetModel("many");
  EXPECT_EQ(model->stats().examples_seen(), 0u);
  EXPECT_EQ(model->classes_size(), 300);

  // One example's response fits.
  stream = client.Train("many");
  ASSERT_TRUE(stream->Send({examples[0]}).ok());
  absl::StatusOr<v1::TrainResponse> one = stream->Receive();
  ASSERT_TRUE(one.ok()) << stream->Finish();
  EXPECT_EQ(one->results(0).class_scores_size(), 301);
}

// Flips one byte in the middle of a file.
// An example whose update overflows is refused in-band, the stream goes
// on, and recovery from the log refuses it again: the same model.
TEST_F(DurabilityTest, AnOverflowingExampleIsRefusedInBandAndAgainOnRecovery) {
  v1::CreateModelRequest create;
  create.set_model("m");
  *create.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  create.set_dimension(2);
  ASSERT_TRUE(client_.CreateModel(create).ok());
  std::unique_ptr<TrainingStream> stream = client_.Train("m");
  // The second's step 1e308·(0, 2) overflows; its class 'b' is not added.
  ASSERT_TRUE(stream
                  ->Send({{{1, 0}, 0, 1.0, "a"},
                          {{0, 2}, 0, 1e308, "b"},
                          {{0, 1}, 0, 1.0, "c"},
                          {{1, 1}, 0, 1.0, "a"}})
                  .ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), 4);
  EXPECT_EQ(response->results(1).error().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(response->results(1).error().message(),
              HasSubstr("the model is unchanged"));
  EXPECT_FALSE(response->results(3).has_error());
  absl::StatusOr<v1::GetWeightsResponse> served = client_.GetWeights("m");
  ASSERT_TRUE(served.ok()) << served.status();

  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  absl::StatusOr<v1::Model> model = recovered.GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(model->classes(), ElementsAre("a", "c"));
  EXPECT_EQ(model->stats().examples_seen(), 3u);
  absl::StatusOr<v1::GetWeightsResponse> weights = recovered.GetWeights("m");
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_EQ(weights->DebugString(), served->DebugString());
}

TEST(DurabilityLimitsTest,
     RecoveryRefusesWhatALimitRefusedWhateverTheFlagsNow) {
  TestServer server([](ServerOptions& o) { o.limits.max_classes = 2; });
  Client client = server.NewClient();
  v1::CreateModelRequest create;
  create.set_model("m");
  *create.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  create.set_dimension(1);
  create.add_classes("a");
  ASSERT_TRUE(client.CreateModel(create).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(
      stream->Send({{{1}, 0, 1.0, "a"}, {{1}, 0, 1.0, "b"}, {{1}, 0, 1.0, "c"}})
          .ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->results(2).error().code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Recovered from the log alone, under a limit that would admit 'c'.
  CrashCopy crash(server.data_dir());
  Client recovered =
      crash.Start([](ServerOptions& o) { o.limits.max_classes = 100; });
  absl::StatusOr<v1::Model> model = recovered.GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(model->classes(), ElementsAre("a", "b"));
  EXPECT_EQ(model->stats().examples_seen(), 2u);
}

void FlipAByte(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  ASSERT_FALSE(bytes.empty()) << path;
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Trains `model` on `n` examples in one request.
void TrainSome(Client& client, const std::string& model, int n) {
  std::vector<LabeledExample> batch;
  for (int i = 0; i < n; ++i)
    batch.push_back({{1.0 + i, -2.0}, i % 2 ? 1 : -1});
  std::unique_ptr<TrainingStream> stream = client.Train(model);
  ASSERT_TRUE(stream->Send(batch).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Finish().ok());
}

// Two snapshots of "m" (the current one after 5 + 7 examples, the previous
// after 5), and 3 more examples in the log only.
void TwoSnapshotsAndALog(TestServer& server) {
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  TrainSome(client, "m", 5);
  server.Restart();  // snapshots at shutdown
  client = server.NewClient();
  TrainSome(client, "m", 7);
  server.Restart();
  client = server.NewClient();
  TrainSome(client, "m", 3);
}

// A damaged snapshot whose changes the log still holds since the previous
// snapshot costs nothing: the model recovers from that one and the log,
// and the damaged file is set aside, not overwritten.
TEST(DurabilityRecoveryTest,
     ADamagedSnapshotFallsBackToThePreviousOneAndTheLog) {
  TestServer server;
  TwoSnapshotsAndALog(server);
  const auto want = server.NewClient().GetWeights("m")->weights();
  CrashCopy crash(server.data_dir());
  FlipAByte(crash.File("m.model"));
  Client client = crash.Start();
  absl::StatusOr<v1::Model> m = client.GetModel("m");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->unavailable_reason(), "");
  EXPECT_EQ(m->stats().examples_seen(), 15u);
  EXPECT_THAT(client.GetWeights("m")->weights(),
              ::testing::ElementsAreArray(want));
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(crash.File(""))) {
    set_aside |=
        e.path().filename().string().rfind("m.model.set-aside-", 0) == 0;
  }
  EXPECT_TRUE(set_aside);
}

// When the log no longer holds those changes, the model is unavailable until
// the operator rolls it back to the previous snapshot.
TEST(DurabilityRecoveryTest, RestoreModelRollsBackWhatTheLogCannotRebuild) {
  TestServer server;
  TwoSnapshotsAndALog(server);
  CrashCopy crash(server.data_dir());
  FlipAByte(crash.File("m.model"));
  fs::remove_all(crash.File("wal"));
  Client client = crash.Start();
  absl::StatusOr<v1::Model> m = client.GetModel("m");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->unavailable_reason(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(m->unavailable_reason(), HasSubstr("RestoreModel"));
  EXPECT_EQ(client.Predict("m", {{1, 1}}).status().code(),
            absl::StatusCode::kDataLoss);

  absl::StatusOr<v1::Model> restored = client.RestoreModel("m");
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->stats().examples_seen(), 5u);  // the previous snapshot
  EXPECT_TRUE(client.Predict("m", {{1, 1}}).ok());
  EXPECT_EQ(client.RestoreModel("m").status().code(),
            absl::StatusCode::kFailedPrecondition);
  TrainSome(client, "m", 2);

  // The roll-back and what followed survive a crash.
  CrashCopy again(crash.dir());
  Client after = again.Start();
  EXPECT_EQ(after.GetModel("m")->stats().examples_seen(), 7u);
}

// A byte flipped in one model's log record makes that model unavailable
// (with the reason) and leaves the others whole.
TEST_F(DurabilityTest, AFlippedByteInALogRecordCostsOnlyItsModel) {
  CreatePerceptron("a", 2);
  CreatePerceptron("b", 2);
  for (const char* name : {"a", "b"}) {
    std::unique_ptr<TrainingStream> stream = client_.Train(name);
    ASSERT_TRUE(stream->Send({{{1234.5, 1}, -1}}).ok());
    ASSERT_TRUE(stream->Receive().ok());
    ASSERT_TRUE(stream->Send({{{2, 1}, 1}}).ok());
    ASSERT_TRUE(stream->Receive().ok());
  }
  CrashCopy crash(server_.data_dir());
  std::string segment;
  for (const auto& e : fs::directory_iterator(crash.File("wal"))) {
    segment = e.path().string();
  }
  std::ifstream in(segment, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  const double marker = 1234.5;
  const std::string needle(reinterpret_cast<const char*>(&marker), 8);
  const size_t first = bytes.find(needle);
  const size_t second = bytes.find(needle, first + 1);  // model b's
  ASSERT_NE(second, std::string::npos);
  bytes[second] ^= 1;
  std::ofstream(segment, std::ios::binary | std::ios::trunc) << bytes;

  Client client = crash.Start();
  EXPECT_EQ(client.GetModel("a")->stats().examples_seen(), 2u);
  absl::StatusOr<v1::Model> b = client.GetModel("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->unavailable_reason(), HasSubstr("log is damaged"));
  // The segment is named, but no path of the server's is told.
  EXPECT_THAT(b->unavailable_reason(),
              HasSubstr(fs::path(segment).filename().string()));
  EXPECT_THAT(b->unavailable_reason(), Not(HasSubstr(crash.dir().path())));
  const absl::Status predicted = client.Predict("b", {{1, 1}}).status();
  EXPECT_EQ(predicted.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(predicted.message(), Not(HasSubstr(crash.dir().path())));
}

// Flips one payload byte of the last log record that holds `marker`, in
// the data directory `dir`; returns the segment's file name.
std::string DamageLastRecordHolding(const TempDir& dir, double marker) {
  std::string segment;
  for (const auto& e : fs::directory_iterator(dir.File("wal"))) {
    if (e.path().extension() == ".log") segment = e.path().string();
  }
  std::ifstream in(segment, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  const std::string needle(reinterpret_cast<const char*>(&marker), 8);
  const size_t at = bytes.rfind(needle);
  EXPECT_NE(at, std::string::npos);
  bytes[at] ^= 1;
  std::ofstream(segment, std::ios::binary | std::ios::trunc) << bytes;
  return fs::path(segment).filename().string();
}

// The outside trial's sequence: r1 stored at a SIGTERM, trained once more,
// another model trained after it, kill -9, and r1's last record damaged.
// r1 comes back unavailable, saying what a roll-back gives up.
class DamagedRecordTest : public DurabilityTest {
 protected:
  void SetUp() override {
    CreatePerceptron("r1", 2);
    CreatePerceptron("other", 2);
    Train("r1", {{{1, 2}, -1}, {{2, 1}, 1}});
    backup_ = *client_.ExportModel("r1");
    server_.Restart();  // SIGTERM: r1's snapshot holds its two examples
    client_ = server_.NewClient();
    Train("r1", {{{1234.5, 1}, -1}});
    Train("other", {{{1, 1}, 1}});
    crash_ = std::make_unique<CrashCopy>(server_.data_dir());  // kill -9
    segment_ = DamageLastRecordHolding(crash_->dir(), 1234.5);
    client_ = crash_->Start();
  }

  void Train(const std::string& name, std::vector<LabeledExample> examples) {
    std::unique_ptr<TrainingStream> stream = client_.Train(name);
    ASSERT_TRUE(stream->Send(examples).ok());
    ASSERT_TRUE(stream->Receive().ok());
    ASSERT_TRUE(stream->Finish().ok());
  }

  // Stops the server (SIGTERM) and starts it again on the same files.
  void Restart() {
    crash_->Stop();
    client_ = crash_->Start();
  }

  // A kill -9 of the copy's server: a copy of its files, served.
  void Crash() {
    again_ = std::make_unique<CrashCopy>(crash_->dir());
    client_ = again_->Start();
  }

  std::string backup_;
  std::unique_ptr<CrashCopy> crash_, again_;
  std::string segment_;
};

TEST_F(DamagedRecordTest, TheModelIsUnavailableAndSaysWhatARollBackGivesUp) {
  absl::StatusOr<v1::Model> r1 = client_.GetModel("r1");
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_THAT(r1->unavailable_reason(),
              HasSubstr(absl::StrCat("log segment ", segment_, " at byte ")));
  EXPECT_THAT(r1->unavailable_reason(),
              HasSubstr("RestoreModel rolls it back to its state before the "
                        "damage"));
  EXPECT_THAT(r1->unavailable_reason(), HasSubstr("0 later change(s)"));
  EXPECT_EQ(client_.GetModel("other")->stats().examples_seen(), 1u);
  // The damaged bytes are kept beside the segment.
  int kept = 0;
  for (const auto& e : fs::directory_iterator(crash_->File("wal"))) {
    kept += absl::StrContains(e.path().filename().string(), ".damaged-at-");
  }
  EXPECT_EQ(kept, 1);

  absl::StatusOr<v1::Model> restored = client_.RestoreModel("r1");
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->stats().examples_seen(), 2u);  // the snapshot's two
  Restart();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 2u);
  Crash();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 2u);
}

// A checkpoint keeps the log an unavailable model needs: once the log has
// moved on into new segments and been cut back, the model is still
// unavailable after a restart, not back without its damaged change.
TEST_F(DamagedRecordTest, ACheckpointKeepsTheLogOfAnUnavailableModel) {
  const auto small_segments = [](ServerOptions& o) {
    o.log_segment_bytes = 4096;
  };
  crash_->Stop();
  client_ = crash_->Start(small_segments);
  for (int i = 0; i < 10; ++i) {
    Train("other", std::vector<LabeledExample>(50, {{1, 1}, 1}));
  }
  crash_->Stop();  // a checkpoint: "other" stored, the log cut back
  client_ = crash_->Start(small_segments);
  absl::StatusOr<v1::Model> r1 = client_.GetModel("r1");
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_THAT(r1->unavailable_reason(),
              HasSubstr("RestoreModel rolls it back to its state before the "
                        "damage"));
  EXPECT_EQ(client_.GetModel("other")->stats().examples_seen(), 501u);
}

TEST_F(DamagedRecordTest, ADeletionIsABarrierAcrossRestartsAndCrashes) {
  ASSERT_TRUE(client_.DeleteModel("r1").ok());
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    Restart();
    EXPECT_TRUE(absl::IsNotFound(client_.GetModel("r1").status()));
    Crash();
    EXPECT_TRUE(absl::IsNotFound(client_.GetModel("r1").status()));
  }
  // The name is free again, and what is made under it stays as made.
  Restart();
  ASSERT_TRUE(client_.CreateModel("r1", TextAlgorithm("perceptron"), 2).ok());
  Train("r1", {{{5, 5}, 1}});
  Restart();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 1u);
  Crash();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 1u);
}

TEST_F(DamagedRecordTest, AnImportAfterTheDeletionIsWhatComesBack) {
  ASSERT_TRUE(client_.DeleteModel("r1").ok());
  absl::StatusOr<v1::Model> imported = client_.ImportModel("r1", backup_);
  ASSERT_TRUE(imported.ok()) << imported.status();
  Crash();  // before any snapshot of the import
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 2u);
  EXPECT_TRUE(client_.GetModel("r1")->unavailable_reason().empty());
  Restart();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 2u);
  EXPECT_TRUE(client_.GetModel("r1")->unavailable_reason().empty());
  Train("r1", {{{3, 3}, -1}});
  Crash();
  EXPECT_EQ(client_.GetModel("r1")->stats().examples_seen(), 3u);
  EXPECT_EQ(client_.GetModel("other")->stats().examples_seen(), 1u);
}

// Fills the file system holding `dir` to the last byte.
void FillUp(const std::string& dir) {
  const std::string path = dir + "/filler";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const std::string block(4096, 'f');
  for (size_t size : {block.size(), size_t{1}}) {
    while (::write(fd, block.data(), size) > 0) {
    }
  }
  ::close(fd);
}

// On a full disk, changes fail with RESOURCE_EXHAUSTED and apply nothing,
// predictions go on, nothing acknowledged is lost, and changes succeed
// again once there is room.
TEST(DurabilityLimitsTest, AFullDiskFailsWritesWhileReadsGoOn) {
  TempDir dir;
  const std::string mount = dir.File("small");
  fs::create_directories(mount);
  if (::mount("tmpfs", mount.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mount};
  // Records larger than a page: a full tmpfs still takes a write that fits
  // the slack of a file's last page.
  constexpr int kDimension = 1024;
  const std::vector<LabeledExample> batch(
      20, {std::vector<double>(kDimension, 0.5), 1});
  {
    TestServer server([&](ServerOptions& o) { o.data_dir = mount + "/data"; });
    Client client = server.NewClient();
    ASSERT_TRUE(
        client.CreateModel("m", TextAlgorithm("perceptron"), kDimension).ok());
    std::unique_ptr<TrainingStream> stream = client.Train("m");
    ASSERT_TRUE(stream->Send(batch).ok());
    ASSERT_TRUE(stream->Receive().ok());
    const auto before = client.GetWeights("m")->weights();

    FillUp(mount);
    ASSERT_TRUE(stream->Send(batch).ok());
    EXPECT_FALSE(stream->Receive().ok());
    const absl::Status full = stream->Finish();
    EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
    EXPECT_THAT(full.message(), HasSubstr("No space left on device"));
    EXPECT_THAT(full.message(), Not(HasSubstr(mount)));  // no server path
    const absl::Status set =
        client.SetWeights("m", std::vector<double>(kDimension, 42), 1).status();
    EXPECT_TRUE(absl::IsResourceExhausted(set)) << set;
    EXPECT_THAT(set.message(), Not(HasSubstr(mount)));
    // Nothing was applied; reads go on.
    EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 20u);
    EXPECT_THAT(client.GetWeights("m")->weights(),
                ::testing::ElementsAreArray(before));
    EXPECT_TRUE(client.Predict("m", {std::vector<double>(kDimension, 1)}).ok());

    fs::remove(mount + "/filler");
    stream = client.Train("m");
    ASSERT_TRUE(stream->Send(batch).ok());
    ASSERT_TRUE(stream->Receive().ok()) << stream->Finish();
    EXPECT_TRUE(stream->Finish().ok());
  }
  // Restarted from the disk: every acknowledged example is there, once.
  TestServer restarted([&](ServerOptions& o) { o.data_dir = mount + "/data"; });
  EXPECT_EQ(restarted.NewClient().GetModel("m")->stats().examples_seen(), 40u);
}

}  // namespace
}  // namespace halfspace
