#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "core/storage/file_model_store.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "src/proto/grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::TrainRequest FirstWorkedExamplePass() {
  v1::TrainRequest request;
  AddExample(request, {2, 3}, +1);
  AddExample(request, {3, 1}, +1);
  AddExample(request, {0, 1}, -1);
  AddExample(request, {1, -1}, -1);
  return request;
}

class ServerTest : public ::testing::Test {
 protected:
  void CreatePerceptron(const std::string& name, int64_t dimension) {
    ASSERT_TRUE(
        client_.CreateModel(name, TextAlgorithm("perceptron"), dimension).ok());
  }

  TestServer server_;
  Client client_ = server_.NewClient();
  std::unique_ptr<v1::HalfspaceService::Stub> stub_ = server_.NewStub();
};

TEST_F(ServerTest, CreateGetListDeleteUseCanonicalCodes) {
  absl::StatusOr<v1::Model> created =
      client_.CreateModel("spam",
                          TextAlgorithm("logistic_regression { learning_rate: "
                                        "0.1 l2: 0.01 }"),
                          3);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->dimension(), 3);
  EXPECT_EQ(created->algorithm().logistic_regression().learning_rate(), 0.1);
  EXPECT_EQ(created->algorithm().logistic_regression().l2(), 0.01);
  EXPECT_EQ(created->stats().examples_seen(), 0u);
  CreatePerceptron("ham", 2);
  const v1::Perceptron ham = client_.GetModel("ham")->algorithm().perceptron();
  EXPECT_TRUE(ham.has_learning_rate());  // defaults are filled in
  EXPECT_EQ(ham.learning_rate(), 1.0);
  EXPECT_EQ(ham.margin_threshold(), 0.0);

  EXPECT_TRUE(absl::IsAlreadyExists(
      client_.CreateModel("spam", TextAlgorithm("perceptron"), 3).status()));
  absl::Status bad =
      client_.CreateModel("a/b", TextAlgorithm("perceptron"), 3).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_THAT(bad.message(), HasSubstr("letters, digits"));
  EXPECT_THAT(client_.CreateModel("x", v1::Algorithm(), 3).status().message(),
              HasSubstr("algorithm must be set"));
  EXPECT_TRUE(absl::IsInvalidArgument(
      client_.CreateModel("x", TextAlgorithm("perceptron"), -3).status()));

  absl::StatusOr<std::vector<v1::Model>> models = client_.ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  std::vector<std::string> names;
  for (const v1::Model& m : *models) names.push_back(m.name());
  EXPECT_THAT(names, ElementsAre("ham", "spam"));

  EXPECT_TRUE(client_.DeleteModel("spam").ok());
  EXPECT_TRUE(absl::IsNotFound(client_.GetModel("spam").status()));
  EXPECT_TRUE(absl::IsNotFound(client_.DeleteModel("spam")));
  EXPECT_EQ(client_.ListModels()->size(), 1u);
}

