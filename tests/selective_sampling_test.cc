// Selective sampling: the draw is the documented hash of the example id
// and the seed; a query asks with probability b/(b+|f(x)|); over real gRPC,
// Predict answers queries, Feedback learns an asked label with its
// importance weight 1/p exactly as a Train stream with that weight would,
// and the weights survive a restart and a crash.

#include "core/monitors/selective_sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;
using Stub = v1::HalfspaceService::Stub;

// Values computed apart from this code, from the definition in
// selective_sampling.h: FNV-1a-64 of the id's bytes, XOR the seed,
// SplitMix64, the top 53 bits over 2^53.
TEST(SamplingDrawTest, IsTheDocumentedHashOfTheIdAndSeed) {
  EXPECT_EQ(SamplingDraw(0, ""), 0.7636945250957473);
  EXPECT_EQ(SamplingDraw(0, "a"), 0.3717309634354091);
  EXPECT_EQ(SamplingDraw(7, "example-1"), 0.9165413993254975);
  EXPECT_EQ(SamplingDraw(4294967295u, "x"), 0.11032714845586888);
}

TEST(QueryLabelTest, AsksWithProbabilityBOverBPlusTheMargin) {
  const SelectiveSampling s{3.0, 11};
  int asked = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const std::string id = absl::StrCat("id-", i);
    const double score = i % 2 == 0 ? 9.0 : -9.0;  // p = 3/12 = 0.25
    const LabelQuery q = QueryLabel(s, score, id);
    EXPECT_EQ(q.probability, 0.25);
    EXPECT_EQ(q.ask, SamplingDraw(11, id) < 0.25);
    EXPECT_EQ(q.weight, q.ask ? 4.0 : 1.0);
    asked += q.ask;
  }
  // Binomial(20000, 0.25): the standard deviation is 61.
  EXPECT_NEAR(asked, n / 4, 300);
}

TEST(QueryLabelTest, AnUnweightedModelAsksAlikeAndLearnsWithWeightOne) {
  int asked = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string id = absl::StrCat(i);
    const LabelQuery weighted = QueryLabel({2, 5}, 6, id);
    const LabelQuery unweighted = QueryLabel({2, 5, true}, 6, id);
    EXPECT_EQ(unweighted.ask, weighted.ask);
    EXPECT_EQ(unweighted.probability, 0.25);
    EXPECT_EQ(weighted.weight, weighted.ask ? 4.0 : 1.0);
    EXPECT_EQ(unweighted.weight, 1.0);
    asked += unweighted.ask;
  }
  EXPECT_GT(asked, 0);
}

TEST(QueryLabelTest, AlwaysAsksOnTheBoundaryAndNeverPastFiniteWeights) {
  const SelectiveSampling s{0.5, 0};
  for (const char* id : {"a", "b", "c", "d"}) {
    const LabelQuery on = QueryLabel(s, 0.0, id);
    EXPECT_TRUE(on.ask);
    EXPECT_EQ(on.probability, 1.0);
    EXPECT_EQ(on.weight, 1.0);
    for (double score : {std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
      const LabelQuery q = QueryLabel(s, score, id);
      EXPECT_FALSE(q.ask);
      EXPECT_EQ(q.weight, 1.0);
    }
  }
  // A probability whose inverse overflows never asks.
  EXPECT_FALSE(QueryLabel({1e-300, 0}, 1e300, "").ask);
}

TEST(QueryLabelTest, TheSeedChangesTheDraws) {
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string id = absl::StrCat(i);
    differ += QueryLabel({1, 1}, 1, id).ask != QueryLabel({1, 2}, 1, id).ask;
  }
  EXPECT_GT(differ, 20);
}

