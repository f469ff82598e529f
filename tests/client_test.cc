#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/batching_trainer.h"
#include "client/halfspace_client.h"
#include "core/features/feature_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class ClientTest : public ::testing::Test {
 protected:
  TestServer server_;
  Client client_ = server_.NewClient();
};

const std::vector<LabeledExample> kSecondWorkedExample = {
    {{1, 2}, +1}, {{2, 1}, -1}, {{0, 0}, -1}};

TEST_F(ClientTest, FitConvergesOnTheSecondWorkedExampleInPassThree) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  absl::StatusOr<FitReport> report = client_.Fit("m", kSecondWorkedExample);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->passes, 3);
  EXPECT_EQ(report->updates, 5u);
  EXPECT_TRUE(report->converged);
  EXPECT_THAT(report->updates_per_pass, ElementsAre(3, 2, 0));
  EXPECT_THAT(report->mistakes_per_pass, ElementsAre(2, 1, 0));
  EXPECT_DOUBLE_EQ(report->weight_norm, std::sqrt(8.0));
  EXPECT_DOUBLE_EQ(report->max_example_norm, std::sqrt(6.0));
  absl::StatusOr<v1::GetWeightsResponse> w = client_.GetWeights("m");
  EXPECT_THAT(w->weights(), ElementsAre(-2, 2));
  EXPECT_EQ(w->bias(), -1);
  // The three passes' nine examples, with the mistakes of each pass.
  absl::StatusOr<std::vector<v1::RecentExample>> recent =
      client_.GetRecentExamples("m");
  ASSERT_TRUE(recent.ok()) << recent.status();
  ASSERT_EQ(recent->size(), 9u);
  int mistakes[3] = {0, 0, 0};
  for (size_t i = 0; i < recent->size(); ++i) {
    const LabeledExample& e = kSecondWorkedExample[i % 3];
    EXPECT_THAT((*recent)[i].features(),
                ElementsAre(e.features[0], e.features[1]));
    EXPECT_EQ((*recent)[i].label(), e.label);
    mistakes[i / 3] += (*recent)[i].mistake();
  }
  EXPECT_THAT(mistakes, ElementsAre(2, 1, 0));
}

TEST_F(ClientTest, FitGivesTheSameModelWhateverTheBatchSize) {
  std::vector<LabeledExample> data;
  for (int i = 0; i < 300; ++i) {
    const double a = (i * 37 % 101) / 10.0 - 5, b = (i * 53 % 97) / 10.0 - 5;
    data.push_back({{a, b}, a + 2 * b > 0.5 ? 1 : -1});
  }
  std::vector<std::vector<double>> weights;
  for (int batch_size : {1, 7, 300}) {
    const std::string name = absl::StrCat("m", batch_size);
    ASSERT_TRUE(client_.CreateModel(name, TextAlgorithm("perceptron"), 2).ok());
    FitOptions options;
    options.batch_size = batch_size;
    options.max_passes = 3;
    ASSERT_TRUE(client_.Fit(name, data, options).ok());
    absl::StatusOr<v1::GetWeightsResponse> w = client_.GetWeights(name);
    weights.emplace_back(w->weights().begin(), w->weights().end());
    weights.back().push_back(w->bias());
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0], weights[2]);
}

TEST_F(ClientTest, FitStopsAtMaxPassesOnDataNoHalfspaceSeparates) {
  ASSERT_TRUE(client_.CreateModel("xor", TextAlgorithm("perceptron"), 2).ok());
  const std::vector<LabeledExample> xor_data = {
      {{0, 0}, -1}, {{1, 1}, -1}, {{0, 1}, 1}, {{1, 0}, 1}};
  FitOptions options;
  options.max_passes = 20;
  absl::StatusOr<FitReport> report = client_.Fit("xor", xor_data, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->passes, 20);
  EXPECT_FALSE(report->converged);
}

TEST_F(ClientTest, FitReportsAMissingModelAndARejectedExample) {
  absl::Status missing = client_.Fit("nope", kSecondWorkedExample).status();
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;

  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  std::vector<LabeledExample> data(500, LabeledExample{{1, 1}, 1});
  data[321].label = 0;
  FitOptions options;
  options.batch_size = 10;
  absl::Status rejected = client_.Fit("m", data, options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(rejected)) << rejected;
  EXPECT_THAT(rejected.message(), HasSubstr("example 321"));
  EXPECT_TRUE(absl::IsInvalidArgument(client_.Fit("m", {}).status()));
}

