// Bounded responses: a call whose answer could not be sent is refused
// before the answer is made, and a caller of a model with many classes can
// ask for less. Every allocation of this process (the server's included) is
// counted, so the memory a call takes is measured, not assumed.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#define HALFSPACE_ALLOCATIONS_ACROSS_LIBRARIES
#include "tests/counted_allocations.h"
#include "tests/test_server.h"

namespace halfspace {

namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

constexpr int kClasses = 4096;
constexpr int kInstances = 2000;
constexpr char kLimit[] = "the limit is 16777216, set by --max_message_bytes";

// A softmax model of kClasses classes "c0" … over two features, trained on
// a few examples so that the classes score apart.
std::unique_ptr<v1::HalfspaceService::Stub> ManyClassModel(
    const TestServer& server) {
  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();
  v1::CreateModelRequest create;
  create.set_model("wide");
  *create.mutable_algorithm() = TextAlgorithm("softmax_regression");
  create.set_dimension(2);
  for (int k = 0; k < kClasses; ++k) create.add_classes(absl::StrCat("c", k));
  grpc::ClientContext context;
  v1::CreateModelResponse created;
  EXPECT_TRUE(stub->CreateModel(&context, create, &created).ok());
  grpc::ClientContext train_context;
  auto stream = stub->Train(&train_context);
  v1::TrainRequest request;
  request.set_model("wide");
  for (int i = 0; i < 8; ++i) {
    v1::Example* e = request.add_examples();
    e->mutable_features()->add_dense(1.0 + i);
    e->mutable_features()->add_dense(1.0 - i);
    e->set_class_label(absl::StrCat("c", i * 37));
  }
  EXPECT_TRUE(stream->Write(request));
  v1::TrainResponse response;
  EXPECT_TRUE(stream->Read(&response));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  return stub;
}

v1::PredictRequest ManyInstances() {
  v1::PredictRequest request;
  request.set_model("wide");
  for (int i = 0; i < kInstances; ++i) {
    v1::FeatureVector* x = request.add_instances();
    x->add_dense(0.01 * i);
    x->add_dense(1.0 - 0.02 * i);
  }
  return request;
}

TEST(BoundedResponsesTest, APredictionTooLargeToSendIsRefusedBeforeItIsMade) {
  TestServer server;
  auto stub = ManyClassModel(server);
  const v1::PredictRequest request = ManyInstances();
  grpc::Status status;
  const int64_t growth = allocations::PeakGrowth([&] {
    grpc::ClientContext context;
    v1::PredictResponse response;
    status = stub->Predict(&context, request, &response);
  });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("top_k"));
  EXPECT_THAT(status.error_message(), EndsWith(kLimit));
  // Every class's score of every instance would be 8 M class scores; the
  // refusal takes a small fraction of one of them each.
  if (allocations::kCounted) {  // not under ASan
    EXPECT_LT(growth, 16 << 20) << "bytes held while refusing";
  }
}

TEST(BoundedResponsesTest, TopKReturnsTheHighestClassScoresInBoundedMemory) {
  TestServer server;
  auto stub = ManyClassModel(server);
  v1::PredictRequest request = ManyInstances();
  request.set_top_k(3);
  v1::PredictResponse response;
  grpc::Status status;
  const int64_t growth = allocations::PeakGrowth([&] {
    grpc::ClientContext context;
    status = stub->Predict(&context, request, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.predictions_size(), kInstances);
  if (allocations::kCounted) {  // not under ASan
    EXPECT_LT(growth, 16 << 20) << "bytes held while predicting";
  }

  // Each instance's three scores are its three best of all kClasses, best
  // first, and the first is the predicted class.
  for (int i : {0, 999, 1999}) {
    v1::PredictRequest one;
    one.set_model("wide");
    *one.add_instances() = request.instances(i);
    grpc::ClientContext context;
    v1::PredictResponse all;
    ASSERT_TRUE(stub->Predict(&context, one, &all).ok());
    std::vector<v1::ClassScore> sorted(
        all.predictions(0).class_scores().begin(),
        all.predictions(0).class_scores().end());
    ASSERT_EQ(sorted.size(), static_cast<size_t>(kClasses));
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const v1::ClassScore& a, const v1::ClassScore& b) {
                       return a.score() > b.score();
                     });
    const v1::Prediction& top = response.predictions(i);
    ASSERT_EQ(top.class_scores_size(), 3);
    EXPECT_EQ(top.predicted_class(), all.predictions(0).predicted_class());
    EXPECT_EQ(top.class_scores(0).label(), top.predicted_class());
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(top.class_scores(k).label(), sorted[k].label()) << i;
      EXPECT_EQ(top.class_scores(k).score(), sorted[k].score()) << i;
      EXPECT_EQ(top.class_scores(k).probability(), sorted[k].probability());
    }
  }

  request.set_top_k(0);  // the predicted class alone
  grpc::ClientContext context;
  v1::PredictResponse bare;
  ASSERT_TRUE(stub->Predict(&context, request, &bare).ok());
  EXPECT_EQ(bare.predictions(5).class_scores_size(), 0);
  EXPECT_EQ(bare.predictions(5).predicted_class(),
            response.predictions(5).predicted_class());
}