TEST(SelectiveSamplingTest, ChecksB) {
  EXPECT_TRUE(CheckSelectiveSampling({0, 0}).ok());
  EXPECT_TRUE(CheckSelectiveSampling({kMaxSamplingB, 0}).ok());
  for (double b :
       {-1.0, 2 * kMaxSamplingB, std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_FALSE(CheckSelectiveSampling({b, 0}).ok()) << b;
  }
}

grpc::Status Create(Stub& stub, const std::string& model,
                    const std::string& algorithm, const std::string& sampling,
                    int dimension = 3) {
  grpc::ClientContext context;
  v1::CreateModelRequest request;
  request.set_model(model);
  *request.mutable_algorithm() = TextAlgorithm(algorithm);
  request.set_dimension(dimension);
  if (!sampling.empty()) {
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        sampling, request.mutable_selective_sampling()));
  }
  v1::CreateModelResponse response;
  return stub.CreateModel(&context, request, &response);
}

void Train(Stub& stub, const v1::TrainRequest& request) {
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub.Train(&context);
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  v1::TrainResponse response;
  while (stream->Read(&response)) {
  }
  ASSERT_TRUE(stream->Finish().ok());
}

class SelectiveSamplingServerTest : public ::testing::Test {
 protected:
  // Trains `model` on the first `n` noisy examples, so that its scores
  // spread.
  void WarmUp(const std::string& model, int n) {
    v1::TrainRequest train;
    train.set_model(model);
    const auto examples = NoisyExamples(n);
    for (const auto& [x, y] : examples) AddExample(train, x, y);
    Train(*stub_, train);
  }

  // Feedback for the asked labels of a model of that setting learns as a
  // Train stream with the weights its queries gave.
  void FeedbackLearnsWithTheQueriesWeights(bool unweighted);

  TestServer server_;
  std::unique_ptr<Stub> stub_ = server_.NewStub();
};

TEST_F(SelectiveSamplingServerTest, TheSettingIsKeptAndBadOnesRefused) {
  ASSERT_TRUE(Create(*stub_, "m", "perceptron", "b: 0.5 seed: 9").ok());
  grpc::ClientContext context;
  v1::GetModelRequest request;
  request.set_model("m");
  v1::GetModelResponse response;
  ASSERT_TRUE(stub_->GetModel(&context, request, &response).ok());
  EXPECT_EQ(response.model().selective_sampling().b(), 0.5);
  EXPECT_EQ(response.model().selective_sampling().seed(), 9u);
  EXPECT_FALSE(response.model().selective_sampling().unweighted());

  for (const char* bad : {"b: 0", "b: -1", "b: inf", "b: nan", "b: 2e12"}) {
    const grpc::Status s = Create(*stub_, "bad", "perceptron", bad);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_THAT(s.error_message(), HasSubstr("selective_sampling.b")) << bad;
  }
  EXPECT_TRUE(Create(*stub_, "mc", "multiclass_perceptron", "b: 1").ok());
}