// Raw units: x1 near 1000 carries the label in its fractional part. The
// perceptron must grow b to about -1000·w1 one step at a time; standardized,
// the same data is easy.
TEST_F(ClientTest, StandardizationTurnsThousandsOfPassesIntoAFew) {
  std::vector<LabeledExample> data;
  for (double u : {0.1, 0.3, 0.7, 0.9, 0.2, 0.8}) {
    data.push_back({{1000 + u, 0.001 * u}, u > 0.5 ? 1 : -1});
  }
  v1::CreateModelRequest request;
  *request.mutable_algorithm() = TextAlgorithm("perceptron");
  request.set_dimension(2);
  request.set_model("raw");
  ASSERT_TRUE(client_.CreateModel(request).ok());
  request.set_model("standardized");
  request.set_standardize(true);
  absl::StatusOr<v1::Model> created = client_.CreateModel(request);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->standardize());

  FitOptions options;
  options.max_passes = 1000;
  absl::StatusOr<FitReport> raw = client_.Fit("raw", data, options);
  absl::StatusOr<FitReport> standardized =
      client_.Fit("standardized", data, options);
  ASSERT_TRUE(raw.ok() && standardized.ok());
  EXPECT_TRUE(standardized->converged);
  EXPECT_LE(standardized->passes, 10);
  EXPECT_GT(raw->passes, 100 * standardized->passes);

  // Predictions standardize too, and the statistics survive a restart.
  auto predict = [&](Client& c) {
    return (
        *c.Predict("standardized", {{1000.95, 0.00095}, {1000.05, 0.00005}}));
  };
  EXPECT_EQ(predict(client_)[0].label(), 1);
  EXPECT_EQ(predict(client_)[1].label(), -1);
  const double before = predict(client_)[0].score();
  server_.Restart();
  Client restarted = server_.NewClient();
  EXPECT_EQ(predict(restarted)[0].score(), before);
}

// XOR, which no halfspace separates, as named features a:x and b:x with
// values 0 and 1; crossing the groups adds x1·x2 and makes it separable.
TEST_F(ClientTest, InteractionsMakeXorSeparable) {
  std::vector<LabeledExample> xor_data;
  for (int x1 : {0, 1}) {
    for (int x2 : {0, 1}) {
      LabeledExample e;
      e.label = x1 != x2 ? 1 : -1;
      e.named = {{"a", "x", double(x1)}, {"b", "x", double(x2)}};
      xor_data.push_back(e);
    }
  }
  v1::CreateModelRequest request;
  *request.mutable_algorithm() = TextAlgorithm("perceptron");
  request.set_dimension(0);
  request.set_hash_bits(10);
  request.set_model("plain");
  ASSERT_TRUE(client_.CreateModel(request).ok());
  request.set_model("crossed");
  v1::Interaction* ab = request.add_interactions();
  ab->set_first_group("a");
  ab->set_second_group("b");
  absl::StatusOr<v1::Model> crossed = client_.CreateModel(request);
  ASSERT_TRUE(crossed.ok()) << crossed.status();
  EXPECT_EQ(crossed->hash_bits(), 10u);
  EXPECT_EQ(crossed->interactions(0).second_group(), "b");

  FitOptions options;
  options.max_passes = 100;
  absl::StatusOr<FitReport> plain = client_.Fit("plain", xor_data, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->converged);
  EXPECT_EQ(plain->passes, 100);
  absl::StatusOr<FitReport> fitted = client_.Fit("crossed", xor_data, options);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_TRUE(fitted->converged);

  v1::PredictRequest predict;
  predict.set_model("crossed");
  for (const LabeledExample& e : xor_data) {
    v1::FeatureVector* x = predict.add_instances();
    for (const NamedValue& f : e.named) {
      v1::NamedFeature* named = x->add_named();
      named->set_group(f.group);
      named->set_name(f.name);
      named->set_value(f.value);
    }
  }
  absl::StatusOr<std::vector<v1::Prediction>> p = client_.Predict(predict);
  ASSERT_TRUE(p.ok()) << p.status();
  for (size_t i = 0; i < xor_data.size(); ++i) {
    EXPECT_EQ((*p)[i].label(), xor_data[i].label) << i;
  }
  EXPECT_EQ(client_.GetWeights("crossed")->weights_size(), 1024);
}

