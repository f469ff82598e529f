// The halfspace.v1 contract as a client meets it: every algorithm parameter
// range-checked, parameters that do not apply unsendable, errors that never
// echo unbounded input, undecodable stream messages refused, and ListModels
// paging through any number of models of any size.

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "grpcpp/impl/codegen/rpc_method.h"
#include "grpcpp/impl/codegen/sync_stream.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Which values a real-valued parameter takes.
enum class Range {
  kPositive,                         // (0, 1e6]
  kNonNegative,                      // [0, 1e6]
  kUnit,                             // [0, 1]
  kAboveZeroWithTheDefaultSchedule,  // sgd.alpha: OPTIMAL divides by it
  kL2,  // [0, 1e6] with η·λ < 1: below 1 at the default η = 1
};

// Every real-valued parameter of every algorithm. A parameter added to the
// proto without a row here fails ParameterTable below.
const std::map<std::string, Range>& Ranges() {
  static const auto* ranges = new std::map<std::string, Range>{
      {"perceptron.learning_rate", Range::kPositive},
      {"perceptron.margin_threshold", Range::kNonNegative},
      {"averaged_perceptron.learning_rate", Range::kPositive},
      {"averaged_perceptron.margin_threshold", Range::kNonNegative},
      {"pocket_perceptron.learning_rate", Range::kPositive},
      {"passive_aggressive.aggressiveness", Range::kPositive},
      {"passive_aggressive.intercept_decay", Range::kUnit},
      {"logistic_regression.learning_rate", Range::kPositive},
      {"logistic_regression.l2", Range::kL2},
      {"sgd.learning_rate", Range::kPositive},
      {"sgd.alpha", Range::kAboveZeroWithTheDefaultSchedule},
      {"sgd.l1_ratio", Range::kUnit},
      {"sgd.power_t", Range::kNonNegative},
      {"sgd.intercept_decay", Range::kUnit},
      {"multiclass_perceptron.learning_rate", Range::kPositive},
      {"softmax_regression.learning_rate", Range::kPositive},
      {"softmax_regression.l2", Range::kL2},
      {"confidence_weighted.phi", Range::kPositive},
      {"confidence_weighted.r", Range::kPositive},
      {"confidence_weighted.aggressiveness", Range::kPositive},
      {"ftrl_proximal.alpha", Range::kPositive},
      {"ftrl_proximal.beta", Range::kNonNegative},
      {"ftrl_proximal.l1", Range::kNonNegative},
      {"ftrl_proximal.l2", Range::kNonNegative},
  };
  return *ranges;
}