// A multiclass model asks with probability b/(b + g), g the gap between
// its two highest class scores (0 with fewer than two classes); it reads
// them whatever top_k asked to see, and shows only what was asked.
TEST_F(SelectiveSamplingServerTest, AMulticlassQueryReadsTheTopTwoScoresGap) {
  ASSERT_TRUE(
      Create(*stub_, "mc", "multiclass_perceptron", "b: 0.5 seed: 4").ok());
  const auto predict = [&](const std::vector<std::string>& ids,
                           std::optional<uint32_t> top_k, bool remember) {
    grpc::ClientContext context;
    v1::PredictRequest request;
    request.set_model("mc");
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::vector<double> x = {std::sin(i * 1.3), std::cos(i * 0.7),
                                     (i % 5) * 0.25 - 0.5};
      request.add_instances()->mutable_dense()->Add(x.begin(), x.end());
      request.add_example_ids(ids[i]);
    }
    request.set_query(true);
    request.set_remember(remember);
    if (top_k.has_value()) request.set_top_k(*top_k);
    v1::PredictResponse response;
    const grpc::Status s = stub_->Predict(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  };
  std::vector<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.push_back(absl::StrCat("m", i));
  v1::TrainRequest train;
  train.set_model("mc");
  v1::Example* first = train.add_examples();
  for (int j = 0; j < 3; ++j) first->mutable_features()->add_dense(1.0);
  first->set_class_label("a");
  Train(*stub_, train);
  // One class: nothing to tell apart, every label asked for.
  const v1::PredictResponse one = predict(ids, 1, false);
  for (const v1::Prediction& p : one.predictions()) {
    EXPECT_TRUE(p.query().ask());
    EXPECT_EQ(p.query().probability(), 1.0);
    EXPECT_EQ(p.class_scores_size(), 1);
  }
  train.clear_examples();
  for (int i = 0; i < 60; ++i) {
    const std::vector<double> x = {std::sin(i * 0.9), std::cos(i * 1.1),
                                   (i % 3) * 0.5 - 0.5};
    v1::Example* e = train.add_examples();
    e->mutable_features()->mutable_dense()->Add(x.begin(), x.end());
    e->set_class_label(x[0] > 0.3 ? "a" : x[1] > 0 ? "b" : "c");
  }
  Train(*stub_, train);

  const v1::PredictResponse all = predict(ids, std::nullopt, false);
  int asked = 0;
  for (std::optional<uint32_t> top_k :
       {std::optional<uint32_t>(), std::optional<uint32_t>(0),
        std::optional<uint32_t>(1), std::optional<uint32_t>(2)}) {
    SCOPED_TRACE(top_k.value_or(99));
    const v1::PredictResponse r = predict(ids, top_k, false);
    ASSERT_EQ(r.predictions_size(), 100);
    for (int i = 0; i < 100; ++i) {
      const v1::Prediction& p = r.predictions(i);
      std::vector<double> scores;
      for (const v1::ClassScore& c : all.predictions(i).class_scores()) {
        scores.push_back(c.score());
      }
      ASSERT_EQ(scores.size(), 3u);
      std::sort(scores.rbegin(), scores.rend());
      const double probability = 0.5 / (0.5 + (scores[0] - scores[1]));
      EXPECT_EQ(p.query().probability(), probability) << i;
      EXPECT_EQ(p.query().ask(), SamplingDraw(4, ids[i]) < probability);
      EXPECT_EQ(p.class_scores_size(), top_k.has_value() ? *top_k : 3);
      EXPECT_EQ(p.predicted_class(), all.predictions(i).predicted_class());
      asked += p.query().ask();
    }
  }
  EXPECT_GT(asked, 0);
  EXPECT_LT(asked, 400);
  // Remembered with the query's weight, and trimmed alike.
  const v1::PredictResponse remembered = predict(ids, 0, true);
  for (int i = 0; i < 100; ++i) {
    const v1::Prediction& p = remembered.predictions(i);
    EXPECT_EQ(p.class_scores_size(), 0);
    EXPECT_FALSE(p.example_id().empty());
    EXPECT_EQ(p.query().probability(),
              all.predictions(i).query().probability());
  }
}