// A server learns from named features the client hashed (HashedGroup, as
// this client and the CLI send them) exactly what it learns from the named
// features themselves, interactions included, and predicts the same.
TEST_F(ClientTest, HashedGroupsLearnWhatTheirNamedFeaturesLearn) {
  v1::CreateModelRequest create;
  *create.mutable_algorithm() = TextAlgorithm("sgd { loss: LOSS_LOG }");
  create.set_dimension(1);
  create.set_hash_bits(8);
  for (const auto& [first, second] :
       std::vector<std::pair<std::string, std::string>>{{"a", "b"},
                                                        {"a", "a"}}) {
    v1::Interaction* pair = create.add_interactions();
    pair->set_first_group(first);
    pair->set_second_group(second);
  }
  for (const char* name : {"named", "hashed"}) {
    create.set_model(name);
    ASSERT_TRUE(client_.CreateModel(create).ok());
  }
  std::vector<LabeledExample> data;
  v1::TrainRequest as_named;
  as_named.set_model("named");
  for (int i = 0; i < 300; ++i) {
    LabeledExample e;
    e.features = {(i % 7) / 7.0};
    e.label = i % 3 == 0 ? 1 : -1;
    for (int k = 0; k < 1 + i % 5; ++k) {
      e.named.push_back({k % 3 == 2 ? "b" : "a", absl::StrCat("w", i * k % 11),
                         k == 1 ? 1.0 : (i % 13) / 4.0 - 1});
    }
    data.push_back(e);
    v1::Example* example = as_named.add_examples();
    example->set_label(e.label);
    example->mutable_features()->add_dense(e.features[0]);
    for (const NamedValue& f : e.named) {
      v1::NamedFeature* named = example->mutable_features()->add_named();
      named->set_group(f.group);
      named->set_name(f.name);
      named->set_value(f.value);
    }
  }
  std::unique_ptr<TrainingStream> named = client_.Train("named");
  ASSERT_TRUE(named->Send(as_named).ok());
  ASSERT_TRUE(named->Receive().ok());
  ASSERT_TRUE(named->Finish().ok());
  std::unique_ptr<TrainingStream> hashed = client_.Train("hashed");
  ASSERT_TRUE(hashed->Send(data).ok());
  absl::StatusOr<v1::TrainResponse> r = hashed->Receive();
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::ExampleResult& result : r->results()) {
    ASSERT_FALSE(result.has_error()) << result.error().message();
  }
  ASSERT_TRUE(hashed->Finish().ok());
  absl::StatusOr<v1::GetWeightsResponse> w_named = client_.GetWeights("named");
  absl::StatusOr<v1::GetWeightsResponse> w_hashed =
      client_.GetWeights("hashed");
  ASSERT_TRUE(w_named.ok() && w_hashed.ok());
  EXPECT_THAT(w_hashed->weights(), ElementsAreArray(w_named->weights()));
  EXPECT_EQ(w_hashed->bias(), w_named->bias());
  EXPECT_NE(w_named->bias(), 0.0);  // it learned

  // Predicting with either form gives the same scores.
  v1::PredictRequest predict;
  predict.set_model("named");
  for (const v1::Example& e : as_named.examples()) {
    *predict.add_instances() = e.features();
  }
  for (int i = 0; i < 2; ++i) {
    const v1::FeatureVector& x = as_named.examples(i).features();
    v1::FeatureVector* y = predict.add_instances();
    *y->mutable_dense() = x.dense();
    v1::HashedGroup* g = nullptr;
    for (const v1::NamedFeature& f : x.named()) {
      if (g == nullptr || g->group() != f.group()) {
        g = y->add_hashed();
        g->set_group(f.group());
      }
      g->add_hashes(FeatureHash(f.name(), GroupSeed(f.group())));
      g->add_values(f.value());
    }
  }
  absl::StatusOr<std::vector<v1::Prediction>> p = client_.Predict(predict);
  ASSERT_TRUE(p.ok()) << p.status();
  const size_t n = as_named.examples_size();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*p)[n + i].score(), (*p)[i].score()) << i;
  }

  // A group whose values do not match its hashes is rejected in-band.
  v1::TrainRequest bad;
  *bad.add_examples() = as_named.examples(0);
  v1::Example* mismatched = bad.add_examples();
  mismatched->set_label(1);
  mismatched->mutable_features()->add_dense(0.5);
  v1::HashedGroup* g = mismatched->mutable_features()->add_hashed();
  g->set_group("a");
  g->add_hashes(1);
  g->add_hashes(2);
  g->add_values(3.0);
  *bad.add_examples() = as_named.examples(1);
  std::unique_ptr<TrainingStream> stream = client_.Train("hashed");
  bad.set_model("hashed");
  ASSERT_TRUE(stream->Send(bad).ok());
  r = stream->Receive();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->results_size(), 3);
  EXPECT_FALSE(r->results(0).has_error());
  EXPECT_THAT(r->results(1).error().message(),
              HasSubstr("hashed group 'a' has 2 hashes but 1 values"));
  EXPECT_FALSE(r->results(2).has_error());
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ClientTest, FeatureFormsAreCheckedInBand) {
  ASSERT_TRUE(
      client_.CreateModel("dense", TextAlgorithm("perceptron"), 2).ok());
  std::unique_ptr<TrainingStream> stream = client_.Train("dense");
  LabeledExample named;
  named.label = 1;
  named.named = {{"g", "f", 1.0}};
  LabeledExample sparse;
  sparse.label = 1;
  sparse.sparse_indices = {1, 2};
  sparse.sparse_values = {1.0, 1.0};
  LabeledExample sparse_ok;
  sparse_ok.label = -1;
  sparse_ok.sparse_indices = {1};
  sparse_ok.sparse_values = {3.0};
  ASSERT_TRUE(stream->Send({named, sparse, sparse_ok}).ok());
  absl::StatusOr<v1::TrainResponse> r = stream->Receive();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->results(0).error().message(),
              HasSubstr("named features need hash buckets"));
  EXPECT_THAT(r->results(1).error().message(),
              HasSubstr("sparse index 2 is out of range"));
  EXPECT_FALSE(r->results(2).has_error());
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_THAT(client_.GetWeights("dense")->weights(), ElementsAre(0, -3));
}

