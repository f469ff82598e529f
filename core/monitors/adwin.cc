#include "core/monitors/adwin.h"

#include <cmath>
#include <cstddef>

#include "core/monitors/exported_state.h"

namespace halfspace {
namespace {

// Values per bucket of row i.
double BucketSize(size_t row) { return std::ldexp(1.0, static_cast<int>(row)); }

}  // namespace

void Adwin::Row::Push(double t, double v) {
  total[static_cast<size_t>(count)] = t;
  variance[static_cast<size_t>(count)] = v;
  ++count;
}

void Adwin::Row::DropFront(int n) {
  for (int i = n; i < count; ++i) {
    total[static_cast<size_t>(i - n)] = total[static_cast<size_t>(i)];
    variance[static_cast<size_t>(i - n)] = variance[static_cast<size_t>(i)];
  }
  count -= n;
  for (int i = count; i < kMaxBuckets + 1; ++i) {
    total[static_cast<size_t>(i)] = variance[static_cast<size_t>(i)] = 0.0;
  }
}

Adwin::Adwin(double delta, int64_t clock)
    : delta_(delta), clock_(clock), rows_(1) {}

int64_t Adwin::buckets() const {
  int64_t n = 0;
  for (const Row& row : rows_) n += row.count;
  return n;
}

bool Adwin::Add(double x) {
  ++time_;
  ++width_;
  rows_[0].Push(x, 0.0);
  if (width_ > 1) {
    const double w = static_cast<double>(width_);
    const double d = x - total_ / (w - 1);
    variance_ += (w - 1) * d * d / w;
  }
  total_ += x;
  Compress();
  if (time_ % clock_ != 0 || width_ <= kMinWindow) return false;
  bool shrank = false;
  while (ShrinkOnce()) shrank = true;
  return shrank;
}

void Adwin::Compress() {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].count != kMaxBuckets + 1) break;
    if (i + 1 == rows_.size()) rows_.emplace_back();
    Row& row = rows_[i];
    const double n = BucketSize(i);
    const double mean1 = row.total[0] / n;
    const double mean2 = row.total[1] / n;
    const double merged_variance =
        row.variance[0] + row.variance[1] +
        n * n * (mean1 - mean2) * (mean1 - mean2) / (n + n);
    rows_[i + 1].Push(row.total[0] + row.total[1], merged_variance);
    row.DropFront(2);
    if (rows_[i + 1].count <= kMaxBuckets) break;
  }
}

bool Adwin::ShrinkOnce() {
  double n0 = 0.0;
  double n1 = static_cast<double>(width_);
  double u0 = 0.0;
  double u1 = total_;
  for (size_t i = rows_.size(); i-- > 0;) {
    const Row& row = rows_[i];
    for (int k = 0; k < row.count; ++k) {
      if (i == 0 && k == row.count - 1) return false;  // W1 keeps the newest
      const double n = BucketSize(i);
      n0 += n;
      n1 -= n;
      u0 += row.total[static_cast<size_t>(k)];
      u1 -= row.total[static_cast<size_t>(k)];
      if (n1 >= kMinSubwindow && n0 >= kMinSubwindow &&
          Cut(n0, n1, u0 / n0 - u1 / n1)) {
        DropOldest();
        return true;
      }
    }
  }
  return false;
}

void Adwin::DropOldest() {
  Row& row = rows_.back();
  const double n = BucketSize(rows_.size() - 1);
  width_ -= static_cast<int64_t>(n);
  total_ -= row.total[0];
  const double w = static_cast<double>(width_);
  const double bucket_mean = row.total[0] / n;
  const double d = bucket_mean - total_ / w;
  variance_ -= row.variance[0] + n * w * d * d / (n + w);
  row.DropFront(1);
  if (row.count == 0 && rows_.size() > 1) rows_.pop_back();
}

bool Adwin::Cut(double n0, double n1, double mean_difference) const {
  const double w = static_cast<double>(width_);
  const double dd = std::log(2 * std::log(w) / delta_);
  const double v = variance_ / w;
  const double m =
      1.0 / (n0 - kMinSubwindow + 1) + 1.0 / (n1 - kMinSubwindow + 1);
  const double epsilon = std::sqrt(2 * m * v * dd) + 2.0 / 3 * dd * m;
  return std::fabs(mean_difference) > epsilon;
}

std::vector<double> Adwin::Export() const {
  std::vector<double> out = {static_cast<double>(time_),
                             static_cast<double>(width_), total_, variance_,
                             static_cast<double>(rows_.size())};
  for (const Row& row : rows_) {
    out.push_back(row.count);
    for (int k = 0; k < row.count; ++k) {
      out.push_back(row.total[static_cast<size_t>(k)]);
      out.push_back(row.variance[static_cast<size_t>(k)]);
    }
  }
  return out;
}

absl::Status Adwin::Import(absl::Span<const double> state) {
  const auto bad = [](const char* why) {
    return absl::InvalidArgumentError(
        std::string("the ADWIN window's state does not fit: ") + why);
  };
  constexpr double kMaxRows = 62;  // buckets of 2^61 values past any count
  if (state.size() < 5) return bad("too short");
  for (double v : state) {
    if (!std::isfinite(v)) return bad("a number is not finite");
  }
  if (!IsExportedCount(state[0]) || !IsExportedCount(state[1]) ||
      !IsExportedCount(state[4], kMaxRows) || state[4] < 1) {
    return bad("its time, width or rows are not counts");
  }
  std::vector<Row> rows(static_cast<size_t>(state[4]));
  size_t at = 5;
  double width = 0.0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (at >= state.size() || !IsExportedCount(state[at], kMaxBuckets + 1)) {
      return bad("a row's count is not one of 0 to 6");
    }
    const int count = static_cast<int>(state[at++]);
    if (state.size() - at < static_cast<size_t>(2 * count)) {
      return bad("too short");
    }
    for (int k = 0; k < count; ++k, at += 2) {
      rows[i].Push(state[at], state[at + 1]);
    }
    width += count * BucketSize(i);
  }
  if (at != state.size()) return bad("too long");
  if (width != state[1]) return bad("its width is not its buckets' sizes");
  time_ = static_cast<int64_t>(state[0]);
  width_ = static_cast<int64_t>(state[1]);
  total_ = state[2];
  variance_ = state[3];
  rows_ = std::move(rows);
  return absl::OkStatus();
}

}  // namespace halfspace
