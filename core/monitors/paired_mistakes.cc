#include "core/monitors/paired_mistakes.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

PairedCounts& PairedCounts::operator+=(const PairedCounts& other) {
  examples += other.examples;
  both_wrong += other.both_wrong;
  only_self_wrong += other.only_self_wrong;
  only_peer_wrong += other.only_peer_wrong;
  return *this;
}

PairedCounts PairedCounts::Swapped() const {
  PairedCounts s = *this;
  std::swap(s.only_self_wrong, s.only_peer_wrong);
  return s;
}

void PairedMistakes::Count(const PeerOutcomes& peer,
                           absl::Span<const uint8_t> own) {
  PairedCounts added;
  for (size_t i = 0; i < own.size(); ++i) {
    const uint8_t theirs = peer.outcomes[i];
    if (own[i] == kPeerSkipped || theirs == kPeerSkipped) continue;
    const bool self_wrong = own[i] == kPeerWrong;
    const bool peer_wrong = theirs == kPeerWrong;
    ++added.examples;
    added.both_wrong += self_wrong && peer_wrong;
    added.only_self_wrong += self_wrong && !peer_wrong;
    added.only_peer_wrong += peer_wrong && !self_wrong;
  }
  if (added.examples == 0) return;
  auto it = peers_.find(peer.model);
  if (it != peers_.end() && it->second.peer_incarnation != peer.incarnation) {
    it->second = PairedCounts();  // a new model of that name
    it->second.peer_incarnation = peer.incarnation;
  }
  if (it == peers_.end()) {
    if (peers_.size() >= kMaxPeers) {
      peers_.erase(std::min_element(
          peers_.begin(), peers_.end(), [](const auto& a, const auto& b) {
            return a.second.examples < b.second.examples;
          }));
    }
    it = peers_.emplace(std::string(peer.model), PairedCounts()).first;
    it->second.peer_incarnation = peer.incarnation;
  }
  it->second += added;
}

absl::Status PairedMistakes::Import(
    std::map<std::string, PairedCounts, std::less<>> peers) {
  if (peers.size() > kMaxPeers) {
    return absl::InvalidArgumentError(
        absl::StrCat("paired mistakes against ", peers.size(),
                     " models; the most is ", kMaxPeers));
  }
  for (const auto& [name, c] : peers) {
    const uint64_t discordant = c.only_self_wrong + c.only_peer_wrong;
    if (name.empty() || discordant < c.only_self_wrong ||
        c.both_wrong > c.examples || discordant > c.examples - c.both_wrong) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the paired mistakes against ", Quoted(name), " do not add up"));
    }
  }
  peers_ = std::move(peers);
  return absl::OkStatus();
}

PairedCounts PairedMistakes::Find(absl::string_view peer,
                                  uint64_t incarnation) const {
  auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.peer_incarnation != incarnation) {
    return PairedCounts();
  }
  return it->second;
}

namespace {

// The most terms C(n, k) is multiplied out of; past it, lgamma gives it.
constexpr uint64_t kExactTerms = 1000000;

}  // namespace

McNemarTest McNemar(uint64_t b, uint64_t c) {
  McNemarTest test;
  if (b + c == 0) return test;
  const double n = static_cast<double>(b) + static_cast<double>(c);
  const double gap = std::max(
      0.0, std::abs(static_cast<double>(b) - static_cast<double>(c)) - 1.0);
  test.chi_square = gap * gap / n;
  // P(X <= k), X ~ Binomial(n, ½), summed downward from k: each term is the
  // one above times i / (n − i + 1), so the sum stops once they no longer
  // add to it (below the mean they shrink at least geometrically). The
  // first term, C(n, k)·2^−n, is a product of k ratios (exact for small
  // counts), its exponent kept apart so that it cannot underflow early; for
  // millions of examples, lgamma's.
  const uint64_t k = std::min(b, c);
  double term;
  if (k <= kExactTerms) {
    double mantissa = 1.0;
    int exponent = 0;
    for (uint64_t i = 1; i <= k; ++i) {
      int e;
      mantissa = std::frexp(
          mantissa * ((n - static_cast<double>(k) + static_cast<double>(i)) /
                      static_cast<double>(i)),
          &e);
      exponent += e;
    }
    term = std::ldexp(mantissa, exponent - static_cast<int>(std::min(n, 1e9)));
  } else {
    term = std::exp(
        std::lgamma(n + 1.0) - std::lgamma(static_cast<double>(k) + 1.0) -
        std::lgamma(n - static_cast<double>(k) + 1.0) - n * std::log(2.0));
  }
  double tail = 0.0;
  for (uint64_t i = k;; --i) {
    tail += term;
    if (i == 0 || term <= tail * 1e-17) break;
    term *= static_cast<double>(i) / (n - static_cast<double>(i) + 1.0);
  }
  test.p_value = std::min(1.0, 2.0 * tail);
  return test;
}

PairedComparison Compare(const PairedCounts& counts, double alpha) {
  PairedComparison comparison;
  comparison.counts = counts;
  const uint64_t b = counts.only_peer_wrong;
  const uint64_t c = counts.only_self_wrong;
  if (counts.examples != 0) {
    comparison.accuracy_difference =
        (static_cast<double>(b) - static_cast<double>(c)) /
        static_cast<double>(counts.examples);
  }
  comparison.test = McNemar(b, c);
  comparison.significant = comparison.test.p_value < alpha;
  return comparison;
}

}  // namespace halfspace