TEST(BoundedResponsesTest, APredictStreamRefusesInBandAndGoesOn) {
  TestServer server;
  auto stub = ManyClassModel(server);
  const v1::PredictRequest full = ManyInstances();
  v1::PredictStreamRequest request;
  request.set_model("wide");
  *request.mutable_instances() = full.instances();
  grpc::ClientContext context;
  auto stream = stub->PredictStream(&context);
  ASSERT_TRUE(stream->Write(request));
  v1::PredictStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(response.error().message(), EndsWith(kLimit));
  EXPECT_EQ(response.predictions_size(), 0);
  request.set_top_k(1);
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_FALSE(response.has_error());
  EXPECT_EQ(response.predictions_size(), kInstances);
  EXPECT_EQ(response.predictions(0).class_scores_size(), 1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// An Evaluate stream whose examples bring every class.
grpc::Status EvaluateEveryClass(v1::HalfspaceService::Stub& stub,
                                bool omit_confusion,
                                v1::EvaluateResponse& response) {
  grpc::ClientContext context;
  auto stream = stub.Evaluate(&context, &response);
  v1::EvaluateRequest request;
  request.set_model("wide");
  request.set_omit_confusion(omit_confusion);
  for (int k = 0; k < kClasses; ++k) {
    v1::Example* e = request.add_examples();
    e->mutable_features()->add_dense(0.001 * k);
    e->mutable_features()->add_dense(-0.5);
    e->set_class_label(absl::StrCat("c", k));
    if (request.examples_size() == 1000 || k + 1 == kClasses) {
      if (!stream->Write(request)) break;
      request.Clear();
    }
  }
  stream->WritesDone();
  return stream->Finish();
}

TEST(BoundedResponsesTest, AnEvaluationTooLargeToSendEndsOrOmitsItsConfusion) {
  TestServer server;
  auto stub = ManyClassModel(server);
  v1::EvaluateResponse response;
  grpc::Status status;
  const int64_t growth = allocations::PeakGrowth(
      [&] { status = EvaluateEveryClass(*stub, false, response); });
  // 4096² cells of a confusion matrix are 16 MiB at a byte each.
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("omit_confusion"));
  EXPECT_THAT(status.error_message(), EndsWith(kLimit));
  if (allocations::kCounted) {  // not under ASan
    EXPECT_LT(growth, 32 << 20) << "bytes held while evaluating";
  }

  ASSERT_TRUE(EvaluateEveryClass(*stub, true, response).ok());
  EXPECT_EQ(response.examples(), static_cast<uint64_t>(kClasses));
  EXPECT_EQ(response.classes_size(), kClasses);
  EXPECT_EQ(response.confusion_size(), 0);
}

TEST(BoundedResponsesTest, ASummaryIsSizedByWhatItReturns) {
  TestServer server;
  auto stub = ManyClassModel(server);
  v1::TrainRequest request;
  request.set_model("wide");
  for (int i = 0; i < kInstances; ++i) {
    v1::Example* e = request.add_examples();
    e->mutable_features()->add_dense(0.01 * i);
    e->mutable_features()->add_dense(0.5);
    e->set_class_label(absl::StrCat("c", i % kClasses));
  }
  grpc::ClientContext context;
  auto stream = stub->Train(&context);
  request.set_results(v1::TRAIN_RESULTS_SUMMARY);
  ASSERT_TRUE(stream->Write(request));
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.summary().examples(), static_cast<uint64_t>(kInstances));
  EXPECT_LT(response.ByteSizeLong(), 1024u);

  // One result per example would carry every class's score of each.
  request.clear_model();
  request.set_results(v1::TRAIN_RESULTS_PER_EXAMPLE);
  ASSERT_TRUE(stream->Write(request));
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status refused = stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("TRAIN_RESULTS_SUMMARY"));
  EXPECT_THAT(refused.error_message(), EndsWith(kLimit));
}

}  // namespace
}  // namespace halfspace