TEST_F(SelectiveSamplingServerTest, PredictAnswersEachQueryFromItsIdAndSeed) {
  ASSERT_TRUE(Create(*stub_, "m", "perceptron", "b: 0.5 seed: 4").ok());
  WarmUp("m", 50);
  std::vector<std::vector<double>> xs;
  std::vector<std::string> ids;
  for (const auto& [x, y] : NoisyExamples(200)) {
    xs.push_back(x);
    ids.push_back(absl::StrCat("x", ids.size()));
  }
  absl::StatusOr<v1::PredictResponse> r =
      PredictVectors(*stub_, "m", xs, /*remember=*/false, /*query=*/true, ids);
  ASSERT_TRUE(r.ok()) << r.status();
  int asked = 0;
  for (int i = 0; i < r->predictions_size(); ++i) {
    const v1::Prediction& p = r->predictions(i);
    const double probability = 0.5 / (0.5 + std::fabs(p.score()));
    EXPECT_EQ(p.query().probability(), probability);
    EXPECT_EQ(p.query().ask(), SamplingDraw(4, ids[i]) < probability);
    EXPECT_EQ(p.query().weight(), p.query().ask() ? 1 / probability : 1.0);
    EXPECT_TRUE(p.example_id().empty());  // nothing remembered
    asked += p.query().ask();
  }
  EXPECT_GT(asked, 0);
  EXPECT_LT(asked, 200);

  // Without ids or remember there is nothing to draw from; a model without
  // sampling cannot query.
  absl::StatusOr<v1::PredictResponse> no_ids =
      PredictVectors(*stub_, "m", xs, false, true);
  EXPECT_TRUE(absl::IsInvalidArgument(no_ids.status())) << no_ids.status();
  EXPECT_THAT(no_ids.status().message(), HasSubstr("example_ids"));
  ASSERT_TRUE(Create(*stub_, "plain", "perceptron", "").ok());
  absl::StatusOr<v1::PredictResponse> plain =
      PredictVectors(*stub_, "plain", xs, false, true, ids);
  EXPECT_TRUE(absl::IsFailedPrecondition(plain.status())) << plain.status();
  // Ids without remember or query name nothing.
  absl::StatusOr<v1::PredictResponse> stray =
      PredictVectors(*stub_, "m", xs, false, false, ids);
  EXPECT_TRUE(absl::IsInvalidArgument(stray.status())) << stray.status();
}

// Feedback for asked labels learns each with weight s·(1/p), and a label
// that was not asked for with s alone: bit for bit what a Train stream of
// the same examples with those weights learns.
TEST_F(SelectiveSamplingServerTest, FeedbackAppliesTheImportanceWeight) {
  for (const bool unweighted : {false, true}) {
    SCOPED_TRACE(unweighted);
    FeedbackLearnsWithTheQueriesWeights(unweighted);
  }
}

void SelectiveSamplingServerTest::FeedbackLearnsWithTheQueriesWeights(
    bool unweighted) {
  const std::string algorithm = "sgd { loss: LOSS_LOG }";
  const std::string q = absl::StrCat("q", unweighted);
  const std::string t = absl::StrCat("t", unweighted);
  ASSERT_TRUE(Create(*stub_, q, algorithm,
                     absl::StrCat("b: 0.3 seed: 17 unweighted: ", unweighted))
                  .ok());
  ASSERT_TRUE(Create(*stub_, t, algorithm, "").ok());
  WarmUp(q, 40);
  WarmUp(t, 40);
  const auto examples = NoisyExamples(120);
  std::vector<std::vector<double>> xs;
  std::vector<std::string> ids;  // given, so that the draws are the same
  for (int i = 40; i < 120; ++i) {
    xs.push_back(examples[i].first);
    ids.push_back(absl::StrCat("e", i));
  }
  absl::StatusOr<v1::PredictResponse> r =
      PredictVectors(*stub_, q, xs, /*remember=*/true, /*query=*/true, ids);
  ASSERT_TRUE(r.ok()) << r.status();

  grpc::ClientContext context;
  v1::FeedbackRequest feedback;
  feedback.set_model(q);
  v1::TrainRequest train;
  train.set_model(t);
  int asked = 0;
  for (int i = 0; i < r->predictions_size(); ++i) {
    const v1::Prediction& p = r->predictions(i);
    ASSERT_FALSE(p.example_id().empty());
    // Every asked label, and every fifth of the others; some with weights.
    if (!p.query().ask() && i % 5 != 0) continue;
    asked += p.query().ask();
    EXPECT_EQ(p.query().weight(), p.query().ask() && !unweighted
                                      ? 1 / p.query().probability()
                                      : 1.0);
    const int y = examples[40 + i].second;
    v1::ExampleFeedback* f = feedback.add_feedback();
    f->set_example_id(p.example_id());
    f->set_label(y);
    AddExample(train, xs[i], y);
    double weight = p.query().weight();
    if (i % 3 == 0) {
      f->set_weight(2.5);
      weight = 2.5 * p.query().weight();
    }
    train.mutable_examples(train.examples_size() - 1)->set_weight(weight);
  }
  ASSERT_GT(asked, 3);
  v1::FeedbackResponse learned;
  ASSERT_TRUE(stub_->Feedback(&context, feedback, &learned).ok());
  for (const v1::ExampleResult& result : learned.results()) {
    EXPECT_FALSE(result.has_error()) << result.error().message();
  }
  Train(*stub_, train);
  EXPECT_TRUE(BitIdentical(Weights(*stub_, q), Weights(*stub_, t)));
}