struct Case {
  const char* name;
  double value;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const Case kCases[] = {
    {"valid", 0.5},  {"zero", 0.0},    {"negative", -0.5},
    {"NaN", NAN},    {"+inf", kInf},   {"-inf", -kInf},
    {"huge", 1e300}, {"largest", 1e6}, {"past the largest", 1.000001e6},
};

bool Valid(Range range, const Case& c) {
  const double v = c.value;
  switch (range) {
    case Range::kPositive:
      return v > 0 && v <= 1e6;
    case Range::kNonNegative:
      return v >= 0 && v <= 1e6;
    case Range::kUnit:
      return v >= 0 && v <= 1;
    case Range::kAboveZeroWithTheDefaultSchedule:
      return v > 0 && v <= 1e6;
    case Range::kL2:
      return v >= 0 && v < 1;
  }
  return false;
}

class ApiTest : public ::testing::Test {
 protected:
  TestServer server_;
  Client client_ = server_.NewClient();
};

// For every algorithm × every real parameter × {valid, zero, negative, NaN,
// ±inf, huge, the largest and just past it}: CreateModel accepts exactly the
// documented range, and names the field when it refuses.
TEST_F(ApiTest, EveryParameterIsRangeCheckedAndNamedWhenRefused) {
  const Descriptor* algorithm = v1::Algorithm::descriptor();
  int checked = 0;
  for (int i = 0; i < algorithm->field_count(); ++i) {
    const FieldDescriptor* choice = algorithm->field(i);
    const Descriptor* params = choice->message_type();
    for (int j = 0; j < params->field_count(); ++j) {
      const FieldDescriptor* field = params->field(j);
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE) continue;
      const std::string path = absl::StrCat(choice->name(), ".", field->name());
      auto range = Ranges().find(path);
      ASSERT_NE(range, Ranges().end()) << path << " has no range in this test";
      for (const Case& c : kCases) {
        SCOPED_TRACE(absl::StrCat(path, " = ", c.name));
        v1::CreateModelRequest request;
        request.set_model(absl::StrCat("m", ++checked));
        request.set_dimension(2);
        Message* m =
            request.mutable_algorithm()->GetReflection()->MutableMessage(
                request.mutable_algorithm(), choice);
        m->GetReflection()->SetDouble(m, field, c.value);
        absl::StatusOr<v1::Model> model = client_.CreateModel(request);
        if (Valid(range->second, c)) {
          ASSERT_TRUE(model.ok()) << model.status();
          // The model reports the value in effect.
          const v1::Algorithm& got = model->algorithm();
          const Message& p = got.GetReflection()->GetMessage(got, choice);
          EXPECT_EQ(p.GetReflection()->GetDouble(p, field), c.value);
        } else {
          EXPECT_TRUE(absl::IsInvalidArgument(model.status()))
              << model.status();
          EXPECT_THAT(model.status().message(), HasSubstr(path));
        }
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(Ranges().size() * std::size(kCases)));
}

TEST_F(ApiTest, EveryParameterRoundTripsThroughGetModel) {
  v1::CreateModelRequest request;
  request.set_dimension(2);
  const std::vector<std::string> algorithms = {
      "perceptron { learning_rate: 0.5 margin_threshold: 0.25 }",
      "averaged_perceptron { learning_rate: 0.5 margin_threshold: 0.25 }",
      "pocket_perceptron { learning_rate: 0.5 ratchet: false "
      "predict_with_pocket: false }",
      "passive_aggressive { variant: VARIANT_PA_II aggressiveness: 0.25 "
      "intercept_decay: 0.01 average_from: 3 }",
      "logistic_regression { learning_rate: 0.5 l2: 0.25 }",
      "sgd { learning_rate: 0.5 loss: LOSS_LOG penalty: PENALTY_ELASTIC_NET "
      "alpha: 0.25 l1_ratio: 0.75 schedule: SCHEDULE_INVERSE_SCALING "
      "power_t: 0.125 average_from: 7 intercept_decay: 0.5 }",
      "multiclass_perceptron { learning_rate: 0.5 }",
      "softmax_regression { learning_rate: 0.5 l2: 0.25 }",
      "confidence_weighted { variant: VARIANT_SCW_II phi: 1.5 r: 0.5 "
      "aggressiveness: 0.25 }",
      "voted_perceptron { max_vectors: 7 }",
      "ftrl_proximal { alpha: 0.5 beta: 0.25 l1: 0.125 l2: 2 "
      "regularize_bias: true }"};
  ASSERT_EQ(static_cast<int>(algorithms.size()),
            v1::Algorithm::descriptor()->field_count());
  for (size_t i = 0; i < algorithms.size(); ++i) {
    const std::string& text = algorithms[i];
    SCOPED_TRACE(text);
    request.set_model(absl::StrCat("m", i));
    *request.mutable_algorithm() = TextAlgorithm(text);
    absl::StatusOr<v1::Model> created = client_.CreateModel(request);
    ASSERT_TRUE(created.ok()) << created.status();
    absl::StatusOr<v1::Model> got = client_.GetModel(request.model());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->algorithm().SerializeAsString(),
              request.algorithm().SerializeAsString());
  }
}

TEST_F(ApiTest, AParameterOfAnotherAlgorithmCannotBeSent) {
  // Passive-aggressive steps by its own rule: it has no learning rate to
  // accept and ignore, in the schema or in text.
  EXPECT_EQ(
      v1::PassiveAggressive::descriptor()->FindFieldByName("learning_rate"),
      nullptr);
  EXPECT_FALSE(ParseAlgorithm("passive_aggressive { learning_rate: 1 }").ok());
  EXPECT_FALSE(ParseAlgorithm("perceptron { l2: 1 }").ok());
  EXPECT_EQ(v1::Perceptron::descriptor()->FindFieldByName("l2"), nullptr);
}

TEST_F(ApiTest, AHugeLearningRateIsRefused) {
  absl::Status s =
      client_
          .CreateModel("m",
                       TextAlgorithm("perceptron { learning_rate: 1e300 }"), 2)
          .status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(),
              HasSubstr("perceptron.learning_rate is 1e+300; it must be in "
                        "(0, 1e+06]"));
}

