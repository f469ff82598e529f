#include "core/base/fifo.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace halfspace {
namespace {

std::vector<int> Contents(const Fifo<int>& fifo) {
  return std::vector<int>(fifo.begin(), fifo.end());
}

TEST(FifoTest, PopsInTheOrderPushed) {
  Fifo<int> fifo;
  EXPECT_TRUE(fifo.empty());
  for (int i = 0; i < 5; ++i) fifo.push_back(i);
  fifo.emplace_back(5);
  EXPECT_EQ(fifo.size(), 6u);
  EXPECT_EQ(fifo.front(), 0);
  fifo.pop_front();
  fifo.pop_front();
  EXPECT_EQ(fifo.front(), 2);
  EXPECT_EQ(Contents(fifo), (std::vector<int>{2, 3, 4, 5}));
}

// Long runs of pushes and pops keep the order through every erase of the
// popped front, and an emptied queue starts afresh.
TEST(FifoTest, KeepsTheOrderAcrossErasesOfThePoppedFront) {
  Fifo<int> fifo;
  int pushed = 0, popped = 0;
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 3; ++k) fifo.push_back(pushed++);
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(fifo.front(), popped);
      fifo.pop_front();
      ++popped;
    }
    ASSERT_EQ(fifo.size(), static_cast<size_t>(pushed - popped));
    ASSERT_EQ(Contents(fifo).front(), popped);
    ASSERT_EQ(Contents(fifo).back(), pushed - 1);
  }
  while (!fifo.empty()) {
    ASSERT_EQ(fifo.front(), popped++);
    fifo.pop_front();
  }
  EXPECT_EQ(fifo.size(), 0u);
  EXPECT_EQ(fifo.begin(), fifo.end());
  fifo.push_back(7);
  EXPECT_EQ(Contents(fifo), std::vector<int>{7});
}

TEST(FifoTest, HoldsStringsThatOutliveTheirErase) {
  Fifo<std::string> fifo;
  for (int i = 0; i < 100; ++i) fifo.push_back(std::string(40, 'a' + i % 26));
  for (int i = 0; i < 99; ++i) fifo.pop_front();
  EXPECT_EQ(fifo.front(), std::string(40, 'a' + 99 % 26));
}

}  // namespace
}  // namespace halfspace