TEST_F(ServerTest, ParametersAreCheckedAndDefaultsFilledIn) {
  v1::CreateModelRequest request;
  request.set_model("m");
  request.set_dimension(2);
  *request.mutable_algorithm() = TextAlgorithm("sgd { alpha: 0 }");
  EXPECT_THAT(client_.CreateModel(request).status().message(),
              HasSubstr("OPTIMAL schedule"));
  v1::Sgd* sgd = request.mutable_algorithm()->mutable_sgd();
  sgd->set_loss(static_cast<v1::Sgd::Loss>(99));
  EXPECT_THAT(client_.CreateModel(request).status().message(),
              HasSubstr("sgd.loss has the unknown value 99"));

  sgd->set_loss(v1::Sgd::LOSS_MODIFIED_HUBER);
  sgd->set_alpha(0.001);
  absl::StatusOr<v1::Model> created = client_.CreateModel(request);
  ASSERT_TRUE(created.ok()) << created.status();
  const v1::Sgd& h = created->algorithm().sgd();
  EXPECT_EQ(h.loss(), v1::Sgd::LOSS_MODIFIED_HUBER);
  EXPECT_EQ(h.penalty(), v1::Sgd::PENALTY_L2);
  EXPECT_EQ(h.schedule(), v1::Sgd::SCHEDULE_OPTIMAL);
  EXPECT_EQ(h.l1_ratio(), 0.15);
  EXPECT_EQ(h.alpha(), 0.001);

  // Modified Huber gives probabilities; a negative weight is rejected
  // in-band.
  std::unique_ptr<TrainingStream> stream = client_.Train("m");
  ASSERT_TRUE(stream->Send({{{1, 2}, 1, 1.0}, {{1, 2}, 1, -1.0}}).ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->results(0).probability(), 0.5);
  EXPECT_THAT(response->results(1).error().message(),
              HasSubstr("importance weight is -1"));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, TrainStreamReproducesTheClassicWorkedExample) {
  CreatePerceptron("notes", 2);
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub_->Train(&context);
  // Pass 1 names the model; passes 2-4 repeat the same four points.
  std::vector<std::vector<bool>> updated;
  std::vector<double> first_scores;
  std::vector<v1::PassSummary> summaries;
  for (int pass = 0; pass < 4; ++pass) {
    v1::TrainRequest request = FirstWorkedExamplePass();
    if (pass == 0) request.set_model("notes");
    request.set_end_of_pass(true);
    ASSERT_TRUE(stream->Write(request));
    v1::TrainResponse response;
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_EQ(response.results_size(), 4);
    updated.emplace_back();
    for (const v1::ExampleResult& r : response.results()) {
      EXPECT_FALSE(r.has_error());
      EXPECT_FALSE(r.has_probability());
      updated.back().push_back(r.updated());
      if (pass == 0) first_scores.push_back(r.score());
    }
    ASSERT_TRUE(response.has_pass_summary());
    summaries.push_back(response.pass_summary());
  }
  stream->WritesDone();
  ASSERT_TRUE(stream->Finish().ok());

  // Scores before each update in pass 1: 0, 10, 4, 0 (see the notes).
  EXPECT_THAT(first_scores, ElementsAre(0, 10, 4, 0));
  EXPECT_THAT(updated, ElementsAre(ElementsAre(true, false, true, true),
                                   ElementsAre(false, false, true, false),
                                   ElementsAre(false, false, true, false),
                                   ElementsAre(false, false, false, false)));
  // Pass markers: updates 3, 1, 1, 0 and progressive mistakes 2, 1, 1, 0.
  std::vector<uint64_t> updates, mistakes;
  for (const v1::PassSummary& s : summaries) {
    updates.push_back(s.updates());
    mistakes.push_back(s.mistakes());
    EXPECT_EQ(s.examples(), 4u);
    EXPECT_EQ(s.converged(), s.pass() == 4);
  }
  EXPECT_THAT(updates, ElementsAre(3, 1, 1, 0));
  EXPECT_THAT(mistakes, ElementsAre(2, 1, 1, 0));
  EXPECT_DOUBLE_EQ(summaries.back().weight_norm(), std::sqrt(2.0));
  EXPECT_EQ(summaries.back().bias(), -3);
  EXPECT_DOUBLE_EQ(summaries.back().max_example_norm(), std::sqrt(14.0));

  absl::StatusOr<v1::GetWeightsResponse> weights = client_.GetWeights("notes");
  ASSERT_TRUE(weights.ok());
  EXPECT_THAT(weights->weights(), ElementsAre(1, 1));
  EXPECT_EQ(weights->bias(), -3);

  absl::StatusOr<v1::Model> model = client_.GetModel("notes");
  EXPECT_EQ(model->stats().examples_seen(), 16u);
  EXPECT_EQ(model->stats().updates(), 5u);
  EXPECT_EQ(model->stats().mistakes(), 4u);  // 2 + 1 + 1 + 0 by pass
  EXPECT_DOUBLE_EQ(model->stats().progressive_accuracy(), 12.0 / 16);
  EXPECT_DOUBLE_EQ(model->stats().weight_norm(), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(model->stats().max_example_norm(), std::sqrt(14.0));

  absl::StatusOr<std::vector<v1::Prediction>> p =
      client_.Predict("notes", {{3, 1}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[0].label(), 1);
  EXPECT_NEAR((*p)[0].signed_distance(), 0.7071067811865475, 1e-15);
}

TEST_F(ServerTest, BadExamplesAreReportedInBandAndTheStreamGoesOn) {
  CreatePerceptron("m", 2);
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub_->Train(&context);
  v1::TrainRequest request;
  request.set_model("m");
  AddExample(request, {1, 2, 3}, 1);
  AddExample(request, {1, NAN}, 1);
  AddExample(request, {1, 2}, 0);
  AddExample(request, {1, 2}, 1);
  ASSERT_TRUE(stream->Write(request));
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_EQ(response.results_size(), 4);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(response.results(i).error().code(),
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  }
  EXPECT_THAT(response.results(0).error().message(), HasSubstr("dimension"));
  EXPECT_THAT(response.results(1).error().message(), HasSubstr("finite"));
  EXPECT_THAT(response.results(2).error().message(), HasSubstr("not 0 and 1"));
  EXPECT_FALSE(response.results(3).has_error());
  EXPECT_EQ(response.results(3).examples_seen(), 1u);

  v1::TrainRequest next;
  AddExample(next, {1, 2}, -1);
  ASSERT_TRUE(stream->Write(next));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.results(0).examples_seen(), 2u);
  EXPECT_EQ(response.results(0).margin(), -6);  // w = (1, 2), b = 1
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

grpc::Status RunStream(v1::HalfspaceService::Stub& stub,
                       const std::vector<v1::TrainRequest>& requests,
                       int* responses) {
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub.Train(&context);
  *responses = 0;
  for (const v1::TrainRequest& request : requests) {
    if (!stream->Write(request)) break;
    v1::TrainResponse response;
    if (!stream->Read(&response)) break;
    ++*responses;
  }
  stream->WritesDone();
  return stream->Finish();
}

TEST_F(ServerTest, ABadFirstRequestOrAnotherModelNameEndsTheStream) {
  CreatePerceptron("m", 2);
  CreatePerceptron("other", 2);
  int responses = 0;
  grpc::Status s = RunStream(*stub_, {FirstWorkedExamplePass()}, &responses);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("must name the model"));

  v1::TrainRequest unknown;
  unknown.set_model("nope");
  s = RunStream(*stub_, {unknown}, &responses);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);

  v1::TrainRequest first, second;
  first.set_model("m");
  second.set_model("other");
  s = RunStream(*stub_, {first, second}, &responses);
  EXPECT_EQ(responses, 1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("one stream per model"));
}

