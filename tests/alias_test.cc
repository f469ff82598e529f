// Aliases over real gRPC: a name such as `prod` that points to a model.
// Calls through it reach the model; moving it is atomic under concurrent
// predictions, durable across a restart and a crash, and guarded by
// compare-and-set and permissions.

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AliasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"champion", "challenger"}) {
      ASSERT_TRUE(
          client_.CreateModel(name, TextAlgorithm("perceptron"), 2).ok());
    }
    // Each model scores x = (1, 0) and (0, 1) by its own sign.
    ASSERT_TRUE(client_.SetWeights("champion", {1, 1}, 0).ok());
    ASSERT_TRUE(client_.SetWeights("challenger", {-1, -1}, 0).ok());
  }

  TestServer server_;
  Client client_ = server_.NewClient();
};

TEST_F(AliasTest, CallsThroughAnAliasReachItsModel) {
  absl::StatusOr<v1::SetAliasResponse> set =
      client_.SetAlias("prod", "champion");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->alias().model(), "champion");
  EXPECT_EQ(set->previous_model(), "");

  absl::StatusOr<v1::Model> model = client_.GetModel("prod");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "champion");
  EXPECT_THAT(model->aliases(), ElementsAre("prod"));
  absl::StatusOr<std::vector<v1::Model>> models = client_.ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_THAT((*models)[1].aliases(), ElementsAre("prod"));  // champion
  EXPECT_TRUE((*models)[0].aliases().empty());               // challenger

  v1::PredictRequest predict;
  predict.set_model("prod");
  predict.add_instances()->add_dense(1);
  predict.mutable_instances(0)->add_dense(0);
  absl::StatusOr<std::vector<v1::Prediction>> p = client_.Predict(predict);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[0].score(), 1.0);

  // Train through the alias; remember and feed back through it.
  std::unique_ptr<TrainingStream> stream = client_.Train("prod");
  ASSERT_TRUE(stream->Send({{{0, 1}, -1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_EQ(client_.GetModel("champion")->stats().examples_seen(), 1u);
  predict.set_remember(true);
  p = client_.Predict(predict);
  ASSERT_TRUE(p.ok()) << p.status();
  v1::FeedbackRequest feedback;
  feedback.set_model("prod");
  feedback.add_feedback()->set_example_id((*p)[0].example_id());
  feedback.mutable_feedback(0)->set_label(1);
  absl::StatusOr<v1::FeedbackResponse> fed = client_.Feedback(feedback);
  ASSERT_TRUE(fed.ok()) << fed.status();
  EXPECT_FALSE(fed->results(0).has_error());
  EXPECT_EQ(client_.GetModel("champion")->stats().examples_seen(), 2u);

  // Promotion is one call, and says what it replaced.
  set = client_.SetAlias("prod", "challenger");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->previous_model(), "champion");
  predict.set_remember(false);
  p = client_.Predict(predict);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].score(), -1.0);
  absl::StatusOr<std::vector<v1::Alias>> aliases = client_.ListAliases();
  ASSERT_TRUE(aliases.ok());
  ASSERT_EQ(aliases->size(), 1u);
  EXPECT_EQ((*aliases)[0].alias(), "prod");
  EXPECT_EQ((*aliases)[0].model(), "challenger");

  absl::StatusOr<std::string> deleted = client_.DeleteAlias("prod");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, "challenger");
  EXPECT_TRUE(absl::IsNotFound(client_.GetModel("prod").status()));
  EXPECT_TRUE(absl::IsNotFound(client_.DeleteAlias("prod").status()));
}

TEST_F(AliasTest, BadAliasesAreRefusedAndNothingChanges) {
  ASSERT_TRUE(client_.SetAlias("prod", "champion").ok());
  // Names are shared: no alias named as a model, no model as an alias.
  EXPECT_TRUE(absl::IsAlreadyExists(
      client_.SetAlias("challenger", "champion").status()));
  absl::Status s =
      client_.CreateModel("prod", TextAlgorithm("perceptron"), 2).status();
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("alias"));
  // Only models are pointed to, and only models that exist.
  s = client_.SetAlias("staging", "prod").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;  // an alias of an alias
  EXPECT_THAT(s.message(), HasSubstr("never to another alias"));
  EXPECT_THAT(s.message(), HasSubstr("at model 'champion'"));
  EXPECT_TRUE(absl::IsNotFound(client_.SetAlias("staging", "nope").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      client_.SetAlias("bad name", "champion").status()));
  // Compare-and-set.
  s = client_.SetAlias("prod", "challenger", "challenger").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("points to 'champion'"));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      client_.SetAlias("prod", "challenger", "").status()));
  EXPECT_TRUE(client_.SetAlias("canary", "challenger", "").ok());
  EXPECT_TRUE(client_.SetAlias("prod", "challenger", "champion").ok());
  // A fan-out stream or a comparison names each model once, aliases
  // included.
  std::unique_ptr<TrainingStream> both =
      client_.TrainFanOut({"prod", "challenger"});
  (void)both->Send({{{1, 0}, 1}});
  s = both->Finish();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("twice"));
  s = client_.CompareModels({"challenger", "prod"}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  // A model an alias points to is not deleted.
  s = client_.DeleteModel("challenger");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("alias"));
  EXPECT_TRUE(client_.DeleteModel("champion").ok());
  absl::StatusOr<std::vector<v1::Alias>> aliases = client_.ListAliases();
  ASSERT_TRUE(aliases.ok());
  ASSERT_EQ(aliases->size(), 2u);
  EXPECT_EQ((*aliases)[1].alias(), "prod");
  EXPECT_EQ((*aliases)[1].model(), "challenger");
}

