// The API's HTTP rules as routes, and requests transcoded by them: path
// templates, matching with percent-encoding and verbs, 404 and 405, the
// body, path and query bound into the request message, and the errors.

#include "server/http_routes.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/http_transcoder.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

const HttpRoutes& Api() {
  static const HttpRoutes* routes = [] {
    auto r = HttpRoutes::FromService(
        *google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            v1::HalfspaceService::service_full_name()));
    EXPECT_TRUE(r.ok()) << r.status();
    return new HttpRoutes(*std::move(r));
  }();
  return *routes;
}

TEST(HttpTemplateTest, ParsesSegmentsVariablesAndVerb) {
  absl::StatusOr<HttpRoute> route =
      ParseHttpTemplate("/v1/{name=projects/*/models/**}:predict");
  ASSERT_TRUE(route.ok()) << route.status();
  EXPECT_EQ(route->verb, "predict");
  ASSERT_EQ(route->segments.size(), 5u);
  EXPECT_EQ(route->segments[0].literal, "v1");
  EXPECT_EQ(route->segments[2].kind, HttpRoute::Segment::kOne);
  EXPECT_EQ(route->segments[4].kind, HttpRoute::Segment::kRest);
  ASSERT_EQ(route->variables.size(), 1u);
  EXPECT_EQ(route->variables[0].field_path, "name");
  EXPECT_EQ(route->variables[0].begin, 1u);
  EXPECT_EQ(route->variables[0].end, 5u);
}

TEST(HttpTemplateTest, RefusesWhatTheGrammarDoesNot) {
  for (const char* bad :
       {"v1/models", "/v1/{model", "/v1/{a={b}}", "/v1/**/x",
        "/v1/models:", "/v1//x", "/v1/{=*}", "/v1/x{model}"}) {
    EXPECT_EQ(ParseHttpTemplate(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(HttpRoutesTest, EveryMethodOfTheApiHasARoute) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::HalfspaceService::service_full_name());
  for (int i = 0; i < service->method_count(); ++i) {
    bool found = false;
    for (const HttpRoute& route : Api().routes()) {
      found |= route.method == service->method(i);
    }
    EXPECT_TRUE(found) << service->method(i)->name();
  }
}

TEST(HttpRoutesTest, MatchesByMethodPathAndVerb) {
  absl::StatusOr<HttpMatch> m = Api().Match("POST", "/v1/models/spam:predict");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->route->method->name(), "Predict");
  EXPECT_THAT(m->bindings, ElementsAre(Pair("model", "spam")));

  m = Api().Match("GET", "/v1/models/spam");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->route->method->name(), "GetModel");
  m = Api().Match("DELETE", "/v1/models/spam");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->route->method->name(), "DeleteModel");
  m = Api().Match("POST", "/v1/models:train");  // fan-out
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->route->method->name(), "Train");
  EXPECT_TRUE(m->bindings.empty());
  m = Api().Match("GET", "/v1/models/spam:export");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->route->method->name(), "ExportModel");
}

TEST(HttpRoutesTest, DecodesEachSegmentAfterSplittingIt) {
  absl::StatusOr<HttpMatch> m =
      Api().Match("GET", "/v1/models/spam/sources/kafka%2Fp%3A3");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->route->method->name(), "GetSourceSequence");
  EXPECT_THAT(m->bindings,
              ElementsAre(Pair("model", "spam"), Pair("source", "kafka/p:3")));
  EXPECT_EQ(Api().Match("GET", "/v1/models/sp%zzam").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpRoutesTest, NotFoundAndMethodNotAllowed) {
  EXPECT_EQ(Api().Match("GET", "/v2/models").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Api().Match("GET", "/v1/models/").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Api().Match("POST", "/v1/models/spam:fly").status().code(),
            absl::StatusCode::kNotFound);
  absl::Status s = Api().Match("PATCH", "/v1/models/spam").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("GET, DELETE"));
  EXPECT_THAT(Api().MethodsFor("/v1/models"), ElementsAre("POST", "GET"));
}

TEST(HttpTranscoderTest, BodyThenPathThenQuery) {
  absl::StatusOr<HttpMatch> m = Api().Match("POST", "/v1/models/spam:predict");
  ASSERT_TRUE(m.ok());
  v1::PredictRequest request;
  ASSERT_TRUE(DecodeHttpRequest(*m, "",
                                R"({"instances":[{"dense":[1,2.5]}],"topK":3})",
                                &request)
                  .ok());
  EXPECT_EQ(request.model(), "spam");
  EXPECT_EQ(request.instances(0).dense(1), 2.5);
  EXPECT_EQ(request.top_k(), 3u);

  m = Api().Match("GET", "/v1/models");
  ASSERT_TRUE(m.ok());
  v1::ListModelsRequest list;
  ASSERT_TRUE(DecodeHttpRequest(*m,
                                "pageSize=7&view=MODEL_VIEW_NAME&"
                                "page_token=a%20b+c",
                                "", &list)
                  .ok());
  EXPECT_EQ(list.page_size(), 7);
  EXPECT_EQ(list.view(), v1::MODEL_VIEW_NAME);
  EXPECT_EQ(list.page_token(), "a b c");
  v1::ListModelsRequest utf8;
  ASSERT_TRUE(
      DecodeHttpRequest(*m, "page_token=%C3%A9%E2%82%AC%F0%9F%98%80", "", &utf8)
          .ok());
  EXPECT_EQ(utf8.page_token(), "\u00e9\u20ac\U0001F600");
}

