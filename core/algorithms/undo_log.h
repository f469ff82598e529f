// What learning one example changed, so that the example can be taken back:
// before a classifier writes a value of its state it saves the value here.
// The model then checks that every changed value is finite and, if one is
// not (an update that overflowed), restores them all, so a refused example
// leaves the model bit for bit as it was (as a database's undo log does for
// an aborted transaction).
//
// Saving costs O(what the update touches): x's nonzeros of each vector an
// update writes, and the scalars; an algorithm whose update rewrites every
// weight (an L2 shrink without a scale factor) saves them all: a copy of a
// dense range, or a gather of a sparse x's indices. The memory lasts one
// batch: 8 bytes per value saved by its largest example.
//
// Only values are saved: a classifier keeps the shape of its state (the
// sizes of its vectors) such that an undone example leaves nothing visible,
// e.g. by keeping sizes in saved counters. A plain value type; not
// thread-safe. The log a classifier writes to when
// nobody asked for one, Off(), ignores saves.

#ifndef HALFSPACE_CORE_ALGORITHMS_UNDO_LOG_H_
#define HALFSPACE_CORE_ALGORITHMS_UNDO_LOG_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "core/algorithms/linear_weights.h"
#include "core/features/features.h"

namespace halfspace {

class UndoLog {
 public:
  UndoLog() = default;

  // A log that records nothing: Finite() is true and Undo() does nothing.
  // Shared, and never written.
  static UndoLog* Off() {
    static UndoLog off(/*on=*/false);
    return &off;
  }

  // Forgets what was saved: the example is kept.
  void Clear() {
    places_.clear();
    values_.clear();
    scalars_.clear();
    counts_.clear();
    flags_.clear();
  }

  // Clear(), and gives back the memory if it holds more than `max_bytes`:
  // for the end of a batch, so that one large example does not keep its
  // log's memory for good.
  void Trim(size_t max_bytes) {
    Clear();
    const size_t bytes = places_.capacity() * sizeof(Place) +
                         values_.capacity() * sizeof(double) +
                         scalars_.capacity() * sizeof(scalars_[0]) +
                         counts_.capacity() * sizeof(counts_[0]) +
                         flags_.capacity() * sizeof(flags_[0]);
    if (bytes <= max_bytes) return;
    std::vector<Place>().swap(places_);
    std::vector<double>().swap(values_);
    std::vector<std::pair<double*, double>>().swap(scalars_);
    std::vector<std::pair<int64_t*, int64_t>>().swap(counts_);
    std::vector<std::pair<bool*, bool>>().swap(flags_);
  }

  // A scalar: never an element of a vector saved too.
  void Save(double& v) {
    if (on_) scalars_.emplace_back(&v, v);
  }
  void Save(int64_t& v) {
    if (on_) counts_.emplace_back(&v, v);
  }
  void Save(bool& v) {
    if (on_) flags_.emplace_back(&v, v);
  }

  // w_j for every coordinate x stores. x's indices are read again by
  // Finite and Undo: x must stay live until the next Clear.
  void Save(std::vector<double>& w, const Features& x) {
    SaveRange(w.data(), x.dense.size());
    if (!on_ || x.indices.empty()) return;
    places_.push_back(
        {w.data(), x.indices.data(), x.indices.size(), values_.size()});
    for (const uint32_t j : x.indices) values_.push_back(w[j]);
  }

  // x's coordinates of w, and b.
  void Save(LinearWeights& weights, const Features& x) {
    Save(weights.w, x);
    Save(weights.b);
  }

  // Every w_j.
  void SaveAll(std::vector<double>& w) { SaveRange(w.data(), w.size()); }
  void SaveAll(LinearWeights& weights) {
    SaveAll(weights.w);
    Save(weights.b);
  }

  // Whether every value saved since Clear() is finite now.
  bool Finite() const {
    uint64_t exponents = 0;  // see NonFinite
    for (const auto& [place, before] : scalars_) exponents |= NonFinite(*place);
    for (const Place& p : places_) {
      if (p.indices == nullptr) {
        exponents |= NonFinite(p.base, p.count);
      } else {
        for (size_t k = 0; k < p.count; ++k) {
          exponents |= NonFinite(p.base[p.indices[k]]);
        }
      }
    }
    return (exponents >> 63) == 0;
  }

  // Puts back every value saved since Clear(), the earliest save of a place
  // last so that it wins, and clears.
  void Undo() {
    for (auto p = places_.rbegin(); p != places_.rend(); ++p) {
      const double* saved = values_.data() + p->start;
      if (p->indices == nullptr) {
        std::copy(saved, saved + p->count, p->base);
      } else {
        for (size_t k = 0; k < p->count; ++k) p->base[p->indices[k]] = saved[k];
      }
    }
    for (auto it = scalars_.rbegin(); it != scalars_.rend(); ++it) {
      *it->first = it->second;
    }
    for (auto it = counts_.rbegin(); it != counts_.rend(); ++it) {
      *it->first = it->second;
    }
    for (auto it = flags_.rbegin(); it != flags_.rend(); ++it) {
      *it->first = it->second;
    }
    Clear();
  }

 private:
  // Values saved from base[0 … count) or, with indices, from
  // base[indices[0 … count)], kept at values_[start …).
  struct Place {
    double* base;
    const uint32_t* indices;
    size_t count;
    size_t start;
  };

  explicit UndoLog(bool on) : on_(on) {}

  // A word whose top bit is set if and only if v is ±∞ or NaN (all exponent
  // bits set), so that a check ORs words without a branch per value.
  static uint64_t NonFinite(double v) {
    constexpr uint64_t kExponent = uint64_t{0x7ff} << 52;
    return (absl::bit_cast<uint64_t>(v) & kExponent) + (uint64_t{1} << 52);
  }

  // NonFinite of v[0 … n) ORed, four lanes at a time so that the compiler
  // can do them in vector registers.
  static uint64_t NonFinite(const double* v, size_t n) {
    uint64_t lanes[4] = {0, 0, 0, 0};
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
      for (int i = 0; i < 4; ++i) lanes[i] |= NonFinite(v[k + i]);
    }
    for (; k < n; ++k) lanes[0] |= NonFinite(v[k]);
    return lanes[0] | lanes[1] | lanes[2] | lanes[3];
  }

  void SaveRange(double* first, size_t count) {
    if (!on_ || count == 0) return;
    places_.push_back({first, nullptr, count, values_.size()});
    values_.insert(values_.end(), first, first + count);
  }

  bool on_ = true;
  std::vector<Place> places_;
  std::vector<double> values_;
  std::vector<std::pair<double*, double>> scalars_;
  std::vector<std::pair<int64_t*, int64_t>> counts_;
  std::vector<std::pair<bool*, bool>> flags_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_ALGORITHMS_UNDO_LOG_H_