TEST_F(ServerTest, LogisticStreamReportsProbabilityAndLogLoss) {
  ASSERT_TRUE(
      client_
          .CreateModel(
              "lr", TextAlgorithm("logistic_regression { learning_rate: 0.5 }"),
              2)
          .ok());
  std::unique_ptr<TrainingStream> stream = client_.Train("lr");
  ASSERT_TRUE(stream->Send({{{1, 2}, 1}, {{1, 2}, -1}}).ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::ExampleResult& first = response->results(0);
  EXPECT_EQ(first.probability(), 0.5);
  EXPECT_DOUBLE_EQ(first.loss(), std::log(2.0));
  const v1::ExampleResult& second = response->results(1);
  EXPECT_DOUBLE_EQ(second.score(), 1.5);  // w = (0.25, 0.5), b = 0.25
  EXPECT_DOUBLE_EQ(second.probability(), 1 / (1 + std::exp(-1.5)));
  EXPECT_TRUE(stream->Finish().ok());

  absl::StatusOr<std::vector<v1::Prediction>> p =
      client_.Predict("lr", {{0, 0}});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)[0].has_probability());
}

TEST_F(ServerTest, EvaluateScoresWithoutLearning) {
  CreatePerceptron("notes", 2);
  ASSERT_TRUE(client_.SetWeights("notes", {1, 1}, -3).ok());
  const std::vector<LabeledExample> held_out = {
      {{2, 3}, 1},    {{3, 1}, 1}, {{0, 1}, -1},
      {{1, -1}, -1},  {{1, 1}, 1},  // f = -1: a false negative
      {{1, 2, 3}, 1},               // wrong dimension: rejected
  };
  absl::StatusOr<v1::EvaluateResponse> r =
      client_.Evaluate("notes", held_out, std::nullopt, /*batch_size=*/2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples(), 5u);
  EXPECT_EQ(r->rejected(), 1u);
  EXPECT_THAT(r->first_error().message(), HasSubstr("dimension"));
  EXPECT_DOUBLE_EQ(r->accuracy(), 0.8);
  EXPECT_THAT(r->confusion_labels(), ElementsAre("-1", "+1"));
  EXPECT_THAT(r->confusion(), ElementsAre(2, 0, 1, 2));
  EXPECT_DOUBLE_EQ(r->classes(1).recall(), 2.0 / 3);
  EXPECT_EQ(r->classes(1).precision(), 1.0);
  EXPECT_FALSE(r->has_log_loss());
  EXPECT_EQ(client_.GetModel("notes")->stats().examples_seen(), 0u);

  EXPECT_TRUE(absl::IsNotFound(client_.Evaluate("nope", held_out).status()));
  EXPECT_THAT(client_.Evaluate("notes", held_out, 0.5).status().message(),
              HasSubstr("binary models with probabilities"));
}