TEST_F(ApiTest, AnUnknownEnumValueIsRefusedByName) {
  v1::Algorithm algorithm;
  algorithm.mutable_passive_aggressive()->set_variant(
      static_cast<v1::PassiveAggressive::Variant>(42));
  EXPECT_THAT(client_.CreateModel("m", algorithm, 2).status().message(),
              HasSubstr("passive_aggressive.variant has the unknown value 42"));
  EXPECT_THAT(client_.CreateModel("m", v1::Algorithm(), 2).status().message(),
              HasSubstr("algorithm must be set"));
}

// A 1 MB model name in a request: the error names the problem and quotes
// only the name's first bytes, so the status fits in any client's metadata.
TEST_F(ApiTest, ErrorsNeverEchoAHugeName) {
  const std::string huge(1 << 20, 'x');
  for (absl::Status s :
       {client_.GetModel(huge).status(), client_.DeleteModel(huge),
        client_.CreateModel(huge, TextAlgorithm("perceptron"), 2).status(),
        client_.Predict(huge, {{1, 2}}).status(),
        client_.GetWeights(huge).status()}) {
    EXPECT_FALSE(s.ok());
    EXPECT_FALSE(absl::IsUnknown(s)) << "the client could not read the error";
    EXPECT_LT(s.message().size(), 300u) << s.message().substr(0, 300);
  }
  EXPECT_THAT(client_.GetModel(huge).status().message(),
              HasSubstr("…' (1048576 bytes) does not exist"));

  // A training stream bound to "m" whose next request names a huge model.
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  auto stub = server_.NewStub();
  grpc::ClientContext context;
  auto stream = stub->Train(&context);
  v1::TrainRequest request;
  request.set_model("m");
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  request.set_model(huge);
  stream->Write(request);
  stream->WritesDone();
  while (stream->Read(&response)) {
  }
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(status.error_message().size(), 300u);
  EXPECT_THAT(status.error_message(), HasSubstr("Open one stream per model"));
}

TEST(QuotedTest, CutsAtACharacterBoundaryAndSaysHowLong) {
  EXPECT_EQ(Quoted("abc"), "'abc'");
  const std::string exactly(kMaxQuotedBytes, 'a');
  EXPECT_EQ(Quoted(exactly), "'" + exactly + "'");
  // 63 ASCII bytes and then "é" (2 bytes): the cut falls inside "é", so it
  // moves back before it.
  const std::string accented = std::string(63, 'a') + "\xC3\xA9" + "zz";
  EXPECT_EQ(Quoted(accented), "'" + std::string(63, 'a') + "…' (67 bytes)");
}

// Sends raw bytes on a stream, as a client with another schema or a broken
// encoder would.
class RawStream {
 public:
  RawStream(const TestServer& server, const char* method,
            grpc::internal::RpcMethod::RpcType type)
      : channel_(server.NewChannel()),
        stream_(grpc::internal::ClientReaderWriterFactory<
                grpc::ByteBuffer,
                grpc::ByteBuffer>::Create(channel_.get(),
                                          grpc::internal::RpcMethod(
                                              method, type, channel_),
                                          &context_)) {}

