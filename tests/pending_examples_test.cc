// The examples remembered for delayed feedback
// (core/monitors/pending_examples.h): states, the bounds on count and bytes,
// tombstones, expiry by the time given, and the snapshot round trip.

#include "core/monitors/pending_examples.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using State = PendingExamples::State;

PendingExamples::Entry Entry(const std::string& id, int64_t deadline,
                             size_t bytes = 10) {
  return {id, std::string(bytes, 'f'), deadline};
}

TEST(PendingExamplesTest, AnExampleWaitsUntilJoinedOrDue) {
  PendingExamples pending;
  const PendingLimits limits;
  pending.Remember(Entry("a", 100), limits);
  pending.Remember(Entry("b", 200), limits);
  EXPECT_EQ(pending.Check("a", 99), State::kWaiting);
  EXPECT_EQ(pending.Check("a", 100), State::kExpired);  // at the deadline
  EXPECT_EQ(pending.Check("z", 0), State::kUnknown);
  EXPECT_EQ(*pending.Features("a"), std::string(10, 'f'));
  EXPECT_EQ(pending.Due(99), 0u);
  EXPECT_EQ(pending.Due(100), 1u);  // due at its deadline, not after it
  EXPECT_EQ(pending.Due(150), 1u);
  pending.Join("b", limits);
  EXPECT_EQ(pending.Check("b", 0), State::kJoined);
  EXPECT_TRUE(pending.Taken("b"));
  EXPECT_EQ(pending.Features("b"), nullptr);
  pending.Expire(99, limits);
  EXPECT_EQ(pending.Check("a", 0), State::kWaiting);
  pending.Expire(100, limits);                        // expires at its deadline
  EXPECT_EQ(pending.Check("a", 0), State::kExpired);  // a tombstone now
  EXPECT_EQ(pending.waiting(), 0u);
  EXPECT_EQ(pending.counters().remembered, 2u);
  EXPECT_EQ(pending.counters().joined, 1u);
  EXPECT_EQ(pending.counters().expired, 1u);
}

TEST(PendingExamplesTest, TheOldestGoWhenCountOrBytesWouldPassTheLimits) {
  PendingExamples pending;
  PendingLimits limits;
  limits.max_examples = 3;
  limits.max_bytes = 3 * (PendingExamples::kEntryOverheadBytes + 11);
  for (const char* id : {"a", "b", "c", "d"}) {
    pending.Remember(Entry(id, 1000), limits);
  }
  EXPECT_EQ(pending.waiting(), 3u);
  EXPECT_EQ(pending.Check("a", 0), State::kExpired);
  // A larger one needs the room of two.
  pending.Remember(Entry("e", 1000, 30), limits);
  EXPECT_EQ(pending.Check("b", 0), State::kExpired);
  EXPECT_EQ(pending.Check("c", 0), State::kExpired);
  EXPECT_EQ(pending.Check("d", 0), State::kWaiting);
  EXPECT_EQ(pending.Check("e", 0), State::kWaiting);
  // Tombstones are bounded too: a fourth makes the oldest forgotten.
  EXPECT_EQ(pending.Check("a", 0), State::kExpired);
  pending.Join("d", limits);
  EXPECT_EQ(pending.Check("a", 0), State::kUnknown);
  EXPECT_FALSE(pending.Taken("a"));
  EXPECT_EQ(pending.counters().expired, 3u);
}

TEST(PendingExamplesTest, BytesCountWaitingExamplesAndTombstones) {
  PendingExamples pending;
  const PendingLimits limits;
  pending.Remember(Entry("ab", 100, 7), limits);
  EXPECT_EQ(pending.bytes(), PendingExamples::kEntryOverheadBytes + 9);
  pending.Join("ab", limits);
  EXPECT_EQ(pending.bytes(), PendingExamples::kTombstoneOverheadBytes + 2);
}

TEST(PendingExamplesTest, ExportedStateImportsToTheSameDecisions) {
  PendingExamples pending;
  const PendingLimits limits;
  pending.Remember(Entry("a", 100), limits);
  pending.Remember(Entry("b", 300), limits);
  pending.Remember(Entry("c", 200), limits);
  pending.Join("a", limits);
  PendingExamples copy;
  copy.Import(pending.Export());
  EXPECT_EQ(copy.bytes(), pending.bytes());
  for (const char* id : {"a", "b", "c", "d"}) {
    EXPECT_EQ(copy.Check(id, 250), pending.Check(id, 250)) << id;
  }
  copy.Expire(250, limits);
  pending.Expire(250, limits);
  // b (deadline 300) is oldest: c waits behind it, due but not dropped.
  EXPECT_EQ(copy.waiting(), 2u);
  EXPECT_EQ(copy.Export().waiting.size(), pending.Export().waiting.size());
  EXPECT_EQ(copy.counters().remembered, 3u);
}

TEST(PendingExamplesTest, ExampleIdsArePrintableAndShort) {
  EXPECT_TRUE(ValidateExampleId("click-17:a/b").ok());
  EXPECT_FALSE(ValidateExampleId("").ok());
  EXPECT_FALSE(ValidateExampleId("a b").ok());
  EXPECT_FALSE(ValidateExampleId(std::string(65, 'x')).ok());
  EXPECT_FALSE(ValidateExampleId("caf\xc3\xa9").ok());
}

}  // namespace
}  // namespace halfspace