TEST_F(ClientTest, UnaryCallsToAnUnreachableServerFailWithUnavailable) {
  Client nowhere(
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()),
      absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(nowhere.ListModels().status()));
}

// --- BatchingTrainer
// -----------------------------------------------------------

// n examples of d = 3 on both sides of a plane, in a fixed order.
std::vector<LabeledExample> PlaneData(int n) {
  std::vector<LabeledExample> data;
  for (int i = 0; i < n; ++i) {
    const double a = (i * 37 % 101) / 10.0 - 5, b = (i * 53 % 97) / 10.0 - 5,
                 c = (i * 71 % 89) / 10.0 - 4;
    data.push_back({{a, b, c}, a - 2 * b + c > 0.3 ? 1 : -1});
  }
  return data;
}

// What a BatchingTrainer's callback was given.
struct Results {
  absl::Mutex mu;
  std::vector<std::pair<uint64_t, v1::ExampleResult>> all ABSL_GUARDED_BY(mu);

  BatchingTrainer::OnResult Collect() {
    return [this](uint64_t sequence, const v1::ExampleResult& result) {
      absl::MutexLock lock(&mu);
      all.emplace_back(sequence, result);
    };
  }
  size_t size() {
    absl::MutexLock lock(&mu);
    return all.size();
  }
};

TEST_F(ClientTest, BatchingTrainerEqualsOneStreamExampleForExample) {
  const std::vector<LabeledExample> data = PlaneData(1000);
  for (const char* name : {"batched", "streamed"}) {
    ASSERT_TRUE(client_.CreateModel(name, TextAlgorithm("perceptron"), 3).ok());
  }
  std::unique_ptr<TrainingStream> stream = client_.Train("streamed");
  ASSERT_TRUE(stream->Send(data).ok());
  absl::StatusOr<v1::TrainResponse> streamed = stream->Receive();
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  ASSERT_TRUE(stream->Finish().ok());

  Results results;
  BatchingOptions options;
  options.max_batch = 64;
  options.max_pending = 128;
  options.flush_interval = absl::Milliseconds(1);
  auto trainer = BatchingTrainer::Open(&client_, "batched", "producer",
                                       results.Collect(), options);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  for (size_t i = 0; i < data.size(); ++i) {
    absl::StatusOr<uint64_t> sequence = (*trainer)->Add(data[i]);
    ASSERT_TRUE(sequence.ok()) << sequence.status();
    EXPECT_EQ(*sequence, i + 1);
  }
  ASSERT_TRUE((*trainer)->Close().ok());
  EXPECT_EQ((*trainer)->last_applied(), data.size());
  EXPECT_TRUE(absl::IsFailedPrecondition((*trainer)->Add(data[0]).status()));

  absl::MutexLock lock(&results.mu);
  ASSERT_EQ(results.all.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(results.all[i].first, i + 1);
    const v1::ExampleResult& want = streamed->results(i);
    const v1::ExampleResult& got = results.all[i].second;
    EXPECT_EQ(got.score(), want.score()) << i;
    EXPECT_EQ(got.updated(), want.updated()) << i;
    EXPECT_EQ(got.examples_seen(), i + 1);
  }
  EXPECT_THAT(client_.GetWeights("batched")->weights(),
              ElementsAreArray(client_.GetWeights("streamed")->weights()));
  EXPECT_EQ(client_.GetWeights("batched")->bias(),
            client_.GetWeights("streamed")->bias());
  EXPECT_EQ(*client_.GetSourceSequence("batched", "producer"), data.size());
}