  bool Write(const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    return stream_->Write(buffer);
  }
  bool Read() {
    grpc::ByteBuffer buffer;
    return stream_->Read(&buffer);
  }
  grpc::Status Finish() {
    stream_->WritesDone();
    while (Read()) {
    }
    return stream_->Finish();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream_;
};

// Field 2 (examples), length-delimited, claiming 127 bytes that never come.
const std::string kUndecodable("\x12\x7f\x01", 3);

TEST_F(ApiTest, AnUndecodableTrainMessageEndsTheStreamWithInvalidArgument) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  v1::TrainRequest good;
  good.set_model("m");
  v1::Example* e = good.add_examples();
  e->mutable_features()->mutable_dense()->Add(1);
  e->mutable_features()->mutable_dense()->Add(2);
  e->set_label(1);

  RawStream stream(server_, "/halfspace.v1.HalfspaceService/Train",
                   grpc::internal::RpcMethod::BIDI_STREAMING);
  ASSERT_TRUE(stream.Write(good.SerializeAsString()));
  ASSERT_TRUE(stream.Read());
  stream.Write(kUndecodable);
  good.clear_model();
  stream.Write(good.SerializeAsString());
  grpc::Status status = stream.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(
      status.error_message(),
      HasSubstr("a message could not be decoded as halfspace.v1.TrainRequest"));
  // Only the first message was learned from.
  EXPECT_EQ(client_.GetModel("m")->stats().examples_seen(), 1u);
}

TEST_F(ApiTest, AnUndecodablePredictStreamMessageEndsTheStream) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  v1::PredictStreamRequest good;
  good.set_model("m");
  good.add_instances()->add_dense(1.0);
  good.mutable_instances(0)->add_dense(2.0);
  RawStream stream(server_, "/halfspace.v1.HalfspaceService/PredictStream",
                   grpc::internal::RpcMethod::BIDI_STREAMING);
  ASSERT_TRUE(stream.Write(good.SerializeAsString()));
  ASSERT_TRUE(stream.Read());
  stream.Write(kUndecodable);
  stream.Write(good.SerializeAsString());
  grpc::Status status = stream.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(
      status.error_message(),
      HasSubstr("could not be decoded as halfspace.v1.PredictStreamRequest"));
}

TEST_F(ApiTest, AnUndecodableEvaluateMessageEndsTheStreamWithInvalidArgument) {
  ASSERT_TRUE(client_.CreateModel("m", TextAlgorithm("perceptron"), 2).ok());
  v1::EvaluateRequest good;
  good.set_model("m");
  grpc::ClientContext context;
  std::shared_ptr<grpc::Channel> channel = server_.NewChannel();
  grpc::ByteBuffer response;
  auto writer = std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>>(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
          channel.get(),
          grpc::internal::RpcMethod("/halfspace.v1.HalfspaceService/Evaluate",
                                    grpc::internal::RpcMethod::CLIENT_STREAMING,
                                    channel),
          &context, &response));
  for (const std::string& bytes :
       {good.SerializeAsString(), kUndecodable, good.SerializeAsString()}) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    if (!writer->Write(buffer)) break;
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(
      status.error_message(),
      HasSubstr(
          "a message could not be decoded as halfspace.v1.EvaluateRequest"));
}

TEST_F(ApiTest, AnUndecodableUnaryRequestIsInvalidArgument) {
  std::shared_ptr<grpc::Channel> channel = server_.NewChannel();
  for (const char* rpc :
       {"CreateModel", "GetModel", "ListModels", "DeleteModel", "Predict",
        "GetWeights", "SetWeights"}) {
    SCOPED_TRACE(rpc);
    grpc::ClientContext context;
    grpc::Slice slice(kUndecodable);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status =
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            channel.get(),
            grpc::internal::RpcMethod(
                absl::StrCat("/halfspace.v1.HalfspaceService/", rpc).c_str(),
                grpc::internal::RpcMethod::NORMAL_RPC),
            &context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat("could not be decoded as halfspace.v1.",
                                       rpc, "Request")));
  }
}

