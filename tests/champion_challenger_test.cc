// One stream, many models, and champion/challenger over real gRPC: a
// fan-out Train stream trains each model exactly as a stream of its own
// would; CompareModels reports each one's progressive numbers and
// McNemar's test against the first on their paired mistakes, which
// survive a restart and a crash.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/monitors/paired_mistakes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

using Stub = v1::HalfspaceService::Stub;

// Sends each request on a new stream and returns the responses, or the
// stream's error.
absl::StatusOr<std::vector<v1::TrainResponse>> TrainOn(
    Stub& stub, const std::vector<v1::TrainRequest>& requests) {
  grpc::ClientContext context;
  std::unique_ptr<TrainStream> stream = stub.Train(&context);
  std::vector<v1::TrainResponse> responses;
  for (const v1::TrainRequest& request : requests) {
    v1::TrainResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) break;
    responses.push_back(response);
  }
  stream->WritesDone();
  const grpc::Status s = stream->Finish();
  if (!s.ok()) return FromGrpcStatus(s);
  return responses;
}

absl::StatusOr<v1::CompareModelsResponse> Compare(
    Stub& stub, const std::vector<std::string>& models,
    std::optional<double> alpha = std::nullopt) {
  grpc::ClientContext context;
  v1::CompareModelsRequest request;
  for (const std::string& m : models) request.add_models(m);
  if (alpha) request.set_alpha(*alpha);
  v1::CompareModelsResponse response;
  const grpc::Status s = stub.CompareModels(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

// The requests of a stream over `examples` in batches of 25, the last
// closing a pass; example 30 has a bad label.
std::vector<v1::TrainRequest> Batches(
    const std::vector<std::pair<std::vector<double>, int>>& examples,
    const std::vector<std::string>& models) {
  std::vector<v1::TrainRequest> requests;
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i % 25 == 0) requests.emplace_back();
    AddExample(requests.back(), examples[i].first,
               i == 30 ? 0 : examples[i].second);
  }
  requests.back().set_end_of_pass(true);
  if (models.size() == 1) {
    requests.front().set_model(models.front());
  } else {
    for (const std::string& m : models) requests.front().add_models(m);
  }
  return requests;
}