TEST_F(ClientTest, BatchingTrainerSendsAPartBatchOnceItsOldestHasWaited) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 3).ok());
  Results results;
  BatchingOptions options;
  options.max_batch = 1000;
  options.flush_interval = absl::Milliseconds(20);
  auto trainer =
      BatchingTrainer::Open(&client_, "m", "p", results.Collect(), options);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  for (const LabeledExample& e : PlaneData(3)) {
    ASSERT_TRUE((*trainer)->Add(e).ok());
  }
  // No Flush: the interval alone sends them.
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (results.size() < 3 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(results.size(), 3u);
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 3u);
}

TEST_F(ClientTest, BatchingTrainerReportsRejectedExamplesAndGoesOn) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 3).ok());
  Results results;
  auto trainer = BatchingTrainer::Open(&client_, "m", "p", results.Collect());
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ASSERT_TRUE((*trainer)->Add({{1, 2, 3}, 1}).ok());
  ASSERT_TRUE((*trainer)->Add({{1, 2}, 1}).ok());  // one feature short
  ASSERT_TRUE((*trainer)->Add({{3, 2, 1}, -1}).ok());
  ASSERT_TRUE((*trainer)->Flush().ok());
  absl::MutexLock lock(&results.mu);
  ASSERT_EQ(results.all.size(), 3u);
  EXPECT_FALSE(results.all[0].second.has_error());
  EXPECT_THAT(results.all[1].second.error().message(), HasSubstr("2"));
  EXPECT_FALSE(results.all[2].second.has_error());
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 2u);
}

TEST_F(ClientTest, BatchingTrainerStopsOnAFailureNoRetryCures) {
  EXPECT_TRUE(absl::IsNotFound(
      BatchingTrainer::Open(&client_, "missing", "p", nullptr).status()));
  BatchingOptions bad;
  bad.max_batch = 10;
  bad.max_pending = 5;
  EXPECT_TRUE(absl::IsInvalidArgument(
      BatchingTrainer::Open(&client_, "m", "p", nullptr, bad).status()));

  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 3).ok());
  auto trainer = BatchingTrainer::Open(&client_, "m", "p", nullptr);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ASSERT_TRUE(client_.DeleteModel("m").ok());
  ASSERT_TRUE((*trainer)->Add({{1, 2, 3}, 1}).ok());
  EXPECT_TRUE(absl::IsNotFound((*trainer)->Flush()));
  EXPECT_TRUE(absl::IsNotFound((*trainer)->Add({{1, 2, 3}, 1}).status()));
  EXPECT_TRUE(absl::IsNotFound((*trainer)->Close()));
}

TEST_F(ClientTest, BatchingTrainerTakesExamplesFromManyThreads) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 3).ok());
  Results results;
  BatchingOptions options;
  options.max_batch = 16;
  options.max_pending = 32;
  auto trainer =
      BatchingTrainer::Open(&client_, "m", "p", results.Collect(), options);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  const std::vector<LabeledExample> data = PlaneData(500);
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (const LabeledExample& e : data) EXPECT_TRUE((*trainer)->Add(e).ok());
    });
  }
  for (std::thread& p : producers) p.join();
  ASSERT_TRUE((*trainer)->Close().ok());
  absl::MutexLock lock(&results.mu);
  ASSERT_EQ(results.all.size(), 4 * data.size());
  for (size_t i = 0; i < results.all.size(); ++i) {
    EXPECT_EQ(results.all[i].first, i + 1);
  }
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 4 * data.size());
}

}  // namespace
}  // namespace halfspace
