// The voted perceptron (Freund & Schapire, "Large margin classification
// using the perceptron algorithm", 1999). It learns as the perceptron does —
// w = 0, b = 0; a mistake is y·f(x) <= 0 and moves w by s·y·x, b by s·y —
// and keeps every weight vector it held, v_1 … v_k, each with c_i, the
// weight of the examples it survived (the example that made it counts, as
// in the paper's c_{k+1} := 1). It predicts by their vote
//
//   vote(x) = Σ_i c_i · sign(v_i·x + b_i),   label +1 when vote(x) >= 0,
//
// with sign(0) = +1 as everywhere in halfspace.
//
// Memory is bounded by `max_vectors`, the most vectors that vote one by
// one. Past it the oldest vector is merged into one more voter, the sum
// S = Σ c_i·v_i of every merged vector, which votes (Σ c_i)·sign(S·x + S_b):
// the merged vectors vote as their average does (the averaged perceptron's
// rule) while the newest vote as the paper says. Memory: (max_vectors + 2)
// weight vectors; a mistake costs O(d) (a new vector is a copy), other
// examples O(nonzeros); a prediction costs O(vectors · nonzeros).
//
// weights() is the vote's linear summary, the average Σ c_i·v_i / Σ c_i
// (merged vectors included), which is what GetWeights shows; Score() is the
// vote. set_weights starts the vote afresh from the given weights.
//
// Not thread-safe; see OnlineClassifier.

#ifndef HALFSPACE_CORE_ALGORITHMS_VOTED_PERCEPTRON_H_
#define HALFSPACE_CORE_ALGORITHMS_VOTED_PERCEPTRON_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/algorithms/lazy.h"
#include "core/algorithms/online_classifier.h"
#include "core/algorithms/parameters.h"

namespace halfspace {

class VotedPerceptron final : public OnlineClassifier {
 public:
  // REQUIRES: dimension >= 1, max_vectors >= 1.
  VotedPerceptron(int64_t dimension, int64_t max_vectors);

  Update Learn(Features x, int y, double s) override;
  void EndBatch() override { average_.MarkStale(); }
  double Score(const Features& x) const override;
  bool linear() const override { return false; }
  std::optional<double> Probability(double) const override {
    return std::nullopt;
  }
  const LinearWeights& weights() const override;
  void set_weights(LinearWeights weights) override;
  std::vector<double> ExportState() const override;
  absl::Status ImportState(absl::Span<const double> state) override;

 private:
  // The slot of the i-th oldest voting vector.
  int64_t Slot(int64_t i) const { return (oldest_ + i) % max_vectors_; }

  // Makes room for one more vector, merging the oldest into the sum if
  // every slot votes; returns the free slot.
  int64_t FreeSlot();

  const int64_t dimension_;
  const int64_t max_vectors_;
  // The voting vectors in a ring of up to max_vectors slots, allocated as
  // needed: used_ of them, the oldest at slot oldest_, the current (the one
  // that learns) at Slot(used_ - 1).
  std::vector<LinearWeights> slots_;
  std::vector<double> counts_;  // c_i by slot
  int64_t oldest_ = 0;
  int64_t used_ = 1;
  LinearWeights merged_;         // S = Σ c_i·v_i over merged vectors
  double merged_count_ = 0.0;    // Σ c_i over merged vectors
  Lazy<LinearWeights> average_;  // weights(), computed when read
};

// The most vectors a voted perceptron may keep voting one by one.
inline constexpr int64_t kMaxVotedVectors = 10000;

// The voted perceptron's parameters.
struct VotedPerceptronParams {
  static constexpr absl::string_view kName = "voted_perceptron";
  int64_t max_vectors = 64;  // the most vectors that vote one by one

  static auto Parameters() {
    return std::make_tuple(Param("max_vectors", ParameterKey::kMaxVectors,
                                 &VotedPerceptronParams::max_vectors));
  }
  absl::Status Validate() const;
  // The voting vectors, the merged sum and the average, and a count per
  // vote (at most one more vector's worth).
  int64_t DoublesPerClass(int64_t width) const {
    return Vectors(max_vectors + 2, width) + max_vectors;
  }
  std::unique_ptr<OnlineClassifier> MakeClassifier(int64_t width) const {
    return std::make_unique<VotedPerceptron>(width, max_vectors);
  }
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_VOTED_PERCEPTRON_H_
