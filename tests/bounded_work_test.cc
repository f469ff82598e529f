// Bounded work through the service: each limit refuses with
// RESOURCE_EXHAUSTED naming its flag before the work starts, the requests
// that once took gigabytes take none, and a call whose caller gave up stops.

#include <sys/resource.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/halfspace_client.h"
#include "core/model/model_spec.h"
#include "core/registry/exported_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/status.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;

// This process's resident memory, from /proc.
int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;
    }
  }
  return 0;
}

// CPU time this process used so far.
absl::Duration CpuTime() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return absl::DurationFromTimeval(usage.ru_utime) +
         absl::DurationFromTimeval(usage.ru_stime);
}

v1::CreateModelRequest HashedModel(const std::string& name,
                                   const std::string& algorithm,
                                   int64_t dimension, int hash_bits) {
  v1::CreateModelRequest create;
  create.set_model(name);
  *create.mutable_algorithm() = TextAlgorithm(algorithm);
  create.set_dimension(dimension);
  create.set_hash_bits(hash_bits);
  return create;
}

// A perceptron of 2^18 buckets whose group "g" is crossed with itself.
v1::CreateModelRequest SelfCrossedModel(const std::string& name) {
  v1::CreateModelRequest create = HashedModel(name, "perceptron", 1, 18);
  v1::Interaction* self = create.add_interactions();
  self->set_first_group("g");
  self->set_second_group("g");
  return create;
}

// An instance of n named features in group "g".
v1::FeatureVector NamedFeatures(int n) {
  v1::FeatureVector features;
  for (int i = 0; i < n; ++i) {
    v1::NamedFeature* f = features.add_named();
    f->set_group("g");
    f->set_name(absl::StrCat("word", i));
  }
  return features;
}

TEST(BoundedWorkTest, AHugeModelIsRefusedWithoutTakingMemory) {
  TestServer server;  // the default limits
  Client client = server.NewClient();
  const int64_t before = ResidentBytes();
  const absl::Time start = absl::Now();
  // Once 3.9 GB and 12 s: an averaged perceptron of 2^24 + 2^24 weights.
  absl::StatusOr<v1::Model> huge = client.CreateModel(
      HashedModel("huge", "averaged_perceptron", int64_t{1} << 24, 24));
  EXPECT_TRUE(absl::IsResourceExhausted(huge.status())) << huge.status();
  EXPECT_THAT(huge.status().message(), HasSubstr("set by --max_model_bytes"));
  const int64_t grown = ResidentBytes() - before;
  std::printf("huge CreateModel: refused in %s, memory +%lld KiB\n",
              absl::FormatDuration(absl::Now() - start).c_str(),
              static_cast<long long>(grown >> 10));
  EXPECT_LT(grown, int64_t{64} << 20);
  EXPECT_TRUE(absl::IsNotFound(client.GetModel("huge").status()));
  // What fits is made.
  EXPECT_TRUE(
      client.CreateModel(HashedModel("fits", "averaged_perceptron", 16, 20))
          .ok());
}

