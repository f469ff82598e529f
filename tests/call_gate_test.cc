#include "server/call_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace halfspace {
namespace {

TEST(CallGateTest, AdmitsCallsUntilClosed) {
  CallGate gate;
  EXPECT_TRUE(gate.TryEnter());
  gate.Close();
  EXPECT_FALSE(gate.TryEnter());
  EXPECT_FALSE(gate.WaitUntilIdle(absl::Milliseconds(1)));  // one in flight
  gate.Leave();
  EXPECT_TRUE(gate.WaitUntilIdle(absl::ZeroDuration()));
}

TEST(CallGateTest, WaitUntilIdleReturnsWhenTheLastCallLeaves) {
  CallGate gate;
  constexpr int kCalls = 8;
  std::atomic<int> left{0};
  std::vector<std::thread> calls;
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(gate.TryEnter());
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

}  // namespace
}  // namespace halfspace