TEST_F(ServerTest, EvaluateThresholdsProbabilitiesAndReportsLogLoss) {
  ASSERT_TRUE(
      client_.CreateModel("lr", TextAlgorithm("logistic_regression"), 1).ok());
  ASSERT_TRUE(client_.SetWeights("lr", {1}, 0).ok());
  // P(+1 | x) = σ(x): 0.73 for x = 1, 0.5 for x = 0, 0.27 for x = -1.
  const std::vector<LabeledExample> data = {{{1}, 1}, {{0}, 1}, {{-1}, -1}};
  absl::StatusOr<v1::EvaluateResponse> plain = client_.Evaluate("lr", data);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->accuracy(), 1.0);  // f(0) = 0 predicts +1
  const double s1 = 1 / (1 + std::exp(-1.0));
  EXPECT_DOUBLE_EQ(plain->log_loss(),
                   -(std::log(s1) + std::log(0.5) + std::log(s1)) / 3);
  absl::StatusOr<v1::EvaluateResponse> strict =
      client_.Evaluate("lr", data, 0.6);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_DOUBLE_EQ(strict->accuracy(), 2.0 / 3);  // x = 0 now predicts -1
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_.Evaluate("lr", data, 1.5).status()));
}

TEST_F(ServerTest, MulticlassModelsLearnNewClassesFromTheStream) {
  v1::CreateModelRequest request;
  request.set_model("animals");
  *request.mutable_algorithm() = TextAlgorithm("softmax_regression");
  request.set_dimension(2);
  request.add_classes("cat");
  absl::StatusOr<v1::Model> created = client_.CreateModel(request);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->classes(), ElementsAre("cat"));

  std::unique_ptr<TrainingStream> stream = client_.Train("animals");
  std::vector<LabeledExample> batch = {
      {{1, 0}, 0, 1.0, "cat"}, {{0, 1}, 0, 1.0, "dog"}, {{0, 1}, 1, 1.0, ""}};
  ASSERT_TRUE(stream->Send(batch).ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::ExampleResult& dog = response->results(1);
  EXPECT_EQ(dog.predicted_class(), "cat");  // before it learned "dog"
  ASSERT_EQ(dog.class_scores_size(), 2);
  EXPECT_EQ(dog.class_scores(1).label(), "dog");
  EXPECT_DOUBLE_EQ(
      dog.class_scores(0).probability() + dog.class_scores(1).probability(),
      1.0);
  EXPECT_THAT(response->results(2).error().message(),
              HasSubstr("class_label is empty"));
  EXPECT_TRUE(stream->Finish().ok());

  absl::StatusOr<std::vector<v1::Prediction>> p =
      client_.Predict("animals", {{0, 3}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[0].predicted_class(), "dog");
  EXPECT_EQ((*p)[0].class_scores_size(), 2);

  absl::StatusOr<v1::GetWeightsResponse> w = client_.GetWeights("animals");
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->classes_size(), 2);
  EXPECT_EQ(w->classes(1).label(), "dog");
  EXPECT_EQ(w->classes(1).weights_size(), 2);

  // Import a new class's weights; it predicts at once.
  grpc::ClientContext context;
  v1::SetWeightsRequest set;
  set.set_model("animals");
  set.set_class_label("bird");
  set.add_weights(0);
  set.add_weights(100);
  set.set_bias(0);
  v1::SetWeightsResponse set_response;
  ASSERT_TRUE(stub_->SetWeights(&context, set, &set_response).ok());
  EXPECT_THAT(set_response.model().classes(),
              ElementsAre("cat", "dog", "bird"));
  EXPECT_EQ((*client_.Predict("animals", {{0, 3}}))[0].predicted_class(),
            "bird");
  EXPECT_TRUE(absl::IsInvalidArgument(
      client_.SetWeights("animals", {1, 1}, 0).status()));

  absl::StatusOr<v1::EvaluateResponse> evaluation = client_.Evaluate(
      "animals", {{{0, 3}, 0, 1.0, "bird"}, {{5, 0}, 0, 1.0, "fish"}});
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_THAT(evaluation->confusion_labels(),
              testing::IsSupersetOf({"bird", "fish"}));
  EXPECT_DOUBLE_EQ(evaluation->accuracy(), 0.5);  // no model predicts "fish"
}

