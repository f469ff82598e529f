// The log: JSON lines with the request id as a field, and request ids that
// travel with each call.

#include "server/logging.h"

#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::MatchesRegex;

std::string LogJson(const std::string& message) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(MakeJsonFormatter());
  logger.warn(message);
  return out.str();
}

TEST(LoggingTest, JsonLinesCarryTheRequestIdAsAField) {
  const std::string tagged = LogJson("rid=abc-1 created model 'm'");
  ASSERT_FALSE(tagged.empty());
  EXPECT_EQ(tagged.back(), '\n');  // one object a line
  EXPECT_THAT(
      tagged.substr(0, tagged.size() - 1),
      MatchesRegex(R"(\{"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{15}Z",)"
                   R"("level":"warning","request_id":"abc-1",)"
                   R"("msg":"created model 'm'"\})"));
  // Quotes, backslashes and control characters are escaped.
  const std::string line = LogJson("a \"quoted\" \\ line\nand\ta \x01");
  EXPECT_NE(line.find(R"("msg":"a \"quoted\" \\ line\nand\ta \u0001"})"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("request_id"), std::string::npos);
  // Every control character (U+0000 to U+001F) is written escaped; a
  // space is not.
  for (int c = 1; c < 0x20; ++c) {
    const std::string logged = LogJson(std::string(1, static_cast<char>(c)));
    EXPECT_EQ(logged.substr(0, logged.size() - 1).find(static_cast<char>(c)),
              std::string::npos)
        << c;
  }
  EXPECT_NE(LogJson("a b").find(R"("msg":"a b")"), std::string::npos);
  EXPECT_FALSE(SetLogFormat("xml").ok());
}

std::string ReplyId(const TestServer& server, const std::string& sent) {
  auto stub = server.NewStub();
  grpc::ClientContext context;
  if (!sent.empty()) context.AddMetadata("x-request-id", sent);
  v1::GetModelRequest request;
  request.set_model("nope");
  v1::GetModelResponse response;
  (void)stub->GetModel(&context, request, &response);
  const auto& metadata = context.GetServerInitialMetadata();
  auto it = metadata.find("x-request-id");
  return it == metadata.end()
             ? ""
             : std::string(it->second.data(), it->second.size());
}

TEST(LoggingTest, EveryCallHasARequestIdAndReturnsIt) {
  TestServer server;
  EXPECT_EQ(ReplyId(server, "pipeline-7.batch_42"), "pipeline-7.batch_42");
  // Up to 64 characters are kept; a longer one is replaced.
  EXPECT_EQ(ReplyId(server, std::string(64, 'a')), std::string(64, 'a'));
  EXPECT_THAT(ReplyId(server, std::string(65, 'a')),
              MatchesRegex("[0-9a-f]{16}"));
  EXPECT_THAT(ReplyId(server, ""), MatchesRegex("[0-9a-f]{16}"));
  // One that could forge log fields is replaced.
  EXPECT_THAT(ReplyId(server, "a\" b"), MatchesRegex("[0-9a-f]{16}"));
  EXPECT_NE(ReplyId(server, ""), ReplyId(server, ""));
}

}  // namespace
}  // namespace halfspace
