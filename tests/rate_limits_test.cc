// Per-caller rate limits: calls and training examples a second per token
// (from the tokens file) and per client address (flags), failed
// authentications per address, hashed tokens; a refusal is
// RESOURCE_EXHAUSTED with grpc-retry-pushback-ms, which the C++ client
// honours.

#include "server/rate_limits.h"

#include <openssl/sha.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/auth.h"
#include "tests/http_get.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kDashboard[] = "dashboard-0123456789abcdef";
constexpr char kPipeline[] = "pipeline-fedcba9876543210";
constexpr char kAdmin[] = "admin-00112233445566778899";

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

TEST(TokenBucketTest, TakesABurstThenRefillsAtItsRate) {
  const absl::Time t0 = absl::UnixEpoch();
  TokenBucket bucket({/*per_second=*/2, /*burst=*/3}, t0);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bucket.Take(1, t0), absl::ZeroDuration());
  EXPECT_EQ(bucket.Take(1, t0), absl::Milliseconds(500));  // one at 2/s
  EXPECT_EQ(bucket.Take(1, t0 + absl::Milliseconds(500)), absl::ZeroDuration());
  // Never past the burst, however long it waited.
  const absl::Time later = t0 + absl::Hours(1);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bucket.Take(1, later), absl::ZeroDuration());
  EXPECT_GT(bucket.Take(1, later), absl::ZeroDuration());
  // More than the burst passes once full, and leaves a debt.
  const absl::Time full = later + absl::Seconds(2);
  EXPECT_EQ(bucket.Take(10, full), absl::ZeroDuration());
  EXPECT_EQ(bucket.Take(1, full), absl::Seconds(4));  // 7 owed, then 1
  // No limit: always.
  TokenBucket open({0, 0}, t0);
  EXPECT_EQ(open.Take(1e9, t0), absl::ZeroDuration());
}

// A refusal's retry-after is rounded up, never down: a caller that waits
// exactly that long finds the tokens there.
TEST(RateLimiterTest, ARefusalAsksAtLeastTheWholeWait) {
  RateLimiter limiter(RateLimiter::Options{});
  const CallerLimits limits{{/*per_second=*/4, /*burst=*/1}, {}};
  const absl::Time before = absl::Now();
  ASSERT_TRUE(limiter.Admit("a", limits, 1, 0, "a").ok());
  const absl::Status refused = limiter.Admit("a", limits, 1, 0, "a");
  const absl::Duration elapsed = absl::Now() - before;
  ASSERT_TRUE(absl::IsResourceExhausted(refused));
  // The bucket is full again 250 ms after the first call took its token.
  EXPECT_GE(RetryAfter(refused), absl::Milliseconds(250) - elapsed);
  EXPECT_LE(RetryAfter(refused), absl::Milliseconds(250));
}

// Refused for both calls and examples: the wait is the longer of the two.
TEST(RateLimiterTest, ARefusalWaitsForEveryBucketItNeeds) {
  RateLimiter limiter(RateLimiter::Options{});
  const CallerLimits limits{{/*per_second=*/1, /*burst=*/1},
                            {/*per_second=*/1, /*burst=*/10}};
  ASSERT_TRUE(limiter.Admit("a", limits, 1, 10, "a").ok());
  const absl::Status refused = limiter.Admit("a", limits, 1, 10, "a");
  ASSERT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_GT(RetryAfter(refused), absl::Seconds(9));
}

// Failures count even past the limit, into debt: a client that keeps
// failing waits longer, not just one token's time.
TEST(RateLimiterTest, FailedAuthenticationsRunIntoDebt) {
  RateLimiter::Options options;
  options.auth_failures = {/*per_second=*/1, /*burst=*/2};
  RateLimiter limiter(options);
  EXPECT_TRUE(limiter.CheckAuthentication("10.0.0.1").ok());
  for (int i = 0; i < 6; ++i) limiter.CountAuthenticationFailure("10.0.0.1");
  const absl::Status refused = limiter.CheckAuthentication("10.0.0.1");
  ASSERT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_GT(RetryAfter(refused), absl::Seconds(4));  // 4 owed, then 1
  EXPECT_TRUE(limiter.CheckAuthentication("10.0.0.2").ok());
}

