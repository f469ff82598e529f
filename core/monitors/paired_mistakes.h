// Champion/challenger on one stream: paired mistakes and McNemar's test.
//
// When a fan-out Train stream trains several models on the same examples,
// each model counts, against every model the request trained before it (a
// peer), the 2×2 table of their progressive mistakes on the examples both
// learned: right or wrong before each one's update. The discordant cells
// (one wrong, the other right) are what McNemar's test compares: under the
// hypothesis that both err equally often, each discordant example is a fair
// coin toss between them.
//
// Counts are kept by the peer's name and incarnation (a model deleted and
// created again under its name starts afresh), since they started sharing
// a stream, for at most kMaxPeers peers (past that, the peer with the fewest
// shared examples is forgotten). A plain value type; not thread-safe (its Model
// serializes access).

#ifndef HALFSPACE_CORE_MONITORS_PAIRED_MISTAKES_H_
#define HALFSPACE_CORE_MONITORS_PAIRED_MISTAKES_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace halfspace {

// The 2×2 table of two models' mistakes on the examples both learned.
struct PairedCounts {
  uint64_t examples = 0;  // learned by both
  uint64_t both_wrong = 0;
  uint64_t only_self_wrong = 0;  // this model wrong, the peer right
  uint64_t only_peer_wrong = 0;  // the peer wrong, this model right
  // Which model of the peer's name they were counted against (see
  // Model::incarnation).
  uint64_t peer_incarnation = 0;

  // Adds the cells (not the incarnation).
  PairedCounts& operator+=(const PairedCounts& other);
  // The same table seen from the peer's side.
  PairedCounts Swapped() const;
};

// What a peer did with one example of a shared batch.
enum PeerOutcome : uint8_t {
  kPeerSkipped = 0,  // not learned (refused, or a duplicate)
  kPeerRight = 1,
  kPeerWrong = 2,
};

// One peer's outcomes for a batch, one per example.
struct PeerOutcomes {
  absl::string_view model;
  uint64_t incarnation = 0;  // see Model::incarnation
  absl::Span<const uint8_t> outcomes;
};

class PairedMistakes {
 public:
  static constexpr size_t kMaxPeers = 64;

  // Counts the examples of a batch that both this model (`own`, its
  // outcomes as PeerOutcome values) and the peer learned; counts against
  // an earlier model of the peer's name start over.
  // REQUIRES: peer.outcomes.size() == own.size().
  void Count(const PeerOutcomes& peer, absl::Span<const uint8_t> own);

  // The counts against `peer` of `incarnation`, zero if none.
  PairedCounts Find(absl::string_view peer, uint64_t incarnation) const;

  const std::map<std::string, PairedCounts, std::less<>>& peers() const {
    return peers_;
  }
  // INVALID_ARGUMENT for more than kMaxPeers peers, an empty name, or
  // cells that do not add up.
  absl::Status Import(std::map<std::string, PairedCounts, std::less<>> peers);

 private:
  std::map<std::string, PairedCounts, std::less<>> peers_;
};

// McNemar's test of two models on their paired mistakes: b examples only
// the first got wrong, c only the second.
struct McNemarTest {
  // Edwards' continuity-corrected statistic max(0, |b − c| − 1)² / (b + c),
  // χ² with one degree of freedom; 0 when b + c = 0.
  double chi_square = 0.0;
  // The exact two-sided p-value: under H0, min(b, c) ~ Binomial(b + c, ½),
  // p = min(1, 2·P(X <= min(b, c))); 1 when b + c = 0.
  double p_value = 1.0;
};
McNemarTest McNemar(uint64_t b, uint64_t c);

// A challenger against the champion (the first model of a comparison), from
// the challenger's table against it (self: the challenger, peer: the
// champion).
struct PairedComparison {
  PairedCounts counts;
  // The challenger's accuracy minus the champion's on the examples both
  // learned: (only_peer_wrong − only_self_wrong) / examples; 0 with none.
  double accuracy_difference = 0.0;
  // McNemar's test with b = only_peer_wrong, c = only_self_wrong.
  McNemarTest test;
  // Whether the test rejects equal error rates at level alpha: p < alpha.
  bool significant = false;
};
// REQUIRES: 0 < alpha < 1.
PairedComparison Compare(const PairedCounts& counts, double alpha);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_PAIRED_MISTAKES_H_
