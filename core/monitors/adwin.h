// ADWIN, the adaptive window of Bifet & Gavaldà ("Learning from
// Time-Changing Data with Adaptive Windowing", SDM 2007), in its ADWIN2
// form: the window is kept as an exponential histogram of buckets, so that
// memory and the time per value stay logarithmic in the window's width W.
//
// The window W holds the values since the last change. Every `clock`
// values (once W > kMinWindow), each cut of W into an older part W0 and a
// newer part W1, at a bucket boundary and with both parts at least
// kMinSubwindow long, is tested:
//
//   |μ̂0 − μ̂1| > ε,  ε = √(2·m·σ̂²·δ') + (2/3)·δ'·m,
//   m = 1/(n0 − kMinSubwindow + 1) + 1/(n1 − kMinSubwindow + 1),
//   δ' = ln(2·ln(W)/δ),  σ̂² = the window's variance.
//
// On a cut that holds, the oldest bucket is dropped and the test repeats
// until no cut holds: W shrinks to the part that agrees with the newest
// values. For values in [0, 1] on a stationary input, the probability that
// W ever shrinks is at most δ (the paper's Theorem 3).
//
// The buckets: row i holds at most kMaxBuckets + 1 buckets of 2^i values
// each (their sum and variance), oldest first; when a row overflows, its
// two oldest merge into one bucket of the next row. Memory is
// O(kMaxBuckets · log(W / kMaxBuckets)) — about 100 bytes per row, 30 rows
// for a billion values.
//
// The arithmetic is that of the authors' implementation (MOA's ADWIN, with
// its defaults: clock 32, M = 5, a window of more than 10 values before
// testing, sub-windows of at least 5), in the same order, so that it
// shrinks at the same values. Their integer products of bucket sizes
// overflow past windows of 2^16·M values; here they are doubles.
//
// Not thread-safe (its Model serializes access). Copyable.

#ifndef HALFSPACE_CORE_MONITORS_ADWIN_H_
#define HALFSPACE_CORE_MONITORS_ADWIN_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace halfspace {

class Adwin {
 public:
  // Buckets of one size kept before two merge (the paper's M).
  static constexpr int kMaxBuckets = 5;
  // No cut is tested while W holds at most this many values.
  static constexpr int64_t kMinWindow = 10;
  // Neither part of a cut may be shorter.
  static constexpr int64_t kMinSubwindow = 5;

  // REQUIRES: 0 < delta < 1, clock >= 1.
  explicit Adwin(double delta, int64_t clock = 32);

  // Adds x as the newest value; true when the window shrank.
  bool Add(double x);

  int64_t width() const { return width_; }
  // The mean of the window; 0 while it is empty.
  double mean() const { return width_ > 0 ? total_ / width_ : 0.0; }
  // The window's sum of squared deviations from its mean.
  double variance_sum() const { return variance_; }
  // Values added since creation.
  int64_t time() const { return time_; }
  // The buckets kept, over all rows.
  int64_t buckets() const;

  // The state as numbers, and back (INVALID_ARGUMENT if it does not fit):
  // time, width, total, variance, the number of rows, then each row's
  // count and its buckets' (total, variance), oldest first.
  std::vector<double> Export() const;
  absl::Status Import(absl::Span<const double> state);

  // The bytes a window of `rows` rows takes (a row per doubling of W).
  static int64_t Bytes(int64_t rows) {
    return static_cast<int64_t>(sizeof(Adwin)) +
           rows * static_cast<int64_t>(sizeof(Row));
  }
  int64_t bytes() const { return Bytes(static_cast<int64_t>(rows_.size())); }

 private:
  // The buckets of one size, oldest first.
  struct Row {
    int32_t count = 0;
    std::array<double, kMaxBuckets + 1> total{};
    std::array<double, kMaxBuckets + 1> variance{};

    void Push(double t, double v);
    void DropFront(int n);
  };

  // Merges the two oldest buckets of every row that overflowed.
  void Compress();
  // Whether some cut of the window holds; if so, drops the oldest bucket.
  bool ShrinkOnce();
  // Drops the oldest bucket.
  void DropOldest();
  // Whether the means of the parts, n0 and n1 long, differ by more than ε.
  bool Cut(double n0, double n1, double mean_difference) const;

  double delta_;
  int64_t clock_;
  int64_t time_ = 0;
  int64_t width_ = 0;
  double total_ = 0.0;
  double variance_ = 0.0;
  std::vector<Row> rows_;  // row i's buckets hold 2^i values each
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_MONITORS_ADWIN_H_