TEST_F(ServerTest, OneVsRestIsForBinaryAlgorithmsOnly) {
  v1::CreateModelRequest request;
  request.set_model("m");
  request.set_dimension(2);
  *request.mutable_algorithm() = TextAlgorithm("softmax_regression");
  request.set_one_vs_rest(true);
  EXPECT_THAT(client_.CreateModel(request).status().message(),
              HasSubstr("one_vs_rest is for binary algorithms"));
  *request.mutable_algorithm() = TextAlgorithm("perceptron");
  request.set_one_vs_rest(false);
  request.add_classes("a");
  EXPECT_THAT(client_.CreateModel(request).status().message(),
              HasSubstr("classes apply to multiclass models"));
  request.set_one_vs_rest(true);
  absl::StatusOr<v1::Model> model = client_.CreateModel(request);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->one_vs_rest());
}

TEST_F(ServerTest, PredictValidatesItsInput) {
  CreatePerceptron("m", 2);
  EXPECT_TRUE(absl::IsNotFound(client_.Predict("nope", {{1, 2}}).status()));
  absl::Status empty = client_.Predict("m", {}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(empty));
  EXPECT_THAT(empty.message(), HasSubstr("no instances"));
  absl::Status wrong = client_.Predict("m", {{1, 2}, {1}}).status();
  EXPECT_THAT(wrong.message(), HasSubstr("instance 1"));

  absl::StatusOr<std::vector<v1::Prediction>> p =
      client_.Predict("m", {{1, 2}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].label(), 1);                // f = 0 predicts +1
  EXPECT_FALSE((*p)[0].has_signed_distance());  // w = 0: no hyperplane
}

// A PredictStreamRequest of dense `xs` for `model` (may be empty).
v1::PredictStreamRequest DenseRequest(
    const std::string& model, const std::vector<std::vector<double>>& xs) {
  v1::PredictStreamRequest request;
  request.set_model(model);
  for (const std::vector<double>& x : xs) {
    request.add_instances()->mutable_dense()->Add(x.begin(), x.end());
  }
  return request;
}

TEST_F(ServerTest, PredictStreamAnswersAsPredictDoes) {
  CreatePerceptron("a", 2);
  CreatePerceptron("b", 2);
  ASSERT_TRUE(client_.SetWeights("a", {3, 4}, -5).ok());
  ASSERT_TRUE(client_.SetWeights("b", {-1, 0}, 0.5).ok());
  std::unique_ptr<PredictionStream> stream = client_.PredictStream();
  const std::vector<std::vector<double>> xs = {{3, 4}, {0, 0}, {-1, 2}};
  for (const char* model : {"a", "b", "a"}) {
    const absl::StatusOr<std::vector<v1::Prediction>> unary =
        client_.Predict(model, xs);
    ASSERT_TRUE(unary.ok());
    // Named, then inherited from the request before.
    for (const std::string& named : {std::string(model), std::string()}) {
      absl::StatusOr<std::vector<v1::Prediction>> streamed =
          stream->Predict(DenseRequest(named, xs));
      ASSERT_TRUE(streamed.ok()) << streamed.status();
      ASSERT_EQ(streamed->size(), xs.size());
      for (size_t i = 0; i < xs.size(); ++i) {
        EXPECT_EQ((*streamed)[i].SerializeAsString(),
                  (*unary)[i].SerializeAsString());
      }
    }
  }
  EXPECT_EQ((*stream->Predict(DenseRequest("", {{3, 4}})))[0].score(), 20);
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, PredictStreamAnswersABadRequestInBandAndGoesOn) {
  CreatePerceptron("m", 2);
  std::unique_ptr<PredictionStream> stream = client_.PredictStream();
  // Several in flight at once, answered in order.
  const std::vector<v1::PredictStreamRequest> requests = {
      DenseRequest("", {{1, 2}}),        // no model named yet
      DenseRequest("nope", {{1, 2}}),    // unknown
      DenseRequest("m", {{1, 2}, {1}}),  // a bad instance
      DenseRequest("m", {}),             // none
      DenseRequest("", {{1, 2}}),        // good: "m"
  };
  for (const v1::PredictStreamRequest& r : requests)
    ASSERT_TRUE(stream->Send(r).ok());
  std::vector<v1::PredictStreamResponse> responses;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<v1::PredictStreamResponse> r = stream->Receive();
    ASSERT_TRUE(r.ok()) << r.status();
    responses.push_back(*r);
  }
  EXPECT_EQ(responses[0].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(responses[0].error().message(), HasSubstr("must name the model"));
  EXPECT_EQ(responses[1].error().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(responses[2].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(responses[2].error().message(), HasSubstr("instance 1"));
  EXPECT_EQ(responses[3].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(responses[i].predictions_size(), 0);
  EXPECT_FALSE(responses[4].has_error());
  ASSERT_EQ(responses[4].predictions_size(), 1);
  EXPECT_EQ(responses[4].predictions(0).label(), 1);
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, SetWeightsImportsAModelAndValidatesIt) {
  CreatePerceptron("m", 2);
  absl::StatusOr<v1::Model> model = client_.SetWeights("m", {3, 4}, -5);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->stats().weight_norm(), 5);
  EXPECT_EQ(model->stats().bias(), -5);
  EXPECT_EQ((*client_.Predict("m", {{3, 4}}))[0].signed_distance(), 4);
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_.SetWeights("m", {1}, 0).status()));
  EXPECT_TRUE(absl::IsNotFound(client_.SetWeights("x", {1, 1}, 0).status()));
}

