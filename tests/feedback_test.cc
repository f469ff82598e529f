// Delayed labels: Predict with remember, then Feedback, over real gRPC.
// Feedback learns exactly what a Train stream of the same examples in the
// same order learns; each id is learned once; unknown, expired and dropped
// ids are told so; pending examples are bounded, counted, and survive a
// restart and a crash.

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/monitors/pending_examples.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

using Stub = v1::HalfspaceService::Stub;

void Create(Stub& stub, const std::string& model, const std::string& algorithm,
            int dimension) {
  grpc::ClientContext context;
  v1::CreateModelRequest request;
  request.set_model(model);
  *request.mutable_algorithm() = TextAlgorithm(algorithm);
  request.set_dimension(dimension);
  v1::CreateModelResponse response;
  ASSERT_TRUE(stub.CreateModel(&context, request, &response).ok());
}

absl::StatusOr<v1::PredictResponse> Remember(
    Stub& stub, const std::string& model,
    const std::vector<std::vector<double>>& xs,
    const std::vector<std::string>& ids = {}) {
  return PredictVectors(stub, model, xs, /*remember=*/true, /*query=*/false,
                        ids);
}

absl::StatusOr<v1::FeedbackResponse> Feedback(
    Stub& stub, const std::string& model,
    const std::vector<std::pair<std::string, int>>& labels,
    const std::vector<double>& weights = {}) {  // importance, if given
  grpc::ClientContext context;
  v1::FeedbackRequest request;
  request.set_model(model);
  for (size_t i = 0; i < labels.size(); ++i) {
    v1::ExampleFeedback* f = request.add_feedback();
    f->set_example_id(labels[i].first);
    f->set_label(labels[i].second);
    if (i < weights.size()) f->set_weight(weights[i]);
  }
  v1::FeedbackResponse response;
  const grpc::Status s = stub.Feedback(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

v1::Model GetModel(Stub& stub, const std::string& model) {
  grpc::ClientContext context;
  v1::GetModelRequest request;
  request.set_model(model);
  v1::GetModelResponse response;
  EXPECT_TRUE(stub.GetModel(&context, request, &response).ok());
  return response.model();
}

class FeedbackTest : public ::testing::Test {
 protected:
  TestServer server_;
  std::unique_ptr<Stub> stub_ = server_.NewStub();
};

// Predictions remembered in one order, their labels (and importance
// weights) arriving in another and in several calls: the same weights, bit
// for bit, and the same per-example results as a Train stream of the
// examples in the labels' order.
TEST_F(FeedbackTest, LearnsExactlyAsATrainStreamInTheFeedbacksOrder) {
  for (const std::string algorithm :
       {"perceptron", "sgd { loss: LOSS_LOG average_from: 5 }",
        "confidence_weighted"}) {
    SCOPED_TRACE(algorithm);
    const std::string delayed = absl::StrCat("delayed", algorithm.size());
    const std::string streamed = absl::StrCat("streamed", algorithm.size());
    Create(*stub_, delayed, algorithm, 3);
    Create(*stub_, streamed, algorithm, 3);
    const auto examples = NoisyExamples(60);
    std::vector<std::vector<double>> xs;
    for (const auto& [x, y] : examples) xs.push_back(x);
    absl::StatusOr<v1::PredictResponse> predicted =
        Remember(*stub_, delayed, xs);
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    // Labels come back to front, in three calls.
    std::vector<int> order;
    for (int i = 59; i >= 0; --i) order.push_back(i);
    v1::TrainRequest train;
    train.set_model(streamed);
    std::vector<v1::ExampleResult> results;
    for (int part = 0; part < 3; ++part) {
      std::vector<std::pair<std::string, int>> labels;
      std::vector<double> weights;
      for (int k = part * 20; k < part * 20 + 20; ++k) {
        const int i = order[k];
        labels.push_back(
            {predicted->predictions(i).example_id(), examples[i].second});
        weights.push_back(0.25 + i % 4);
        AddExample(train, examples[i].first, examples[i].second);
        train.mutable_examples(train.examples_size() - 1)
            ->set_weight(weights.back());
      }
      absl::StatusOr<v1::FeedbackResponse> learned =
          Feedback(*stub_, delayed, labels, weights);
      ASSERT_TRUE(learned.ok()) << learned.status();
      ASSERT_EQ(learned->results_size(), 20);
      results.insert(results.end(), learned->results().begin(),
                     learned->results().end());
    }
    grpc::ClientContext context;
    std::unique_ptr<TrainStream> stream = stub_->Train(&context);
    v1::TrainResponse trained;
    ASSERT_TRUE(stream->Write(train) && stream->Read(&trained));
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
    ASSERT_EQ(trained.results_size(), 60);
    for (int k = 0; k < 60; ++k) {
      EXPECT_FALSE(results[k].has_error()) << results[k].error().message();
      EXPECT_EQ(results[k].score(), trained.results(k).score()) << k;
      EXPECT_EQ(results[k].loss(), trained.results(k).loss()) << k;
      EXPECT_EQ(results[k].updated(), trained.results(k).updated()) << k;
    }
    EXPECT_TRUE(
        BitIdentical(Weights(*stub_, delayed), Weights(*stub_, streamed)));
    const v1::ModelStats stats = GetModel(*stub_, delayed).stats();
    EXPECT_EQ(stats.examples_seen(), 60u);
    EXPECT_EQ(stats.pending_remembered(), 60u);
    EXPECT_EQ(stats.pending_joined(), 60u);
    EXPECT_EQ(stats.pending_waiting(), 0u);
  }
}

TEST_F(FeedbackTest, EachIdIsLearnedOnceAndUnknownOrBadOnesAreTold) {
  Create(*stub_, "m", "perceptron", 2);
  absl::StatusOr<v1::PredictResponse> predicted =
      Remember(*stub_, "m", {{1, 0}, {0, 1}}, {"click-1", "click-2"});
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->predictions(0).example_id(), "click-1");
  EXPECT_EQ(predicted->predictions(0).score(), 0);  // a fresh model
  // A bad label is rejected and the example stays remembered; an unknown
  // id, and one given twice, are told so.
  absl::StatusOr<v1::FeedbackResponse> r =
      Feedback(*stub_, "m",
               {{"click-1", 0}, {"nope", 1}, {"click-1", 1}, {"click-1", 1}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->results_size(), 4);
  EXPECT_EQ(r->results(0).error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(r->results(1).error().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(r->results(1).error().message(), HasSubstr("'nope'"));
  EXPECT_FALSE(r->results(2).has_error());
  EXPECT_TRUE(r->results(2).updated());
  EXPECT_TRUE(r->results(3).duplicate());
  // Later, too.
  r = Feedback(*stub_, "m", {{"click-1", -1}, {"click-2", -1}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->results(0).duplicate());
  EXPECT_FALSE(r->results(1).has_error());
  EXPECT_EQ(GetModel(*stub_, "m").stats().examples_seen(), 2u);
  // An id cannot be remembered twice.
  absl::StatusOr<v1::PredictResponse> again =
      Remember(*stub_, "m", {{1, 1}}, {"click-2"});
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  // Ids made by the server differ.
  predicted = Remember(*stub_, "m", {{1, 1}, {1, 1}});
  ASSERT_TRUE(predicted.ok());
  EXPECT_EQ(predicted->predictions(0).example_id().size(), 16u);
  EXPECT_NE(predicted->predictions(0).example_id(),
            predicted->predictions(1).example_id());
}

TEST_F(FeedbackTest, APredictStreamRemembersToo) {
  Create(*stub_, "m", "perceptron", 1);
  Client client = server_.NewClient();
  std::unique_ptr<PredictionStream> stream = client.PredictStream();
  v1::PredictStreamRequest request;
  request.set_model("m");
  request.set_remember(true);
  request.add_instances()->add_dense(1);
  request.add_instances()->add_dense(-1);
  request.add_example_ids("s-1");
  request.add_example_ids("s-2");
  absl::StatusOr<std::vector<v1::Prediction>> first = stream->Predict(request);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)[1].example_id(), "s-2");
  request.clear_example_ids();  // the server's ids
  request.clear_model();        // the stream's model
  absl::StatusOr<std::vector<v1::Prediction>> second = stream->Predict(request);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)[0].example_id().size(), 16u);
  absl::StatusOr<v1::FeedbackResponse> r =
      Feedback(*stub_, "m", {{"s-1", 1}, {(*second)[0].example_id(), 1}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->results(0).has_error());
  EXPECT_FALSE(r->results(1).has_error());
  EXPECT_EQ(GetModel(*stub_, "m").stats().pending_waiting(), 2u);
}

TEST_F(FeedbackTest, AFeedbackStreamAnswersEachRequestInBand) {
  Create(*stub_, "m", "perceptron", 1);
  ASSERT_TRUE(Remember(*stub_, "m", {{1}, {-1}, {2}}, {"a", "b", "c"}).ok());
  grpc::ClientContext context;
  auto stream = stub_->FeedbackStream(&context);
  auto request = [](const std::string& model,
                    std::vector<std::pair<std::string, int>> labels) {
    v1::FeedbackStreamRequest r;
    r.set_model(model);
    for (const auto& [id, y] : labels) {
      v1::ExampleFeedback* f = r.add_feedback();
      f->set_example_id(id);
      f->set_label(y);
    }
    return r;
  };
  // Three requests in flight: the second means the first's model, the
  // third's model does not exist.
  ASSERT_TRUE(stream->Write(request("m", {{"a", 1}, {"b", 1}})));
  ASSERT_TRUE(stream->Write(request("", {{"c", -1}, {"a", 1}})));
  ASSERT_TRUE(stream->Write(request("nope", {{"c", 1}})));
  stream->WritesDone();
  v1::FeedbackStreamResponse r;
  ASSERT_TRUE(stream->Read(&r));
  ASSERT_EQ(r.results_size(), 2);
  EXPECT_TRUE(r.results(0).updated());  // w = 0: the first always updates
  ASSERT_TRUE(stream->Read(&r));
  ASSERT_EQ(r.results_size(), 2);
  EXPECT_FALSE(r.results(0).has_error());
  EXPECT_TRUE(r.results(1).duplicate());
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.error().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(stream->Read(&r));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(GetModel(*stub_, "m").stats().pending_joined(), 3u);
}

TEST_F(FeedbackTest, AModelReportsItsRecentWindow) {
  grpc::ClientContext context;
  v1::CreateModelRequest create;
  create.set_model("w");
  *create.mutable_algorithm() = TextAlgorithm("perceptron");
  create.set_dimension(1);
  create.set_progress_window(2);
  v1::CreateModelResponse created;
  ASSERT_TRUE(stub_->CreateModel(&context, create, &created).ok());
  EXPECT_EQ(created.model().progress_window(), 2u);
  ASSERT_TRUE(Remember(*stub_, "w", {{1}, {1}, {1}}, {"a", "b", "c"}).ok());
  ASSERT_TRUE(Feedback(*stub_, "w", {{"a", -1}, {"b", -1}, {"c", -1}}).ok());
  const v1::ModelStats stats = GetModel(*stub_, "w").stats();
  EXPECT_EQ(stats.window_examples(), 2u);
  EXPECT_EQ(stats.window_accuracy(), 1.0);  // the first's mistake has left
  EXPECT_NEAR(stats.progressive_accuracy(), 2.0 / 3, 1e-15);
  EXPECT_GT(stats.decayed_accuracy(), stats.progressive_accuracy());
  grpc::ClientContext refused;
  create.set_model("w0");
  create.set_progress_window(0);
  EXPECT_EQ(stub_->CreateModel(&refused, create, &created).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(FeedbackTest, BadRememberRequestsRememberNothing) {
  Create(*stub_, "m", "perceptron", 2);
  for (const std::vector<std::string>& ids :
       std::vector<std::vector<std::string>>{{"a"},
                                             {"a", "a"},
                                             {"a", ""},
                                             {"a", "has space"},
                                             {"a", std::string(65, 'x')}}) {
    absl::StatusOr<v1::PredictResponse> r =
        Remember(*stub_, "m", {{1, 0}, {0, 1}}, ids);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  }
  grpc::ClientContext context;
  v1::PredictRequest request;  // ids without remember
  request.set_model("m");
  request.add_instances()->add_dense(1);
  request.add_instances()->add_dense(1);
  request.add_example_ids("a");
  v1::PredictResponse response;
  EXPECT_EQ(stub_->Predict(&context, request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetModel(*stub_, "m").stats().pending_remembered(), 0u);
}

TEST(FeedbackLimitsTest, TheOldestAreDroppedAndExpiredOnesAreTold) {
  TestServer server([](ServerOptions& o) {
    o.limits.max_pending_examples = 2;
    o.limits.pending_ttl_seconds = 1;
  });
  std::unique_ptr<Stub> stub = server.NewStub();
  Create(*stub, "m", "perceptron", 1);
  ASSERT_TRUE(Remember(*stub, "m", {{1}, {2}, {3}}, {"a", "b", "c"}).ok());
  v1::ModelStats stats = GetModel(*stub, "m").stats();
  EXPECT_EQ(stats.pending_waiting(), 2u);
  EXPECT_EQ(stats.pending_expired(), 1u);
  EXPECT_GT(stats.pending_bytes(), 0);
  absl::StatusOr<v1::FeedbackResponse> r =
      Feedback(*stub, "m", {{"a", 1}, {"b", 1}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->results(0).error().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(r->results(0).error().message(), HasSubstr("expired"));
  EXPECT_FALSE(r->results(1).has_error());
  absl::SleepFor(absl::Milliseconds(1100));  // past c's time to live
  r = Feedback(*stub, "m", {{"c", 1}});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->results(0).error().message(), HasSubstr("expired"));
  stats = GetModel(*stub, "m").stats();
  EXPECT_EQ(stats.pending_waiting(), 0u);
  EXPECT_EQ(stats.pending_joined(), 1u);
  EXPECT_EQ(stats.pending_expired(), 2u);
}

// A multiclass model's feedback names classes, a new one too; recovery
// learns the same classes and weights.
TEST_F(FeedbackTest, RecoveryLearnsLoggedClassLabels) {
  {
    grpc::ClientContext context;
    v1::CreateModelRequest create;
    create.set_model("m");
    *create.mutable_algorithm() = TextAlgorithm("softmax_regression");
    create.set_dimension(2);
    create.add_classes("cat");
    v1::CreateModelResponse created;
    ASSERT_TRUE(stub_->CreateModel(&context, create, &created).ok());
  }
  absl::StatusOr<v1::PredictResponse> remembered =
      Remember(*stub_, "m", {{1, 0}, {0, 1}, {1, 1}}, {"a", "b", "c"});
  ASSERT_TRUE(remembered.ok()) << remembered.status();
  grpc::ClientContext context;
  v1::FeedbackRequest request;
  request.set_model("m");
  for (const auto& [id, label] :
       std::vector<std::pair<std::string, std::string>>{
           {"a", "cat"}, {"b", "dog"}, {"c", "cat"}}) {
    v1::ExampleFeedback* f = request.add_feedback();
    f->set_example_id(id);
    f->set_class_label(label);
  }
  v1::FeedbackResponse response;
  ASSERT_TRUE(stub_->Feedback(&context, request, &response).ok());
  EXPECT_EQ(GetModel(*stub_, "m").stats().examples_seen(), 3u);

  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  std::unique_ptr<Stub> stub = v1::HalfspaceService::NewStub(Connected(
      grpc::CreateChannel(crash.target(), grpc::InsecureChannelCredentials())));
  const v1::Model model = GetModel(*stub, "m");
  EXPECT_THAT(model.classes(), ::testing::ElementsAre("cat", "dog"));
  EXPECT_EQ(model.stats().examples_seen(), 3u);
  EXPECT_EQ(model.stats().weight_norm(),
            GetModel(*stub_, "m").stats().weight_norm());
}

// Feedback that learns also drops the remembered examples that are due,
// giving back their memory.
TEST(FeedbackLimitsTest, FeedbackGivesBackWhatIsDue) {
  TestServer server([](ServerOptions& o) { o.limits.pending_ttl_seconds = 2; });
  std::unique_ptr<Stub> stub = server.NewStub();
  Create(*stub, "m", "perceptron", 1);
  ASSERT_TRUE(Remember(*stub, "m", {{1}}, {"a"}).ok());
  absl::SleepFor(absl::Milliseconds(1500));
  ASSERT_TRUE(Remember(*stub, "m", {{2}}, {"b"}).ok());
  const int64_t both = GetModel(*stub, "m").stats().pending_bytes();
  absl::SleepFor(absl::Milliseconds(1000));  // a is due, b is not
  absl::StatusOr<v1::FeedbackResponse> r = Feedback(*stub, "m", {{"b", 1}});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->results(0).has_error()) << r->results(0).error().message();
  const v1::ModelStats stats = GetModel(*stub, "m").stats();
  EXPECT_GT(both, 0);
  // What is left is the two ids' tombstones: b joined, a expired.
  EXPECT_EQ(stats.pending_bytes(),
            2 * (PendingExamples::kTombstoneOverheadBytes + 1));
  EXPECT_EQ(stats.pending_expired(), 1u);
  EXPECT_EQ(stats.pending_joined(), 1u);
}

// Remembered examples survive a restart (from the snapshot) and a crash
// (from the log), and so does what was joined.
TEST_F(FeedbackTest, PendingExamplesSurviveARestartAndACrash) {
  Create(*stub_, "m", "sgd", 2);
  ASSERT_TRUE(
      Remember(*stub_, "m", {{1, 0}, {0, 1}, {1, 1}}, {"a", "b", "c"}).ok());
  ASSERT_TRUE(Feedback(*stub_, "m", {{"a", 1}}).ok());
  server_.Restart();
  stub_ = server_.NewStub();
  EXPECT_EQ(GetModel(*stub_, "m").stats().pending_waiting(), 2u);
  ASSERT_TRUE(Remember(*stub_, "m", {{2, 0}}, {"d"}).ok());
  ASSERT_TRUE(Feedback(*stub_, "m", {{"b", -1}}).ok());

  // A crash now: the log since the restart's snapshot holds d and b.
  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  std::unique_ptr<Stub> stub = v1::HalfspaceService::NewStub(Connected(
      grpc::CreateChannel(crash.target(), grpc::InsecureChannelCredentials())));
  for (Stub* s : {stub_.get(), stub.get()}) {
    absl::StatusOr<v1::FeedbackResponse> r =
        Feedback(*s, "m", {{"a", 1}, {"b", 1}, {"c", 1}, {"d", -1}});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->results(0).duplicate());
    EXPECT_TRUE(r->results(1).duplicate());
    EXPECT_FALSE(r->results(2).has_error());
    EXPECT_FALSE(r->results(3).has_error());
  }
  EXPECT_TRUE(BitIdentical(Weights(*stub_, "m"), Weights(*stub, "m")));
  EXPECT_EQ(GetModel(*stub, "m").stats().pending_joined(), 4u);
}

// The log holds feedback as ids, labels and importance weights; recovery
// joins them to the remembered features and learns exactly the same:
// weighted and unweighted feedback, an id labeled twice in one request,
// an unknown id.
TEST_F(FeedbackTest, RecoveryLearnsLoggedFeedbackFromItsIdsAndLabels) {
  Create(*stub_, "m", "passive_aggressive", 2);
  ASSERT_TRUE(Remember(*stub_, "m", {{1, 0}, {0, 1}, {1, 1}, {-1, 2}, {3, -1}},
                       {"a", "b", "c", "d", "e"})
                  .ok());
  ASSERT_TRUE(
      Feedback(*stub_, "m", {{"c", 1}, {"a", -1}, {"c", -1}}, {0.25, 3.0})
          .ok());
  ASSERT_TRUE(
      Feedback(*stub_, "m", {{"nobody", 1}, {"e", 1}, {"b", -1}}, {1.0, 7.5})
          .ok());
  const v1::Model before = GetModel(*stub_, "m");
  EXPECT_EQ(before.stats().examples_seen(), 4u);

  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  std::unique_ptr<Stub> stub = v1::HalfspaceService::NewStub(Connected(
      grpc::CreateChannel(crash.target(), grpc::InsecureChannelCredentials())));
  EXPECT_TRUE(BitIdentical(Weights(*stub_, "m"), Weights(*stub, "m")));
  const v1::Model after = GetModel(*stub, "m");
  EXPECT_EQ(after.stats().examples_seen(), 4u);
  EXPECT_EQ(after.stats().updates(), before.stats().updates());
  EXPECT_EQ(after.stats().pending_joined(), 4u);
  EXPECT_EQ(after.stats().pending_waiting(), 1u);  // d
}

}  // namespace
}  // namespace halfspace