absl::StatusOr<v1::ListModelsResponse> ListPage(
    v1::HalfspaceService::Stub& stub, const v1::ListModelsRequest& request) {
  grpc::ClientContext context;
  v1::ListModelsResponse response;
  grpc::Status status = stub.ListModels(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

TEST_F(ApiTest, ListModelsPagesInNameOrder) {
  for (int i = 0; i < 130; ++i) {
    ASSERT_TRUE(client_
                    .CreateModel(absl::StrCat("m", 1000 + i),
                                 TextAlgorithm("perceptron"), 1)
                    .ok());
  }
  auto stub = server_.NewStub();
  v1::ListModelsRequest request;
  absl::StatusOr<v1::ListModelsResponse> page = ListPage(*stub, request);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_THAT(page->models(), SizeIs(100));  // the default page size
  EXPECT_EQ(page->models(0).name(), "m1000");
  EXPECT_EQ(page->models(99).name(), "m1099");
  EXPECT_TRUE(page->models(0).has_algorithm());
  request.set_page_token(page->next_page_token());
  page = ListPage(*stub, request);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_THAT(page->models(), SizeIs(30));
  EXPECT_EQ(page->models(0).name(), "m1100");
  EXPECT_TRUE(page->next_page_token().empty());

  request.Clear();
  request.set_page_size(7);
  request.set_view(v1::MODEL_VIEW_NAME);
  page = ListPage(*stub, request);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_THAT(page->models(), SizeIs(7));
  EXPECT_EQ(page->models(6).SerializeAsString(), [] {
    v1::Model name_only;
    name_only.set_name("m1006");
    return name_only.SerializeAsString();
  }());
  EXPECT_THAT(*client_.ListModels(v1::MODEL_VIEW_NAME), SizeIs(130));

  for (int bad : {-1, 1001}) {
    request.set_page_size(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(ListPage(*stub, request).status()));
  }
  request.set_page_size(0);
  request.set_page_token("no such token!");
  EXPECT_TRUE(absl::IsInvalidArgument(ListPage(*stub, request).status()));
}

// Twelve models of 4096 classes with 100-byte names: 5 MB of models, more
// than one gRPC message may hold. Pages stay under the limit, and the
// client's ListModels gets every model.
TEST_F(ApiTest, ListModelsNeverExceedsTheMessageLimit) {
  v1::CreateModelRequest request;
  request.set_dimension(1);
  *request.mutable_algorithm() = TextAlgorithm("multiclass_perceptron");
  for (int k = 0; k < 4096; ++k) {
    request.add_classes(absl::StrCat(k, std::string(96, 'c')).substr(0, 100));
  }
  for (int i = 0; i < 12; ++i) {
    request.set_model(absl::StrCat("big", 10 + i));
    ASSERT_TRUE(client_.CreateModel(request).ok());
  }
  auto stub = server_.NewStub();
  absl::StatusOr<v1::ListModelsResponse> page =
      ListPage(*stub, v1::ListModelsRequest());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_LT(page->ByteSizeLong(), 4u << 20);
  EXPECT_GT(page->models_size(), 0);
  EXPECT_LT(page->models_size(), 12);
  EXPECT_FALSE(page->next_page_token().empty());
  absl::StatusOr<std::vector<v1::Model>> all = client_.ListModels();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_THAT(*all, SizeIs(12));
  EXPECT_EQ(all->back().name(), "big21");
  EXPECT_THAT(all->back().classes(), SizeIs(4096));
}

}  // namespace
}  // namespace halfspace