TEST_F(ServerTest, PassSummariesCountOnlyValidExamples) {
  CreatePerceptron("m", 2);
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub_->Train(&context);
  v1::TrainRequest request;
  request.set_model("m");
  AddExample(request, {1, 2, 3}, 1);  // rejected: wrong dimension
  AddExample(request, {1, 2}, 0);     // rejected: bad label
  request.set_end_of_pass(true);
  ASSERT_TRUE(stream->Write(request));
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Read(&response));
  // A pass of rejected examples has no examples, so it did not converge.
  EXPECT_EQ(response.pass_summary().pass(), 1u);
  EXPECT_EQ(response.pass_summary().examples(), 0u);
  EXPECT_FALSE(response.pass_summary().converged());

  request.clear_model();
  request.clear_examples();
  AddExample(request, {1, 2, 3}, 1);  // rejected
  AddExample(request, {1, 2}, -1);    // f = 0: a mistake and an update
  AddExample(request, {1, 2}, -1);    // correct
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.pass_summary().pass(), 2u);
  EXPECT_EQ(response.pass_summary().examples(), 2u);
  EXPECT_EQ(response.pass_summary().updates(), 1u);
  EXPECT_EQ(response.pass_summary().mistakes(), 1u);
  EXPECT_EQ(response.pass_summary().average_loss(), 0.0);  // max(0, -0)
  EXPECT_FALSE(response.pass_summary().converged());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, ASummaryLearnsAlikeAndSumsTheResults) {
  // Logistic regression: losses that are not round numbers.
  for (const char* model : {"each", "summed"}) {
    ASSERT_TRUE(
        client_.CreateModel(model, TextAlgorithm("logistic_regression"), 3)
            .ok());
  }
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<v1::TrainRequest> requests(20);
  for (size_t r = 0; r < requests.size(); ++r) {
    for (int i = 0; i < 50; ++i) {
      const std::vector<double> x = {normal(rng), normal(rng), normal(rng)};
      AddExample(requests[r], x, x[0] - x[1] + 0.5 * normal(rng) > 0 ? 1 : -1);
    }
    AddExample(requests[r], {1, 2}, 1);  // wrong dimension: refused
    requests[r].mutable_examples()->SwapElements(r % 50, 50);
  }
  std::vector<v1::TrainResponse> each, summed;
  for (const char* model : {"each", "summed"}) {
    grpc::ClientContext context;
    std::unique_ptr<TrainStream> stream = stub_->Train(&context);
    for (v1::TrainRequest request : requests) {
      request.set_model(model);
      if (model == std::string("summed")) {
        request.set_results(v1::TRAIN_RESULTS_SUMMARY);
      }
      ASSERT_TRUE(stream->Write(request));
      v1::TrainResponse response;
      ASSERT_TRUE(stream->Read(&response));
      (model == std::string("each") ? each : summed).push_back(response);
    }
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  // The same learning: bit-identical weights.
  EXPECT_EQ(client_.GetWeights("each")->SerializeAsString(),
            client_.GetWeights("summed")->SerializeAsString());
  for (size_t r = 0; r < requests.size(); ++r) {
    EXPECT_EQ(summed[r].results_size(), 0);
    EXPECT_FALSE(each[r].has_summary());
    uint64_t examples = 0, updates = 0, mistakes = 0;
    double loss_sum = 0;
    for (int i = 0; i < each[r].results_size(); ++i) {
      const v1::ExampleResult& result = each[r].results(i);
      if (result.has_error()) continue;
      ++examples;
      updates += result.updated();
      mistakes += result.predicted_label() != requests[r].examples(i).label();
      loss_sum += result.loss();
    }
    const v1::TrainSummary& summary = summed[r].summary();
    EXPECT_EQ(summary.examples(), examples);
    EXPECT_EQ(summary.updates(), updates);
    EXPECT_EQ(summary.mistakes(), mistakes);
    EXPECT_EQ(summary.loss_sum(), loss_sum);  // summed in the same order
    ASSERT_EQ(summary.errors_size(), 1);
    EXPECT_EQ(summary.errors(0).index(), r % 50);
    EXPECT_EQ(summary.errors(0).error().SerializeAsString(),
              each[r].results(r % 50).error().SerializeAsString());
  }
}

TEST_F(ServerTest, AnUnknownResultsModeEndsTheStream) {
  CreatePerceptron("m", 2);
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub_->Train(&context);
  v1::TrainRequest request;
  request.set_model("m");
  request.set_results(static_cast<v1::TrainResults>(7));
  AddExample(request, {1, 2}, 1);
  stream->Write(request);
  stream->WritesDone();
  v1::TrainResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("results is 7"));
}

