#include "server/call_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

TEST(CallGateTest, AdmitsCallsUntilClosed) {
  CallGate gate;
  EXPECT_TRUE(gate.TryEnter().ok());
  gate.Close();
  EXPECT_EQ(gate.TryEnter().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(gate.WaitUntilIdle(absl::Milliseconds(1)));  // one in flight
  gate.Leave();
  EXPECT_TRUE(gate.WaitUntilIdle(absl::ZeroDuration()));
}

TEST(CallGateTest, WaitUntilIdleReturnsWhenTheLastCallLeaves) {
  CallGate gate;
  constexpr int kCalls = 8;
  std::atomic<int> left{0};
  std::vector<std::thread> calls;
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(gate.TryEnter().ok());
  gate.Close();
  for (int i = 0; i < kCalls; ++i) {
    calls.emplace_back([&] {
      absl::SleepFor(absl::Milliseconds(5));
      left.fetch_add(1);
      gate.Leave();
    });
  }
  EXPECT_TRUE(gate.WaitUntilIdle(absl::Seconds(60)));
  EXPECT_EQ(left.load(), kCalls);
  for (std::thread& t : calls) t.join();
}

TEST(CallGateTest, ALoadingGateTurnsCallsAwayUntilOpen) {
  CallGate gate({}, /*loading=*/true);
  absl::Status loading = gate.TryEnter();
  EXPECT_EQ(loading.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(loading.message().find("loading"), std::string::npos);
  gate.Open();
  EXPECT_TRUE(gate.TryEnter().ok());
  gate.Leave();
  gate.Close();
  gate.Open();  // a closed gate stays closed
  EXPECT_EQ(gate.TryEnter().code(), absl::StatusCode::kUnavailable);
}

TEST(CallGateTest, BoundsStreamsInAllAndPerClient) {
  StreamLimits limits;
  limits.max_streams = 3;
  limits.max_streams_per_client = 2;
  CallGate gate(limits);
  const std::string a = "ipv4:10.0.0.1", b = "ipv4:10.0.0.2";
  ASSERT_TRUE(gate.TryEnter(&a).ok());
  ASSERT_TRUE(gate.TryEnter(&a).ok());
  absl::Status third = gate.TryEnter(&a);
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.message().find("--max_streams_per_client"),
            std::string::npos);
  EXPECT_TRUE(gate.TryEnter().ok());  // unary calls are not streams
  ASSERT_TRUE(gate.TryEnter(&b).ok());
  absl::Status fourth = gate.TryEnter(&b);
  EXPECT_EQ(fourth.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::EndsWith(fourth.message(), "set by --max_streams"));
  EXPECT_EQ(gate.streams(), 3);
  gate.Leave(&a);  // a stream of a ends: a and the server have room again
  EXPECT_TRUE(gate.TryEnter(&a).ok());
  gate.Leave(&b);
  gate.Leave(&a);
  gate.Leave(&a);
  gate.Leave();
  EXPECT_EQ(gate.streams(), 0);
  EXPECT_TRUE(gate.WaitUntilIdle(absl::ZeroDuration()));
}

}  // namespace
}  // namespace halfspace