// The importance weights are kept with the remembered examples: in the
// snapshot a restart loads, and in the log a crash replays; both learn as a
// Train stream with those weights.
TEST_F(SelectiveSamplingServerTest, WeightsSurviveARestartAndACrash) {
  ASSERT_TRUE(Create(*stub_, "m", "perceptron", "b: 1 seed: 1").ok());
  ASSERT_TRUE(Create(*stub_, "t", "perceptron", "").ok());
  WarmUp("m", 30);
  WarmUp("t", 30);
  const auto examples = NoisyExamples(90);
  std::vector<std::vector<double>> before_restart, after_restart;
  for (int i = 30; i < 60; ++i) before_restart.push_back(examples[i].first);
  for (int i = 60; i < 90; ++i) after_restart.push_back(examples[i].first);
  absl::StatusOr<v1::PredictResponse> first =
      PredictVectors(*stub_, "m", before_restart, true, true);
  ASSERT_TRUE(first.ok()) << first.status();
  server_.Restart();
  stub_ = server_.NewStub();
  absl::StatusOr<v1::PredictResponse> second =
      PredictVectors(*stub_, "m", after_restart, true, true);
  ASSERT_TRUE(second.ok()) << second.status();

  v1::FeedbackRequest feedback;
  feedback.set_model("m");
  v1::TrainRequest train;
  train.set_model("t");
  int i = 30;
  for (const v1::PredictResponse* r : {&*first, &*second}) {
    for (const v1::Prediction& p : r->predictions()) {
      if (p.query().ask()) {
        v1::ExampleFeedback* f = feedback.add_feedback();
        f->set_example_id(p.example_id());
        f->set_label(examples[i].second);
        AddExample(train, examples[i].first, examples[i].second);
        train.mutable_examples(train.examples_size() - 1)
            ->set_weight(p.query().weight());
      }
      ++i;
    }
  }
  ASSERT_GT(feedback.feedback_size(), 1);
  CrashCopy crash(server_.data_dir());
  Client recovered = crash.Start();
  std::unique_ptr<Stub> stub = v1::HalfspaceService::NewStub(Connected(
      grpc::CreateChannel(crash.target(), grpc::InsecureChannelCredentials())));
  std::vector<v1::FeedbackResponse> responses(2);
  int k = 0;
  for (Stub* s : {stub_.get(), stub.get()}) {
    grpc::ClientContext context;
    ASSERT_TRUE(s->Feedback(&context, feedback, &responses[k++]).ok());
  }
  for (int j = 0; j < feedback.feedback_size(); ++j) {
    EXPECT_FALSE(responses[0].results(j).has_error());
    EXPECT_EQ(responses[0].results(j).updated(),
              responses[1].results(j).updated());
  }
  EXPECT_TRUE(BitIdentical(Weights(*stub_, "m"), Weights(*stub, "m")));
  Train(*stub_, train);
  EXPECT_TRUE(BitIdentical(Weights(*stub_, "m"), Weights(*stub_, "t")));
}

}  // namespace
}  // namespace halfspace