TEST_F(ServerTest, ConcurrentStreamsOnOneModelApplyEveryExampleInOrder) {
  CreatePerceptron("shared", 3);
  constexpr int kStreams = 4, kRequests = 50, kBatch = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kStreams; ++t) {
    threads.emplace_back([&, t] {
      // Connected before the stream opens: on a loaded machine about one
      // fresh connection in a hundred fails its first attempt (a stream
      // would fail with it, UNAVAILABLE), which is not what this tests.
      std::shared_ptr<grpc::Channel> channel = server_.NewChannel();
      channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
      Client client(channel);
      std::unique_ptr<TrainingStream> stream = client.Train("shared");
      std::vector<LabeledExample> batch(
          kBatch, LabeledExample{{1.0 * t, 1, -1}, t % 2 ? 1 : -1});
      uint64_t last_seen = 0;
      for (int i = 0; i < kRequests; ++i) {
        ASSERT_TRUE(stream->Send(batch).ok()) << stream->Finish();
        absl::StatusOr<v1::TrainResponse> r = stream->Receive();
        ASSERT_TRUE(r.ok()) << r.status();
        for (const v1::ExampleResult& result : r->results()) {
          EXPECT_GT(result.examples_seen(), last_seen);
          last_seen = result.examples_seen();
        }
      }
      EXPECT_TRUE(stream->Finish().ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(client_.GetModel("shared")->stats().examples_seen(),
            uint64_t{kStreams} * kRequests * kBatch);
}

TEST_F(ServerTest, AStalledClientBlocksNeitherItsModelNorOthers) {
  CreatePerceptron("m", 8);
  // A client that writes a lot and never reads: the server's writes to it
  // block on flow control.
  grpc::ClientContext stalled_context;
  std::unique_ptr<TrainStream> stalled = stub_->Train(&stalled_context);
  v1::TrainRequest big;
  big.set_model("m");
  for (int i = 0; i < 2000; ++i) AddExample(big, std::vector<double>(8, 1), 1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(stalled->Write(big));

  Client other = server_.NewClient();
  absl::StatusOr<FitReport> report = other.Fit(
      "m", std::vector<LabeledExample>{{std::vector<double>(8, -1), -1}});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(other.Predict("m", {std::vector<double>(8, 1)}).ok());

  stalled_context.TryCancel();
  stalled->Finish();
}

TEST_F(ServerTest, DeletingAModelEndsItsOpenStreamsWithNotFound) {
  CreatePerceptron("doomed", 1);
  std::unique_ptr<TrainingStream> stream = client_.Train("doomed");
  ASSERT_TRUE(stream->Send({{{1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(client_.DeleteModel("doomed").ok());
  ASSERT_TRUE(stream->Send({{{1}, 1}}).ok());
  EXPECT_TRUE(absl::IsOutOfRange(stream->Receive().status()));
  absl::Status s = stream->Finish();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("was deleted"));
}

TEST_F(ServerTest, ModelsSurviveARestartExactly) {
  CreatePerceptron("notes", 2);
  std::unique_ptr<TrainingStream> stream = client_.Train("notes");
  ASSERT_TRUE(stream->Send({{{2, 3}, 1}, {{3, 1}, 1}, {{0, 1}, -1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Finish().ok());
  const v1::Model before = *client_.GetModel("notes");

  server_.Restart();
  Client client = server_.NewClient();
  absl::StatusOr<v1::Model> after = client.GetModel("notes");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->DebugString(), before.DebugString());
  EXPECT_THAT(client.GetWeights("notes")->weights(), ElementsAre(2, 2));
}

TEST_F(ServerTest, ReportsHealthAndServesReflection) {
  auto health = grpc::health::v1::Health::NewStub(server_.NewChannel());
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(kServiceName);
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(health->Check(&context, request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  using grpc::reflection::v1alpha::ServerReflection;
  auto reflection = ServerReflection::NewStub(server_.NewChannel());
  grpc::ClientContext reflection_context;
  auto stream = reflection->ServerReflectionInfo(&reflection_context);
  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  grpc::reflection::v1alpha::ServerReflectionResponse services;
  ASSERT_TRUE(stream->Read(&services));
  std::vector<std::string> names;
  for (const auto& s : services.list_services_response().service()) {
    names.push_back(s.name());
  }
  EXPECT_THAT(names, testing::Contains(kServiceName));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(ServerDrainTest, ShutdownEndsAnIdleStreamAtOnceAndTurnsNewCallsAway) {
  TestServer server(/*drain_timeout=*/absl::Seconds(30));
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream->Send({{{1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());

  const absl::Time start = absl::Now();
  absl::Status shutdown;
  std::thread stopper([&] { shutdown = server.server().Shutdown(); });
  // The stream, waiting for its client's next request, ends at once (not
  // after the 30 s drain timeout) with UNAVAILABLE saying why.
  EXPECT_FALSE(stream->Receive().ok());
  const absl::Status ended = stream->Finish();
  EXPECT_TRUE(absl::IsUnavailable(ended)) << ended;
  EXPECT_THAT(ended.message(), HasSubstr("shutting down"));
  EXPECT_THAT(ended.message(), HasSubstr("none after"));
  // A new call is turned away: by the closed gate, or, once the drain is
  // over, cancelled by gRPC's own shutdown.
  const absl::Status after = client.GetModel("m").status();
  EXPECT_TRUE(absl::IsUnavailable(after) || absl::IsCancelled(after)) << after;
  stopper.join();
  ASSERT_TRUE(shutdown.ok()) << shutdown;
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));

  auto store = FileModelStore::Open(server.data_dir().path());
  absl::StatusOr<std::vector<StoredModel>> stored = (*store)->LoadAll();
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->at(0).snapshot->counters.examples_seen, 1u);
}

// A producer that keeps streaming batches, several in flight, while the
// server stops: the stream ends at a request boundary with UNAVAILABLE, and
// the server stored exactly the examples it acknowledged, in every run.
TEST(ServerDrainTest, AStreamThatKeepsSendingEndsAtARequestBoundary) {
  constexpr int kBatch = 100;
  for (int run = 0; run < 8; ++run) {
    SCOPED_TRACE(run);
    TestServer server(/*drain_timeout=*/absl::Seconds(30));
    auto stub = server.NewStub();
    {
      v1::CreateModelRequest create;
      create.set_model("m");
      *create.mutable_algorithm() = TextAlgorithm("perceptron");
      create.set_dimension(2);
      grpc::ClientContext context;
      v1::CreateModelResponse created;
      ASSERT_TRUE(stub->CreateModel(&context, create, &created).ok());
    }
    grpc::ClientContext context;
    auto stream = stub->Train(&context);
    std::atomic<bool> writing{true};
    std::thread writer([&] {
      for (uint64_t sequence = 1; writing; sequence += kBatch) {
        v1::TrainRequest request;
        request.set_model("m");
        request.set_source("producer");
        request.set_sequence(sequence);
        for (int i = 0; i < kBatch; ++i) {
          AddExample(request, {std::sin(sequence + i), 1.0}, i % 3 ? 1 : -1);
        }
        if (!stream->Write(request)) break;
      }
    });
    uint64_t acknowledged = 0;
    v1::TrainResponse response;
    absl::Status shutdown;
    std::thread stopper;
    while (stream->Read(&response)) {
      for (const v1::ExampleResult& r : response.results()) {
        acknowledged += !r.has_error() && !r.duplicate();
      }
      if (acknowledged >= 20u * kBatch && !stopper.joinable()) {
        stopper = std::thread([&] { shutdown = server.server().Shutdown(); });
      }
    }
    writing = false;
    const grpc::Status ended = stream->Finish();
    writer.join();
    ASSERT_TRUE(stopper.joinable());
    stopper.join();
    ASSERT_TRUE(shutdown.ok()) << shutdown;
    EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(ended.error_message(), HasSubstr("shutting down"));
    EXPECT_EQ(acknowledged % kBatch, 0u);

    server.Restart();
    absl::StatusOr<v1::Model> model = server.NewClient().GetModel("m");
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->stats().examples_seen(), acknowledged);
  }
}

}  // namespace
}  // namespace halfspace
