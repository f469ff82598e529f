// Lazy: a stale value is computed once, by one of the readers, whatever
// their number, and every reader sees the computed value.

#include "core/algorithms/lazy.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace halfspace {
namespace {

TEST(LazyTest, AFreshValueIsNotComputed) {
  Lazy<int> lazy(7);
  int computed = 0;
  EXPECT_EQ(lazy.Get([&](int& v) { v = ++computed; }), 7);
  EXPECT_EQ(computed, 0);
}

TEST(LazyTest, AStaleValueIsComputedOnceUntilMarkedStaleAgain) {
  Lazy<int> lazy(0, /*stale=*/true);
  int computed = 0;
  auto compute = [&](int& v) { v = 10 * ++computed; };
  EXPECT_EQ(lazy.Get(compute), 10);
  EXPECT_EQ(lazy.Get(compute), 10);
  lazy.MarkStale();
  EXPECT_EQ(lazy.Get(compute), 20);
  EXPECT_EQ(computed, 2);
  lazy.Set(5);
  EXPECT_EQ(lazy.Get(compute), 5);
  EXPECT_EQ(computed, 2);
}

TEST(LazyTest, ConcurrentReadersComputeOnceAndAllSeeTheValue) {
  for (int round = 0; round < 50; ++round) {
    Lazy<std::vector<int>> lazy({}, /*stale=*/true);
    std::atomic<int> computed{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> readers;
    std::vector<size_t> seen(8, 0);
    for (int t = 0; t < 8; ++t) {
      readers.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        const std::vector<int>& v = lazy.Get([&](std::vector<int>& out) {
          computed.fetch_add(1);
          // Long enough that the other readers arrive while it computes.
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          out.assign(1000, round);
        });
        seen[static_cast<size_t>(t)] = v.size();
        for (int x : v) ASSERT_EQ(x, round);
      });
    }
    go.store(true);
    for (std::thread& r : readers) r.join();
    EXPECT_EQ(computed.load(), 1);
    for (size_t n : seen) EXPECT_EQ(n, 1000u);
  }
}

}  // namespace
}  // namespace halfspace