// Predictions through `prod` on four threads while it moves back and forth:
// each response comes from one model whole (both instances scored by the
// same weights, and by the model the response names), both models answer,
// and once a move returns every later call sees it.
TEST_F(AliasTest, MovesAreAtomicUnderConcurrentPredictions) {
  ASSERT_TRUE(client_.SetAlias("prod", "champion").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> from_champion{0}, from_challenger{0}, mixed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Client client = server_.NewClient();
      v1::PredictRequest request;
      request.set_model("prod");
      for (int i = 0; i < 2; ++i) {
        v1::FeatureVector* x = request.add_instances();
        x->add_dense(i == 0 ? 1 : 0);
        x->add_dense(i == 0 ? 0 : 1);
      }
      while (!stop.load()) {
        absl::StatusOr<std::vector<v1::Prediction>> p = client.Predict(request);
        if (!p.ok()) {
          ++failed;
          continue;
        }
        const double a = (*p)[0].score(), b = (*p)[1].score();
        if (a == 1 && b == 1) {
          ++from_champion;
        } else if (a == -1 && b == -1) {
          ++from_challenger;
        } else {
          ++mixed;
        }
      }
    });
  }
  for (int move = 0; move < 40; ++move) {
    const std::string to = move % 2 == 0 ? "challenger" : "champion";
    ASSERT_TRUE(client_.SetAlias("prod", to).ok());
    absl::StatusOr<std::vector<v1::Prediction>> p =
        client_.Predict("prod", {{1, 0}});
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)[0].score(), to == "champion" ? 1.0 : -1.0) << move;
    absl::SleepFor(absl::Milliseconds(2));
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GT(from_champion.load(), 0);
  EXPECT_GT(from_challenger.load(), 0);
}

TEST(AliasLimitTest, AServerHoldsAsManyAliasesAsModels) {
  TestServer server([](ServerOptions& o) { o.limits.max_models = 2; });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  ASSERT_TRUE(client.SetAlias("a1", "m").ok());
  ASSERT_TRUE(client.SetAlias("a2", "m").ok());
  absl::Status s = client.SetAlias("a3", "m").status();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("max_models"));
  EXPECT_TRUE(client.SetAlias("a2", "m").ok());  // a move is no new alias
}

TEST_F(AliasTest, PredictResponsesNameTheModelThatAnswered) {
  ASSERT_TRUE(client_.SetAlias("prod", "challenger").ok());
  auto stub = server_.NewStub();
  grpc::ClientContext context;
  v1::PredictRequest request;
  request.set_model("prod");
  request.add_instances()->add_dense(1);
  request.mutable_instances(0)->add_dense(1);
  v1::PredictResponse response;
  ASSERT_TRUE(stub->Predict(&context, request, &response).ok());
  EXPECT_EQ(response.model(), "challenger");
}

TEST_F(AliasTest, AliasesSurviveARestartAndACrash) {
  ASSERT_TRUE(client_.SetAlias("prod", "champion").ok());
  ASSERT_TRUE(client_.SetAlias("prod", "challenger").ok());
  ASSERT_TRUE(client_.SetAlias("canary", "champion").ok());
  {
    CrashCopy crash(server_.data_dir());
    Client recovered = crash.Start();
    EXPECT_EQ(recovered.GetModel("prod")->name(), "challenger");
    EXPECT_EQ(recovered.GetModel("canary")->name(), "champion");
  }
  server_.Restart();
  client_ = server_.NewClient();
  EXPECT_EQ(client_.GetModel("prod")->name(), "challenger");
  absl::StatusOr<std::vector<v1::Alias>> aliases = client_.ListAliases();
  ASSERT_TRUE(aliases.ok());
  EXPECT_EQ(aliases->size(), 2u);
}

TEST_F(AliasTest, ADamagedAliasesFileStopsTheServerWithAClearError) {
  ASSERT_TRUE(client_.SetAlias("prod", "champion").ok());
  CrashCopy crash(server_.data_dir());
  {
    std::fstream file(crash.File("aliases"),
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(6);
    file.put('\x7f');
  }
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.data_dir = crash.dir().path();
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::IsDataLoss(server.status())) << server.status();
  EXPECT_THAT(server.status().message(), HasSubstr("aliases is damaged"));
}

// The permission on the alias is what a call through it needs; moving an
// alias needs admin on the alias and on the model.
TEST(AliasPermissionsTest, CallsNeedThePermissionOnTheAlias) {
  TempDir dir;
  const std::string tokens = dir.File("tokens");
  std::ofstream(tokens) << "admin-0123456789abcdef admin:*\n"
                        << "front-0123456789abcdef predict:prod\n"
                        << "lead-01234567890abcdef admin:prod predict:*\n";
  TestServer server([&](ServerOptions& o) { o.tokens_file = tokens; });
  Client admin = server.NewClient();
  admin.set_token("admin-0123456789abcdef");
  ASSERT_TRUE(admin.CreateModel("m1", TextAlgorithm("perceptron"), 1).ok());
  ASSERT_TRUE(admin.SetAlias("prod", "m1").ok());
  Client front = server.NewClient();
  front.set_token("front-0123456789abcdef");
  EXPECT_TRUE(front.Predict("prod", {{1}}).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(front.Predict("m1", {{1}}).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(front.SetAlias("prod", "m1").status()));
  Client lead = server.NewClient();
  lead.set_token("lead-01234567890abcdef");
  // Admin on the alias but not on the model.
  EXPECT_TRUE(absl::IsPermissionDenied(lead.SetAlias("prod", "m1").status()));
  EXPECT_TRUE(lead.DeleteAlias("prod").ok());
  absl::StatusOr<std::vector<v1::Alias>> seen = front.ListAliases();
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->empty());
}

}  // namespace
}  // namespace halfspace