class ChampionChallengerTest : public ::testing::Test {
 protected:
  void Create(const std::string& model, const std::string& algorithm,
              int hash_bits = 0) {
    grpc::ClientContext context;
    v1::CreateModelRequest request;
    request.set_model(model);
    *request.mutable_algorithm() = TextAlgorithm(algorithm);
    request.set_dimension(3);
    request.set_hash_bits(hash_bits);
    v1::CreateModelResponse response;
    const grpc::Status s = stub_->CreateModel(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  v1::GetWeightsResponse Weights(Stub& stub, const std::string& model) {
    grpc::ClientContext context;
    v1::GetWeightsRequest request;
    request.set_model(model);
    v1::GetWeightsResponse response;
    EXPECT_TRUE(stub.GetWeights(&context, request, &response).ok());
    return response;
  }

  TestServer server_;
  std::unique_ptr<Stub> stub_ = server_.NewStub();
};

const std::vector<std::string> kAlgorithms = {
    "perceptron", "sgd { loss: LOSS_LOG average_from: 5 }",
    "confidence_weighted", "perceptron"};

// Every model of a fan-out stream learns exactly what a stream of its own
// learns: the same results, example by example, the same pass summaries,
// the same weights bit for bit; models of another feature space (the last,
// hashed) included.
TEST_F(ChampionChallengerTest, AFanOutStreamEqualsOneStreamPerModel) {
  std::vector<std::string> fanned, alone;
  for (size_t k = 0; k < kAlgorithms.size(); ++k) {
    const int hash_bits = k + 1 == kAlgorithms.size() ? 4 : 0;
    fanned.push_back(absl::StrCat("fanned", k));
    alone.push_back(absl::StrCat("alone", k));
    Create(fanned.back(), kAlgorithms[k], hash_bits);
    Create(alone.back(), kAlgorithms[k], hash_bits);
  }
  const auto examples = NoisyExamples(100);
  absl::StatusOr<std::vector<v1::TrainResponse>> together =
      TrainOn(*stub_, Batches(examples, fanned));
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->size(), 4u);
  for (size_t k = 0; k < alone.size(); ++k) {
    SCOPED_TRACE(kAlgorithms[k]);
    absl::StatusOr<std::vector<v1::TrainResponse>> single =
        TrainOn(*stub_, Batches(examples, {alone[k]}));
    ASSERT_TRUE(single.ok()) << single.status();
    for (size_t r = 0; r < single->size(); ++r) {
      const v1::TrainResponse& fan = (*together)[r];
      const v1::TrainResponse& one = (*single)[r];
      EXPECT_EQ(fan.results_size(), 0);
      ASSERT_EQ(fan.fan_out_results_size(), one.results_size());
      for (int i = 0; i < one.results_size(); ++i) {
        ASSERT_EQ(fan.fan_out_results(i).models_size(), 4);
        const v1::ExampleResult& a = fan.fan_out_results(i).models(k);
        const v1::ExampleResult& b = one.results(i);
        EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString())
            << r << " " << i;
      }
    }
    const v1::TrainResponse& last = together->back();
    ASSERT_EQ(last.model_pass_summaries_size(), 4);
    EXPECT_EQ(last.model_pass_summaries(k).SerializeAsString(),
              single->back().pass_summary().SerializeAsString());
    const v1::GetWeightsResponse a = Weights(*stub_, fanned[k]);
    const v1::GetWeightsResponse b = Weights(*stub_, alone[k]);
    EXPECT_EQ(a.weights_size(), b.weights_size());
    EXPECT_EQ(std::vector<double>(a.weights().begin(), a.weights().end()),
              std::vector<double>(b.weights().begin(), b.weights().end()));
    EXPECT_EQ(a.bias(), b.bias());
  }
  // The example with a bad label is refused by every model, in-band.
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ((*together)[1].fan_out_results(5).models(k).error().code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(ChampionChallengerTest, SummariesComeOnePerModel) {
  Create("a", "perceptron");
  Create("b", "logistic_regression");
  std::vector<v1::TrainRequest> requests =
      Batches(NoisyExamples(50), {"a", "b"});
  for (v1::TrainRequest& r : requests) {
    r.set_results(v1::TRAIN_RESULTS_SUMMARY);
  }
  absl::StatusOr<std::vector<v1::TrainResponse>> responses =
      TrainOn(*stub_, requests);
  ASSERT_TRUE(responses.ok()) << responses.status();
  const v1::TrainResponse& second = (*responses)[1];
  EXPECT_EQ(second.fan_out_results_size(), 0);
  ASSERT_EQ(second.model_summaries_size(), 2);
  for (const v1::TrainSummary& summary : second.model_summaries()) {
    EXPECT_EQ(summary.examples(), 24u);
    ASSERT_EQ(summary.errors_size(), 1);
    EXPECT_EQ(summary.errors(0).index(), 5u);
  }
  EXPECT_GT(second.model_summaries(0).updates(), 0u);
}

TEST_F(ChampionChallengerTest, BadFanOutsAreRefused) {
  Create("a", "perceptron");
  Create("b", "perceptron");
  Create("multi", "multiclass_perceptron");
  auto refused = [&](const std::vector<v1::TrainRequest>& requests) {
    absl::StatusOr<std::vector<v1::TrainResponse>> r =
        TrainOn(*stub_, requests);
    EXPECT_FALSE(r.ok());
    return r.status();
  };
  v1::TrainRequest r;
  r.add_models("a");
  EXPECT_THAT(refused({r}).message(), HasSubstr("2 to 16 models"));
  r.add_models("a");
  EXPECT_THAT(refused({r}).message(), HasSubstr("'a' twice"));
  r.clear_models();
  r.add_models("a");
  r.add_models("b");
  r.set_model("a");
  EXPECT_THAT(refused({r}).message(), HasSubstr("not both"));
  r.clear_model();
  r.add_models("nope");
  EXPECT_TRUE(absl::IsNotFound(refused({r})));
  r.clear_models();
  for (int i = 0; i < 17; ++i) r.add_models(absl::StrCat("m", i));
  EXPECT_TRUE(absl::IsInvalidArgument(refused({r})));
  // Later requests repeat the models or name none.
  r.clear_models();
  r.add_models("a");
  r.add_models("b");
  v1::TrainRequest later;
  later.add_models("b");
  later.add_models("a");
  EXPECT_THAT(refused({r, later}).message(), HasSubstr("other models"));
  later.clear_models();
  later.set_model("a");
  EXPECT_THAT(refused({r, later}).message(), HasSubstr("other models"));
  // A single-model stream cannot turn into a fan-out.
  v1::TrainRequest single;
  single.set_model("a");
  later.clear_model();
  later.add_models("a");
  later.add_models("b");
  EXPECT_THAT(refused({single, later}).message(), HasSubstr("other models"));
  // Binary and multiclass models may share a stream: each checks its
  // labels.
  v1::TrainRequest mixed;
  mixed.add_models("a");
  mixed.add_models("multi");
  AddExample(mixed, {1, 0, 0}, 1);
  absl::StatusOr<std::vector<v1::TrainResponse>> ok = TrainOn(*stub_, {mixed});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_FALSE((*ok)[0].fan_out_results(0).models(0).has_error());
  EXPECT_EQ((*ok)[0].fan_out_results(0).models(1).error().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// McNemar's test by hand: b = 7 examples only the first got wrong, c = 1
// only the second: χ² = (|7 − 1| − 1)² / 8 = 3.125, and the exact p-value
// 2·(C(8,0) + C(8,1))/2⁸ = 18/256.
TEST(McNemarTest, MatchesHandComputedValues) {
  McNemarTest t = McNemar(7, 1);
  EXPECT_DOUBLE_EQ(t.chi_square, 3.125);
  EXPECT_DOUBLE_EQ(t.p_value, 18.0 / 256.0);
  t = McNemar(1, 7);  // symmetric
  EXPECT_DOUBLE_EQ(t.p_value, 18.0 / 256.0);
  t = McNemar(10, 0);  // 2/2¹⁰; (10 − 1)² / 10
  EXPECT_DOUBLE_EQ(t.p_value, 2.0 / 1024.0);
  EXPECT_DOUBLE_EQ(t.chi_square, 8.1);
  t = McNemar(5, 5);  // 2·P(X <= 5) > 1: capped
  EXPECT_EQ(t.p_value, 1.0);
  EXPECT_EQ(t.chi_square, 0.0);
  t = McNemar(0, 0);
  EXPECT_EQ(t.p_value, 1.0);
  EXPECT_EQ(t.chi_square, 0.0);
  // 2·(C(12,0) + C(12,1) + C(12,2))/2¹² = 2·79/4096.
  EXPECT_DOUBLE_EQ(McNemar(2, 10).p_value, 158.0 / 4096.0);
  // Large counts: the tail is summed to its end, without overflow.
  t = McNemar(600, 400);
  EXPECT_DOUBLE_EQ(t.chi_square, 199.0 * 199.0 / 1000.0);
  EXPECT_GT(t.p_value, 1e-11);
  EXPECT_LT(t.p_value, 1e-9);
  EXPECT_EQ(McNemar(3000000, 1000000).p_value, 0.0);
  EXPECT_NEAR(McNemar(500000, 500000).p_value, 1.0, 1e-12);
}

// The challenger's side of the table: b = 7 examples only the champion got
// wrong, c = 1 only the challenger, of 20; significant at 0.1 (p = 18/256)
// and not at 0.05.
TEST(PairedComparisonTest, ComparesTheChallengerWithTheChampion) {
  PairedCounts counts;
  counts.examples = 20;
  counts.both_wrong = 2;
  counts.only_peer_wrong = 7;
  counts.only_self_wrong = 1;
  PairedComparison c = Compare(counts, 0.1);
  EXPECT_EQ(c.counts.examples, 20u);
  EXPECT_EQ(c.counts.both_wrong, 2u);
  EXPECT_DOUBLE_EQ(c.accuracy_difference, 6.0 / 20.0);
  EXPECT_DOUBLE_EQ(c.test.p_value, 18.0 / 256.0);
  EXPECT_DOUBLE_EQ(c.test.chi_square, 3.125);
  EXPECT_TRUE(c.significant);
  EXPECT_FALSE(Compare(counts, 0.05).significant);
  EXPECT_FALSE(Compare(counts, 18.0 / 256.0).significant);  // p < alpha
  EXPECT_DOUBLE_EQ(Compare(counts.Swapped(), 0.1).accuracy_difference,
                   -6.0 / 20.0);
  c = Compare(PairedCounts{}, 0.5);  // nothing shared
  EXPECT_EQ(c.accuracy_difference, 0.0);
  EXPECT_EQ(c.test.p_value, 1.0);
  EXPECT_FALSE(c.significant);
}

// A small stream traced by hand. Bias only (x = 0): the perceptron
// (mistake when f >= 0 predicts wrong; it updates when y·f <= 0) and
// logistic regression (b += t − σ(b)) on labels + − − + + − + −:
//   perceptron b: 0 1 0 −1 0 1 0 1     predicted: + + + − + + + +
//   logistic   b: 0 .5 −.12 −.59 .05 .54 −.09 .43  predicted: + + − − + + − +
// Mistakes: perceptron on examples 2 3 4 6 8, logistic on 2 4 6 7 8; both
// on 2 4 6 8, only the perceptron on 3, only logistic on 7.
TEST_F(ChampionChallengerTest, ComparesTwoModelsTracedByHand) {
  Create("champion", "perceptron");
  Create("challenger", "logistic_regression");
  v1::TrainRequest request;
  request.add_models("champion");
  request.add_models("challenger");
  for (int y : {1, -1, -1, 1, 1, -1, 1, -1}) AddExample(request, {0, 0, 0}, y);
  absl::StatusOr<std::vector<v1::TrainResponse>> r = TrainOn(*stub_, {request});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int> perceptron, logistic;
  for (const v1::FanOutResult& result : (*r)[0].fan_out_results()) {
    perceptron.push_back(result.models(0).predicted_label());
    logistic.push_back(result.models(1).predicted_label());
  }
  EXPECT_EQ(perceptron, std::vector<int>({1, 1, 1, -1, 1, 1, 1, 1}));
  EXPECT_EQ(logistic, std::vector<int>({1, 1, -1, -1, 1, 1, -1, 1}));

  absl::StatusOr<v1::CompareModelsResponse> c =
      Compare(*stub_, {"champion", "challenger"});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->models_size(), 2);
  EXPECT_EQ(c->models(0).model(), "champion");
  EXPECT_FALSE(c->models(0).has_versus_first());
  EXPECT_EQ(c->models(0).stats().examples_seen(), 8u);
  EXPECT_DOUBLE_EQ(c->models(0).stats().progressive_accuracy(), 3.0 / 8.0);
  EXPECT_DOUBLE_EQ(c->models(1).stats().window_accuracy(), 3.0 / 8.0);
  const v1::PairedTest& t = c->models(1).versus_first();
  EXPECT_EQ(t.examples(), 8u);
  EXPECT_EQ(t.both_wrong(), 4u);
  EXPECT_EQ(t.only_first_wrong(), 1u);
  EXPECT_EQ(t.only_this_wrong(), 1u);
  EXPECT_EQ(t.accuracy_difference(), 0.0);
  EXPECT_EQ(t.chi_square(), 0.0);
  EXPECT_EQ(t.p_value(), 1.0);
  EXPECT_FALSE(t.significant());
  // Asked the other way round, the table is the same seen from the other
  // side.
  c = Compare(*stub_, {"challenger", "champion"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->models(1).versus_first().both_wrong(), 4u);
}

// Three models on 300 examples: the comparison's tables equal the ones
// counted from the stream's own per-example results, its tests equal
// McNemar on them, and they survive a restart and a crash.
TEST_F(ChampionChallengerTest, ComparisonCountsThePairedMistakesOfTheStream) {
  const std::vector<std::string> models = {"champion", "logistic", "cw"};
  Create(models[0], "perceptron");
  Create(models[1], "logistic_regression");
  Create(models[2], "confidence_weighted");
  auto examples = NoisyExamples(300);
  std::vector<v1::TrainRequest> requests = Batches(examples, models);
  requests.front().add_examples();  // an empty example: refused by all
  // The last requests on a stream of their own, tagged.
  for (size_t r = 2; r < requests.size(); ++r) {
    requests[r].set_sequence(1 + 25 * (r - 2));
  }
  requests[2].set_source("pipeline");
  for (const std::string& m : models) requests[2].add_models(m);
  absl::StatusOr<std::vector<v1::TrainResponse>> first = TrainOn(
      *stub_,
      std::vector<v1::TrainRequest>(requests.begin(), requests.begin() + 2));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::vector<v1::TrainResponse>> rest = TrainOn(
      *stub_,
      std::vector<v1::TrainRequest>(requests.begin() + 2, requests.end()));
  ASSERT_TRUE(rest.ok()) << rest.status();
  // Counted from the results, against the first model.
  std::vector<int> labels;
  for (const v1::TrainRequest& request : requests) {
    for (const v1::Example& e : request.examples()) labels.push_back(e.label());
  }
  std::vector<v1::FanOutResult> results;
  for (const auto* part : {&*first, &*rest}) {
    for (const v1::TrainResponse& response : *part) {
      results.insert(results.end(), response.fan_out_results().begin(),
                     response.fan_out_results().end());
    }
  }
  ASSERT_EQ(results.size(), labels.size());
  std::vector<PairedCounts> expected(3);
  int labels_seen = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].models(0).has_error()) continue;
    ++labels_seen;
    auto wrong = [&](int k) {
      return results[i].models(k).predicted_label() != labels[i];
    };
    for (int k = 1; k < 3; ++k) {
      PairedCounts& c = expected[k];
      ++c.examples;
      c.both_wrong += wrong(0) && wrong(k);
      c.only_peer_wrong += wrong(0) && !wrong(k);
      c.only_self_wrong += !wrong(0) && wrong(k);
    }
  }
  EXPECT_EQ(labels_seen, 299);
  ASSERT_NE(expected[1].only_peer_wrong, expected[1].only_self_wrong);

  auto check = [&](Stub& stub) {
    absl::StatusOr<v1::CompareModelsResponse> c = Compare(stub, models, 0.5);
    ASSERT_TRUE(c.ok()) << c.status();
    for (int k = 1; k < 3; ++k) {
      SCOPED_TRACE(models[k]);
      const v1::PairedTest& t = c->models(k).versus_first();
      EXPECT_EQ(t.examples(), expected[k].examples);
      EXPECT_EQ(t.both_wrong(), expected[k].both_wrong);
      EXPECT_EQ(t.only_first_wrong(), expected[k].only_peer_wrong);
      EXPECT_EQ(t.only_this_wrong(), expected[k].only_self_wrong);
      const McNemarTest test =
          McNemar(expected[k].only_peer_wrong, expected[k].only_self_wrong);
      EXPECT_EQ(t.p_value(), test.p_value);
      EXPECT_EQ(t.chi_square(), test.chi_square);
      EXPECT_EQ(t.significant(), test.p_value < 0.5);
      EXPECT_DOUBLE_EQ(t.accuracy_difference(),
                       (static_cast<double>(expected[k].only_peer_wrong) -
                        static_cast<double>(expected[k].only_self_wrong)) /
                           expected[k].examples);
      // The other way round (the first model learned second): the same
      // table, seen from the other side.
      absl::StatusOr<v1::CompareModelsResponse> back =
          Compare(stub, {models[k], models[0]}, 0.5);
      ASSERT_TRUE(back.ok()) << back.status();
      const v1::PairedTest& u = back->models(1).versus_first();
      EXPECT_EQ(u.examples(), expected[k].examples);
      EXPECT_EQ(u.only_first_wrong(), expected[k].only_self_wrong);
      EXPECT_EQ(u.only_this_wrong(), expected[k].only_peer_wrong);
      EXPECT_DOUBLE_EQ(u.accuracy_difference(), -t.accuracy_difference());
    }
  };
  check(*stub_);
  {
    CrashCopy crash(server_.data_dir());  // recovered from the log
    crash.Start();
    check(*v1::HalfspaceService::NewStub(Connected(grpc::CreateChannel(
        crash.target(), grpc::InsecureChannelCredentials()))));
  }
  server_.Restart();  // from the snapshots
  stub_ = server_.NewStub();
  check(*stub_);
}

// Counts are against a model, not a name: one deleted and created again
// under its name starts with an empty table.
TEST_F(ChampionChallengerTest, AModelCreatedAgainUnderItsNameStartsAfresh) {
  Create("a", "perceptron");
  Create("b", "logistic_regression");
  auto shared = [&](int n) {
    EXPECT_TRUE(TrainOn(*stub_, Batches(NoisyExamples(n), {"a", "b"})).ok());
    absl::StatusOr<v1::CompareModelsResponse> c = Compare(*stub_, {"a", "b"});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->models(1).versus_first().examples() : 0;
  };
  EXPECT_EQ(shared(20), 20u);
  grpc::ClientContext context;
  v1::DeleteModelRequest request;
  request.set_model("a");
  v1::DeleteModelResponse response;
  ASSERT_TRUE(stub_->DeleteModel(&context, request, &response).ok());
  Create("a", "perceptron");
  absl::StatusOr<v1::CompareModelsResponse> c = Compare(*stub_, {"a", "b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->models(1).versus_first().examples(), 0u);
  EXPECT_EQ(shared(5), 5u);
}

TEST_F(ChampionChallengerTest, BadComparisonsAreRefused) {
  Create("a", "perceptron");
  Create("b", "perceptron");
  EXPECT_TRUE(absl::IsInvalidArgument(Compare(*stub_, {"a"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Compare(*stub_, {"a", "a"}).status()));
  EXPECT_TRUE(absl::IsNotFound(Compare(*stub_, {"a", "nope"}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(Compare(*stub_, {"a", "b"}, 1.0).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(Compare(*stub_, {"a", "b"}, 0.0).status()));
  // Models that never shared a stream: nothing to test.
  absl::StatusOr<v1::CompareModelsResponse> c = Compare(*stub_, {"a", "b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->models(1).versus_first().examples(), 0u);
  EXPECT_EQ(c->models(1).versus_first().p_value(), 1.0);
}

}  // namespace
}  // namespace halfspace