// Past max_callers, the caller asked of least recently is forgotten.
TEST(RateLimiterTest, ForgetsTheLeastRecentlySeenCaller) {
  RateLimiter::Options options;
  options.max_callers = 2;
  RateLimiter limiter(options);
  const CallerLimits limits{{/*per_second=*/0.001, /*burst=*/1}, {}};
  ASSERT_TRUE(limiter.Admit("a", limits, 1, 0, "a").ok());
  ASSERT_TRUE(limiter.Admit("b", limits, 1, 0, "b").ok());
  EXPECT_FALSE(limiter.Admit("a", limits, 1, 0, "a").ok());  // seen: a
  ASSERT_TRUE(limiter.Admit("c", limits, 1, 0, "c").ok());   // forgets b
  EXPECT_FALSE(limiter.Admit("a", limits, 1, 0, "a").ok());  // remembered
  EXPECT_TRUE(limiter.Admit("b", limits, 1, 0, "b").ok());   // a new bucket
}

TEST(TokenPolicyTest, ReadsNamesLimitsAndHashedTokens) {
  absl::StatusOr<std::shared_ptr<const TokenPolicy>> policy =
      TokenPolicy::Parse(absl::StrCat(
          kDashboard,
          " predict:* name=dash calls_per_second=2.5 calls_burst=4\n",
          "sha256:", Sha256Hex(kPipeline),
          " train:* examples_per_second=100\n"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const TokenEntry* dash = (*policy)->Find(kDashboard);
  ASSERT_NE(dash, nullptr);
  EXPECT_EQ(dash->name, "dash");
  EXPECT_EQ(dash->limits.calls.per_second, 2.5);
  EXPECT_EQ(dash->limits.calls.burst, 4);
  EXPECT_FALSE(dash->limits.examples.limited());
  const TokenEntry* pipeline = (*policy)->Find(kPipeline);
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->name, "line2");
  EXPECT_EQ(pipeline->limits.examples.per_second, 100);
  EXPECT_EQ((*policy)->Find(absl::StrCat("sha256:", Sha256Hex(kPipeline))),
            nullptr);  // the digest is not the token
  EXPECT_EQ((*policy)->Find("pipeline-fedcba9876543211"), nullptr);

  for (const std::string& bad :
       {absl::StrCat("sha256:abc predict:*"),
        absl::StrCat("sha256:", std::string(64, 'g'), " predict:*"),
        absl::StrCat(kDashboard, " predict:* speed=3"),
        absl::StrCat(kDashboard, " predict:* calls_per_second=-1"),
        absl::StrCat(kDashboard, " name=x"),
        absl::StrCat(kDashboard, " predict:*\nsha256:", Sha256Hex(kDashboard),
                     " predict:*\n", kDashboard, " predict:*")}) {
    EXPECT_TRUE(absl::IsInvalidArgument(TokenPolicy::Parse(bad).status()))
        << bad;
  }
}

class RateLimitsTest : public ::testing::Test {
 protected:
  static std::string WriteTokens(const TempDir& dir) {
    const std::string path = dir.File("tokens");
    std::ofstream(path) << kAdmin << " admin:*\n"
                        << kDashboard
                        << " predict:* name=dash calls_per_second=0.5 "
                           "calls_burst=3\n"
                        << "sha256:" << Sha256Hex(kPipeline)
                        << " train:* name=pipeline examples_per_second=1 "
                           "examples_burst=100\n";
    return path;
  }

  // GetModel as `token` over the stub; its status and pushback trailer.
  grpc::Status Get(const std::string& token, std::string* pushback = nullptr) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    v1::GetModelRequest request;
    request.set_model("m");
    v1::GetModelResponse response;
    grpc::Status status = stub_->GetModel(&context, request, &response);
    if (pushback != nullptr) {
      auto it =
          context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
      *pushback = it == context.GetServerTrailingMetadata().end()
                      ? ""
                      : std::string(it->second.data(), it->second.size());
    }
    return status;
  }

  void SetUp() override {
    Client admin = server_.NewClient();
    admin.set_token(kAdmin);
    ASSERT_TRUE(admin.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  }

  TempDir dir_;
  const std::string tokens_ = WriteTokens(dir_);
  TestServer server_{[this](ServerOptions& o) {
    o.tokens_file = tokens_;
    o.metrics_listen = "127.0.0.1:0";
    o.auth_failures = {0.5, 3};
  }};
  std::unique_ptr<v1::HalfspaceService::Stub> stub_ = server_.NewStub();
};

TEST_F(RateLimitsTest, ATokensCallsPassUpToItsBurstThenWaitThePushback) {
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Get(kDashboard).ok()) << i;
  std::string pushback;
  const grpc::Status refused = Get(kDashboard, &pushback);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("token 'dash' makes more than 0.5 calls a second"));
  EXPECT_THAT(refused.error_message(), HasSubstr("; retry in "));
  int64_t ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(pushback, &ms)) << "'" << pushback << "'";
  EXPECT_GT(ms, 0);
  EXPECT_LE(ms, 2000);
  // Others are not held back by it, and health is never limited.
  EXPECT_TRUE(Get(kAdmin).ok());
  Client dash = server_.NewClient();
  EXPECT_TRUE(dash.Health().ok());
  // Counted by the token's name, never its secret.
  const std::string metrics =
      HttpGet(server_.server().metrics_port(), "/metrics");
  EXPECT_THAT(metrics,
              HasSubstr("halfspace_rate_limited_total{caller=\"dash\"}"));
  EXPECT_THAT(metrics, Not(HasSubstr(kDashboard)));
}