TEST(BoundedWorkTest, ModelsAndTheirMemoryAreCounted) {
  TestServer server([](ServerOptions& o) {
    o.limits.max_models = 4;
    o.limits.max_model_bytes = int64_t{4} << 20;
    o.limits.max_total_model_bytes = int64_t{5} << 20;
  });
  Client client = server.NewClient();
  // 2^18 weights: 2 MiB a model, so two fit in 5 MiB and three do not.
  auto hashed = [](const std::string& name) {
    return HashedModel(name, "perceptron", 1, 18);
  };
  ASSERT_TRUE(client.CreateModel(hashed("a")).ok());
  ASSERT_TRUE(client.CreateModel(hashed("b")).ok());
  absl::StatusOr<v1::Model> c = client.CreateModel(hashed("c"));
  EXPECT_TRUE(absl::IsResourceExhausted(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("--max_total_model_bytes"));
  ASSERT_TRUE(client.CreateModel("d", TextAlgorithm("perceptron"), 2).ok());
  ASSERT_TRUE(client.CreateModel("e", TextAlgorithm("perceptron"), 2).ok());
  absl::StatusOr<v1::Model> f =
      client.CreateModel("f", TextAlgorithm("perceptron"), 2);
  EXPECT_TRUE(absl::IsResourceExhausted(f.status()));
  EXPECT_THAT(f.status().message(),
              HasSubstr("the server holds 4 models; delete one first; the "
                        "limit is 4, set by --max_models"));
  // Deleting gives back the model and its memory.
  ASSERT_TRUE(client.DeleteModel("a").ok());
  EXPECT_TRUE(client.CreateModel(hashed("c")).ok());
}

TEST(BoundedWorkTest, ClassesStopAtTheModelsMemoryInBand) {
  TestServer server(
      [](ServerOptions& o) { o.limits.max_model_bytes = 1 << 20; });
  Client client = server.NewClient();
  // 2^14 weights per class: ~128 KiB, so seven classes fit in 1 MiB.
  v1::CreateModelRequest create = HashedModel("m", "softmax_regression", 1, 14);
  ASSERT_TRUE(client.CreateModel(create).ok());
  std::vector<LabeledExample> examples;
  for (int k = 0; k < 4096; ++k) {
    examples.push_back({{1.0}, 0, 1.0, absl::StrCat("class", k)});
  }
  const int64_t before = ResidentBytes();
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream->Send(examples).ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << stream->Finish();
  int refused = 0;
  for (const v1::ExampleResult& r : response->results()) {
    if (r.error().code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      EXPECT_THAT(r.error().message(), HasSubstr("--max_model_bytes"));
      ++refused;
    }
  }
  EXPECT_EQ(refused, 4096 - client.GetModel("m")->classes_size());
  EXPECT_EQ(client.GetModel("m")->classes_size(), 7);
  const int64_t grown = ResidentBytes() - before;
  std::printf("4096 new classes: %d refused, memory +%lld KiB\n", refused,
              static_cast<long long>(grown >> 10));
  EXPECT_LT(grown, int64_t{64} << 20);
  // The stream goes on.
  ASSERT_TRUE(stream->Send({{{1.0}, 0, 1.0, "class0"}}).ok());
  EXPECT_TRUE(stream->Receive().ok());
}

TEST(BoundedWorkTest, AnExampleOfTooManyInteractionProductsCostsNothing) {
  TestServer server;  // the default limits
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(SelfCrossedModel("m")).ok());
  // Once 1.4 s of CPU: 1,000 named features crossed with themselves.
  LabeledExample e;
  e.label = 1;
  for (int i = 0; i < 1000; ++i)
    e.named.push_back({"g", absl::StrCat("w", i), 1.0});
  const absl::Duration cpu = CpuTime();
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream->Send({e}).ok());
  absl::StatusOr<v1::TrainResponse> response = stream->Receive();
  ASSERT_TRUE(response.ok()) << stream->Finish();
  EXPECT_EQ(response->results(0).error().code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(response->results(0).error().message(),
              HasSubstr("make 499500 interaction products; the limit is "
                        "100000, set by --max_interaction_products"));
  std::printf("1000 self-crossed named features: refused, %s of CPU\n",
              absl::FormatDuration(CpuTime() - cpu).c_str());
  EXPECT_LT(CpuTime() - cpu, absl::Milliseconds(500));
}

TEST(BoundedWorkTest, ExamplesPerRequestAndFeaturesPerExample) {
  TestServer server([](ServerOptions& o) {
    o.limits.max_examples_per_request = 10;
    o.limits.max_named_features = 100;
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("m", "perceptron", 1, 10)).ok());
  v1::PredictRequest predict;
  predict.set_model("m");
  for (int i = 0; i < 11; ++i) *predict.add_instances() = NamedFeatures(1);
  absl::Status many = client.Predict(predict).status();
  EXPECT_TRUE(absl::IsResourceExhausted(many));
  EXPECT_THAT(many.message(),
              HasSubstr("the PredictRequest has 11 examples; send fewer per "
                        "request; the limit is 10, set by "
                        "--max_examples_per_request"));
  predict.clear_instances();
  *predict.add_instances() = NamedFeatures(101);
  absl::Status wide = client.Predict(predict).status();
  EXPECT_TRUE(absl::IsResourceExhausted(wide));
  EXPECT_THAT(wide.message(), HasSubstr("--max_named_features"));

  std::vector<LabeledExample> eleven(11, {{}, 1});
  for (LabeledExample& e : eleven) e.features = {0.5};
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream->Send(eleven).ok());
  EXPECT_FALSE(stream->Receive().ok());
  absl::Status refused = stream->Finish();
  EXPECT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_THAT(refused.message(), HasSubstr("--max_examples_per_request"));
  EXPECT_EQ(client.GetModel("m")->stats().examples_seen(), 0u);
}