TEST(HttpTranscoderTest, ErrorsNameWhatIsWrong) {
  absl::StatusOr<HttpMatch> predict =
      Api().Match("POST", "/v1/models/spam:predict");
  absl::StatusOr<HttpMatch> list = Api().Match("GET", "/v1/models");
  absl::StatusOr<HttpMatch> get = Api().Match("GET", "/v1/models/spam");
  ASSERT_TRUE(predict.ok() && list.ok() && get.ok());
  struct Case {
    const HttpMatch* match;
    const char* query;
    const char* body;
    const char* says;
  } cases[] = {
      {&*predict, "", "{", "not a PredictRequest in JSON"},
      {&*predict, "", R"({"topK":"x"})", "PredictRequest"},
      {&*predict, "", R"({"model":"ham"})", "the path says \"spam\""},
      {&*predict, "topK=1", "{}", "query string must be empty"},
      {&*list, "pageSize=x", "", "pageSize: \"x\" is not a 32-bit integer"},
      {&*list, "view=SIDEWAYS", "", "a value of halfspace.v1.ModelView"},
      {&*list, "colour=red", "", "colour: no such field"},
      {&*list, "page_size=%g1", "", "percent-encoding"},
      {&*get, "", R"({"model":"spam"})", "takes no body"},
      {&*get, "model=ham", "", "is set by the path"},
      {&*list, "page_token=%FF", "", "is not UTF-8"},
      {&*list, "page_token=%ED%A0%80", "", "is not UTF-8"},  // a surrogate
      {&*list, "page_token=%C0%AF", "", "is not UTF-8"},     // overlong
  };
  for (const Case& c : cases) {
    std::unique_ptr<google::protobuf::Message> request(
        google::protobuf::MessageFactory::generated_factory()
            ->GetPrototype(c.match->route->method->input_type())
            ->New());
    absl::Status s =
        DecodeHttpRequest(*c.match, c.query, c.body, request.get());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(s.message(), HasSubstr(c.says)) << c.query << " " << c.body;
  }
}

TEST(HttpTranscoderTest, StreamBodiesAreALineARequest) {
  absl::StatusOr<HttpMatch> m = Api().Match("POST", "/v1/models/spam:train");
  ASSERT_TRUE(m.ok());
  const std::string body =
      "{\"examples\":[{\"features\":{\"dense\":[1]},\"label\":1}]}\n"
      "\r\n"
      "{\"source\":\"s\",\"sequence\":\"2\"}\n";
  auto requests =
      DecodeHttpStream(*m, "", body, v1::TrainRequest::default_instance(), 10);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 2u);
  const auto& second = static_cast<const v1::TrainRequest&>(*(*requests)[1]);
  EXPECT_EQ(second.model(), "spam");
  EXPECT_EQ(second.sequence(), 2u);

  auto bad = DecodeHttpStream(*m, "", body + "[]\n",
                              v1::TrainRequest::default_instance(), 10);
  EXPECT_THAT(bad.status().message(), HasSubstr("line 4"));
  auto many =
      DecodeHttpStream(*m, "", body, v1::TrainRequest::default_instance(), 1);
  EXPECT_THAT(many.status().message(), HasSubstr("more than 1 requests"));
  auto empty =
      DecodeHttpStream(*m, "", "", v1::TrainRequest::default_instance(), 1);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(static_cast<const v1::TrainRequest&>(*(*empty)[0]).model(), "spam");
}

TEST(HttpTranscoderTest, AnswersInProtobufsJsonAndGrpcsHttpCodes) {
  v1::Prediction prediction;
  prediction.set_label(1);
  prediction.set_probability(0);  // set: written, though 0
  EXPECT_EQ(MessageToJson(prediction), R"({"label":1,"probability":0})");
  v1::TrainSummary summary;
  summary.set_examples(1ull << 60);
  EXPECT_EQ(MessageToJson(summary), R"({"examples":"1152921504606846976"})");
  EXPECT_EQ(StatusToJson(absl::StatusCode::kNotFound, "no model \"x\""),
            R"({"code":5,"message":"no model \"x\""})");
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kDataLoss), 500);
}

}  // namespace
}  // namespace halfspace