TEST_F(RateLimitsTest, APredictStreamIsRefusedInBandAndGoesOn) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kDashboard));
  auto stream = stub_->PredictStream(&context);  // the stream is one call
  v1::PredictStreamRequest request;
  request.set_model("m");
  request.add_instances()->add_dense(1);
  v1::PredictStreamResponse response;
  for (int i = 0; i < 2; ++i) {  // and each request another
    ASSERT_TRUE(stream->Write(request) && stream->Read(&response));
    EXPECT_FALSE(response.has_error()) << i;
  }
  ASSERT_TRUE(stream->Write(request) && stream->Read(&response));
  EXPECT_EQ(response.error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(RateLimitsTest, TrainingExamplesPastTheRateEndTheStreamUnlearned) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kPipeline));
  auto stream = stub_->Train(&context);
  v1::TrainRequest request;
  request.set_model("m");
  for (int i = 0; i < 100; ++i) AddExample(request, {1.0 * (i % 3) - 1}, 1);
  v1::TrainResponse response;
  ASSERT_TRUE(stream->Write(request) && stream->Read(&response));
  ASSERT_EQ(response.results_size(), 100);
  request.clear_examples();
  AddExample(request, {1.0}, -1);
  ASSERT_TRUE(stream->Write(request));
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      ended.error_message(),
      HasSubstr("token 'pipeline' sends more than 1 training examples"));
  EXPECT_NE(context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms"),
            context.GetServerTrailingMetadata().end());
  Client admin = server_.NewClient();
  admin.set_token(kAdmin);
  EXPECT_EQ(admin.GetModel("m")->stats().examples_seen(), 100u);
}

TEST_F(RateLimitsTest, GuessingTokensIsRefusedPerAddress) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Get("not-a-token-at-all-000").error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << i;
  }
  // Past the burst of failures, the address is refused, good token or not.
  const grpc::Status refused = Get(kAdmin);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("failed to authenticate too often"));
}

TEST(AnonymousRateLimitsTest, ACallerWithoutATokenIsLimitedByAddress) {
  TestServer server([](ServerOptions& o) { o.anonymous.calls = {0.5, 2}; });
  Client client = server.NewClient();
  Client::RetryPolicy once;
  once.max_attempts = 1;
  client.set_retry_policy(once);
  EXPECT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  EXPECT_TRUE(client.GetModel("m").ok());
  const absl::Status refused = client.GetModel("m").status();
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("client ipv4:127.0.0.1 makes"));
}

// The client waits as long as the server asks, and sends the call again:
// any call, since a refusal by a rate limit applied nothing.
TEST(AnonymousRateLimitsTest, TheClientWaitsThePushbackAndSucceeds) {
  TestServer server([](ServerOptions& o) { o.anonymous.calls = {20, 1}; });
  Client client = server.NewClient();
  Client::RetryPolicy patient;
  patient.max_attempts = 10;
  client.set_retry_policy(patient);
  ASSERT_TRUE(client.CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client.CreateModel(absl::StrCat("m", i), TextAlgorithm("perceptron"), 1)
            .ok())
        << i;
    absl::StatusOr<v1::Model> model = client.GetModel("m");
    ASSERT_TRUE(model.ok()) << model.status();
  }
}

}  // namespace
}  // namespace halfspace