TEST(BoundedWorkTest, StreamsPerClientAndInAll) {
  TestServer server([](ServerOptions& o) {
    o.streams.max_streams = 3;
    o.streams.max_streams_per_client = 2;
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  auto open = [&](Client& c) {
    std::unique_ptr<TrainingStream> stream = c.Train("m");
    absl::Status s = stream->Send({{{1.0}, 1}});
    if (s.ok()) s = stream->Receive().status();
    if (!s.ok()) s = stream->Finish();
    return std::make_pair(std::move(stream), s);
  };
  auto first = open(client);
  auto second = open(client);
  ASSERT_TRUE(first.second.ok() && second.second.ok());
  // Every client here is 127.0.0.1: a third stream is one too many for it.
  Client other = server.NewClient();
  auto third = open(other);
  EXPECT_TRUE(absl::IsResourceExhausted(third.second)) << third.second;
  EXPECT_THAT(third.second.message(),
              HasSubstr("client ipv4:127.0.0.1 has 2 streams open; the limit "
                        "is 2, set by --max_streams_per_client"));
  // Unary calls are not streams.
  EXPECT_TRUE(client.GetModel("m").ok());
  // A closed stream makes room, once the server is done with it.
  ASSERT_TRUE(first.first->Finish().ok());
  absl::Status fourth;
  for (int tries = 0; tries < 100; ++tries) {
    fourth = open(other).second;
    if (fourth.ok()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(fourth.ok()) << fourth;
}

TEST(BoundedWorkTest, WeightsTooLargeForAMessageAreReadInPages) {
  TestServer server([](ServerOptions& o) { o.max_message_bytes = 64 << 10; });
  Client client = server.NewClient();
  // 2^16 + 1 weights: 512 KiB, eight times the message limit.
  ASSERT_TRUE(client.CreateModel(HashedModel("m", "perceptron", 1, 16)).ok());
  std::vector<LabeledExample> examples;
  for (int i = 0; i < 50; ++i) {
    LabeledExample e;
    e.label = i % 2 == 0 ? 1 : -1;
    e.named = {{"g", absl::StrCat("w", i), 1.0 + i}};
    examples.push_back(e);
  }
  std::unique_ptr<TrainingStream> stream = client.Train("m");
  ASSERT_TRUE(stream->Send(examples).ok());
  ASSERT_TRUE(stream->Receive().ok());

  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();
  v1::GetWeightsRequest request;
  request.set_model("m");
  v1::GetWeightsResponse page;
  {
    grpc::ClientContext context;
    grpc::Status whole = stub->GetWeights(&context, request, &page);
    EXPECT_EQ(whole.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(whole.error_message(), HasSubstr("read them in pages"));
  }
  // Pages of 1000 coordinates, as asked, then the rest.
  request.set_page_size(1000);
  std::vector<double> paged;
  int pages = 0;
  do {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->GetWeights(&context, request, &page).ok());
    EXPECT_EQ(page.offset(), static_cast<int64_t>(paged.size()));
    EXPECT_EQ(page.width(), (1 << 16) + 1);
    paged.insert(paged.end(), page.weights().begin(), page.weights().end());
    request.set_offset(page.next_offset());
    ++pages;
  } while (page.next_offset() != 0);
  EXPECT_EQ(pages, 66);
  ASSERT_EQ(paged.size(), (1u << 16) + 1);

  // The client reads pages as large as fit, and checks they are of one
  // version.
  absl::StatusOr<v1::GetWeightsResponse> all = client.GetWeights("m");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(std::vector<double>(all->weights().begin(), all->weights().end()),
            paged);
  EXPECT_EQ(all->bias(), page.bias());
  double sum = 0;
  for (double w : paged) sum += std::abs(w);
  EXPECT_GT(sum, 0);

  // A page of another version (the model learned in between) tells.
  request.set_offset(0);
  grpc::ClientContext first_context;
  ASSERT_TRUE(stub->GetWeights(&first_context, request, &page).ok());
  const uint64_t before = page.version();
  ASSERT_TRUE(stream->Send(examples).ok());
  ASSERT_TRUE(stream->Receive().ok());
  request.set_offset(page.next_offset());
  grpc::ClientContext second_context;
  ASSERT_TRUE(stub->GetWeights(&second_context, request, &page).ok());
  EXPECT_NE(page.version(), before);

  // The model file too: pages of one version, put together by the client.
  absl::StatusOr<std::string> file = client.ExportModel("m");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_GT(file->size(), size_t{64} << 10);
  TestServer roomy;
  Client elsewhere = roomy.NewClient();
  absl::StatusOr<v1::Model> imported = elsewhere.ImportModel("copy", *file);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<v1::GetWeightsResponse> copied = elsewhere.GetWeights("copy");
  absl::StatusOr<v1::GetWeightsResponse> now = client.GetWeights("m");
  ASSERT_TRUE(copied.ok() && now.ok());
  EXPECT_EQ(
      std::vector<double>(copied->weights().begin(), copied->weights().end()),
      std::vector<double>(now->weights().begin(), now->weights().end()));

  request.set_offset(1 << 17);
  grpc::ClientContext bad_context;
  EXPECT_EQ(stub->GetWeights(&bad_context, request, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(BoundedWorkTest, AVersionChangesExactlyWhenTheStateDoes) {
  TestServer server;
  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();
  {
    v1::CreateModelRequest create;
    create.set_model("m");
    *create.mutable_algorithm() = TextAlgorithm("perceptron");
    create.set_dimension(1);
    grpc::ClientContext context;
    v1::CreateModelResponse created;
    ASSERT_TRUE(stub->CreateModel(&context, create, &created).ok());
  }
  auto version = [&] {
    v1::GetWeightsRequest request;
    request.set_model("m");
    v1::GetWeightsResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(stub->GetWeights(&context, request, &response).ok());
    return response.version();
  };
  grpc::ClientContext context;
  auto stream = stub->Train(&context);
  // Sends one request of examples x (labels +1) and returns how many were
  // learned.
  auto train = [&](std::vector<double> xs, uint64_t sequence) {
    v1::TrainRequest request;
    request.set_model("m");
    request.set_source("producer");
    request.set_sequence(sequence);
    for (double x : xs) AddExample(request, {x}, 1);
    EXPECT_TRUE(stream->Write(request));
    v1::TrainResponse response;
    EXPECT_TRUE(stream->Read(&response));
    int learned = 0;
    for (const v1::ExampleResult& r : response.results()) {
      learned += !r.has_error() && !r.duplicate();
    }
    return learned;
  };
  ASSERT_EQ(train({1.0}, 1), 1);
  const uint64_t first = version();
  EXPECT_EQ(version(), first);
  ASSERT_EQ(train({1.0}, 1), 0);  // a duplicate
  EXPECT_EQ(version(), first);
  // A source's position moves: state, though no weight changes.
  ASSERT_EQ(train({1e200}, 2), 0);  // ‖x‖² overflows: refused
  const uint64_t moved = version();
  EXPECT_NE(moved, first);
  ASSERT_EQ(train({1e200}, 2), 0);  // a duplicate of the refused one
  EXPECT_EQ(version(), moved);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // Without a source, a request whose every example is refused changes
  // nothing.
  grpc::ClientContext plain_context;
  auto plain = stub->Train(&plain_context);
  v1::TrainRequest refused;
  refused.set_model("m");
  AddExample(refused, {1e200}, 1);
  AddExample(refused, {1.0, 2.0}, 1);  // of the wrong dimension
  ASSERT_TRUE(plain->Write(refused));
  v1::TrainResponse response;
  ASSERT_TRUE(plain->Read(&response));
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_TRUE(response.results(0).has_error());
  EXPECT_TRUE(response.results(1).has_error());
  EXPECT_EQ(version(), moved);
  v1::TrainRequest learned;
  AddExample(learned, {-1.0}, 1);
  ASSERT_TRUE(plain->Write(learned));
  ASSERT_TRUE(plain->Read(&response));
  EXPECT_NE(version(), moved);
  plain->WritesDone();
  EXPECT_TRUE(plain->Finish().ok());
}

TEST(BoundedWorkTest, AModelFileIsEncodedOncePerVersion) {
  absl::StatusOr<std::unique_ptr<Model>> made =
      Model::Create("m", DenseSpec(PerceptronParams{}, 3));
  ASSERT_TRUE(made.ok()) << made.status();
  std::shared_ptr<Model> model = *std::move(made);
  ExportedFiles files;
  const ExportedFiles::File first = files.Get(model);
  EXPECT_EQ(files.Get(model).bytes, first.bytes);  // the same bytes
  EXPECT_EQ(files.encoded(), 1u);
  std::vector<ExampleOutcome> outcomes(1);
  // A refused example changes neither the version nor the bytes.
  const std::vector<double> huge = {1e200, 0, 0}, plain = {1, 2, 3};
  ASSERT_TRUE(model->Learn({Example{huge, 1}}, absl::MakeSpan(outcomes)).ok());
  ASSERT_FALSE(outcomes[0].error.ok());
  EXPECT_EQ(files.Get(model).version, first.version);
  EXPECT_EQ(files.encoded(), 1u);
  ASSERT_TRUE(
      model->Learn({Example{plain, -1}}, absl::MakeSpan(outcomes)).ok());
  const ExportedFiles::File second = files.Get(model);
  EXPECT_NE(second.version, first.version);
  EXPECT_NE(*second.bytes, *first.bytes);
  EXPECT_EQ(files.encoded(), 2u);
  // Files of more models than it keeps push out the least recently asked.
  std::vector<std::shared_ptr<Model>> others;
  for (size_t k = 0; k < ExportedFiles::kMaxFiles; ++k) {
    others.push_back(
        *Model::Create(absl::StrCat("o", k), DenseSpec(PerceptronParams{}, 3)));
    files.Get(others.back());
  }
  files.Get(model);  // pushes out others[0]
  EXPECT_EQ(files.encoded(), 2u + ExportedFiles::kMaxFiles + 1);
  // Asking again counts as recent: others[1] stays, others[2] goes.
  files.Get(others[1]);
  const std::shared_ptr<Model> fresh =
      *Model::Create("fresh", DenseSpec(PerceptronParams{}, 3));
  files.Get(fresh);
  EXPECT_EQ(files.encoded(), 2u + ExportedFiles::kMaxFiles + 2);
  files.Get(others[1]);
  EXPECT_EQ(files.encoded(), 2u + ExportedFiles::kMaxFiles + 2);
  files.Get(others[2]);
  EXPECT_EQ(files.encoded(), 2u + ExportedFiles::kMaxFiles + 3);
}

TEST(BoundedWorkTest, APredictionWhoseCallerGaveUpStopsBetweenInstances) {
  TestServer server([](ServerOptions& o) {
    o.limits.max_interaction_products = int64_t{1} << 40;
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(SelfCrossedModel("m")).ok());
  // 1000 features crossed with themselves: ~500k products an instance, some
  // 50 ms of work; 100 instances take seconds.
  v1::PredictRequest predict;
  predict.set_model("m");
  const v1::FeatureVector wide = NamedFeatures(1000);
  for (int i = 0; i < 100; ++i) *predict.add_instances() = wide;
  std::unique_ptr<v1::HalfspaceService::Stub> stub = server.NewStub();

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(200));
  v1::PredictResponse response;
  const absl::Duration cpu_before = CpuTime();
  grpc::Status status = stub->Predict(&context, predict, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server stops at the next instance: give it time to, then see
  // that it is idle.
  absl::SleepFor(absl::Milliseconds(500));
  const absl::Duration cpu_after = CpuTime();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_LT(CpuTime() - cpu_after, absl::Milliseconds(200));
  EXPECT_LT(cpu_after - cpu_before, absl::Seconds(2));
}

}  // namespace
}  // namespace halfspace
