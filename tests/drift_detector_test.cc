// Drift detectors (core/monitors/adwin.h, page_hinkley.h, ddm.h,
// drift_detector.h): ADWIN's buckets by hand, each detector at the
// positions River's documentation gives for its own examples (the streams,
// drawn by Python's and numpy's generators, are in tests/data), ADWIN's
// false-alarm bound over many stationary streams, detection of an abrupt
// rise, and the state through Export and Import.

#include "core/monitors/drift_detector.h"

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace halfspace {
namespace {

std::vector<double> ReadStream(const std::string& name) {
  std::ifstream in(std::string(HALFSPACE_SOURCE_DIR) + "/tests/data/" + name);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  return values;
}

// Bernoulli(p) draws, from a fixed seed.
std::vector<double> Bernoulli(double p, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution draw(p);
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = draw(rng) ? 1.0 : 0.0;
  return values;
}

TEST(AdwinTest, MergesTheTwoOldestBucketsOfAFullRow) {
  Adwin adwin(0.002, /*clock=*/1000000);
  for (double x : {1.0, 3.0, 0.0, 2.0, 5.0}) adwin.Add(x);
  EXPECT_EQ(adwin.buckets(), 5);
  adwin.Add(4.0);  // row 0 holds 6: 1 and 3 merge into a bucket of 2
  // time, width, total, variance; 2 rows: 4 buckets of 1, 1 bucket of 2.
  // The merged variance is n1·n2·(μ1 − μ2)²/(n1 + n2) = (1 − 3)²/2 = 2.
  EXPECT_EQ(adwin.Export(), (std::vector<double>{6, 6, 15, 17.5, 2,          //
                                                 4, 0, 0, 2, 0, 5, 0, 4, 0,  //
                                                 1, 4, 2}));
  EXPECT_DOUBLE_EQ(adwin.mean(), 2.5);
}

TEST(AdwinTest, KeepsTheWindowsSumAndVarianceInLogarithmicMemory) {
  Adwin adwin(0.002, /*clock=*/1000000);  // never tests a cut here
  const std::vector<double> values = Bernoulli(0.3, 100000, 7);
  double sum = 0.0;
  for (double x : values) {
    adwin.Add(x);
    sum += x;
  }
  const double mean = sum / values.size();
  double squares = 0.0;
  for (double x : values) squares += (x - mean) * (x - mean);
  EXPECT_EQ(adwin.width(), 100000);
  EXPECT_DOUBLE_EQ(adwin.mean(), mean);
  EXPECT_NEAR(adwin.variance_sum(), squares, 1e-9 * squares);
  // At most M + 1 buckets in each of ⌈log2(W/M)⌉ + 1 rows.
  EXPECT_LE(adwin.buckets(), (Adwin::kMaxBuckets + 1) * 16);
  EXPECT_LT(adwin.bytes(), 2000);
}

TEST(AdwinTest, ShrinksWhereRiversExamplesSayItDoes) {
  // River's ADWIN example: a change after 1000 values, seen at the first
  // test past it (every 32 values), index 1023.
  std::vector<int> shrinks;
  Adwin adwin(0.002);
  const std::vector<double> two_levels = ReadStream("drift_two_levels.txt");
  for (size_t i = 0; i < two_levels.size(); ++i) {
    if (adwin.Add(two_levels[i])) shrinks.push_back(static_cast<int>(i));
  }
  ASSERT_FALSE(shrinks.empty());
  EXPECT_EQ(shrinks[0], 1023);
  // The example of its releases that kept the window after a change. They
  // shrink it at 1023, 1055, 1087 and 1119: their loop over the cuts leaves
  // the newest bucket of every row out of both parts, which the authors'
  // does not (a port of that loop gives their four; of the authors', these
  // two).
  shrinks.clear();
  Adwin kept(0.002);
  const std::vector<double> numpy = ReadStream("drift_two_levels_numpy.txt");
  for (size_t i = 0; i < numpy.size(); ++i) {
    if (kept.Add(numpy[i])) shrinks.push_back(static_cast<int>(i));
  }
  EXPECT_EQ(shrinks, (std::vector<int>{1023, 1119}));
}

// The paper's Theorem 3: on a stationary input in [0, 1], the window
// shrinks at all with probability at most δ. Over 400 streams (fixed
// seeds) with δ = 0.1, at most the mean 40 plus three deviations.
TEST(AdwinTest, FalseAlarmsOnStationaryInputStayBelowDelta) {
  int alarmed = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    Adwin adwin(0.1, /*clock=*/1);
    for (double x : Bernoulli(0.3, 1000, seed)) {
      if (adwin.Add(x)) {
        ++alarmed;
        break;
      }
    }
  }
  EXPECT_LE(alarmed, 40 + 3 * std::sqrt(400 * 0.1 * 0.9)) << alarmed;
}

TEST(PageHinkleyTest, ARiseBeyondLambdaByHand) {
  PageHinkleyOptions options;
  options.min_instances = 1;
  options.delta = 0.5;
  options.threshold = 2;
  options.alpha = 1;
  options.warning_threshold = 1;
  PageHinkley test(options);
  // x̄: 0, 0, 2, 3.5; m: max(0, 0 − 0 − .5) = 0, 0, 8 − 2 − .5 = 5.5 ...
  EXPECT_EQ(test.Add(0), DriftSignal::kStable);
  EXPECT_EQ(test.statistic(), 0);
  EXPECT_EQ(test.Add(0), DriftSignal::kStable);
  EXPECT_EQ(test.Add(3), DriftSignal::kWarning);  // x̄ = 1, m = 1.5
  EXPECT_EQ(test.statistic(), 1.5);
  EXPECT_EQ(test.Add(3), DriftSignal::kDrift);  // x̄ = 1.5, m = 2.5
  EXPECT_EQ(test.statistic(), 0);               // and it starts afresh
  EXPECT_EQ(test.seen(), 0);
}

TEST(PageHinkleyTest, DetectsWhereRiversExampleSaysItDoes) {
  PageHinkley test(PageHinkleyOptions{});
  std::vector<int> drifts;
  const std::vector<double> values = ReadStream("drift_two_levels.txt");
  for (size_t i = 0; i < values.size(); ++i) {
    if (test.Add(values[i]) == DriftSignal::kDrift) {
      drifts.push_back(static_cast<int>(i));
    }
  }
  ASSERT_FALSE(drifts.empty());
  EXPECT_EQ(drifts[0], 1006);
}

TEST(DdmTest, WarnsAndDetectsWhereRiversExampleSaysItDoes) {
  Ddm ddm(DdmOptions{});
  std::vector<std::string> said;  // as River's example prints them
  bool print_warning = true;
  const std::vector<double> values = ReadStream("drift_error_rise.txt");
  for (size_t i = 0; i < values.size(); ++i) {
    const DriftSignal s = ddm.Add(values[i] == 1);
    if (s == DriftSignal::kWarning && print_warning) {
      said.push_back("warning " + std::to_string(i));
      print_warning = false;
    }
    if (s == DriftSignal::kDrift) {
      said.push_back("drift " + std::to_string(i));
      print_warning = true;
    }
  }
  EXPECT_EQ(said, (std::vector<std::string>{"warning 1084", "drift 1334",
                                            "warning 1492"}));
}

DriftOptions Options(DriftOptions::Method method) {
  DriftOptions options;
  options.method = method;
  return options;
}

// An error rate that rises from 0.1 to 0.6 after 2000 examples.
std::vector<double> AbruptRise(uint64_t seed) {
  std::vector<double> values = Bernoulli(0.1, 2000, seed);
  const std::vector<double> after = Bernoulli(0.6, 2000, seed + 1000);
  values.insert(values.end(), after.begin(), after.end());
  return values;
}

TEST(DriftDetectorTest, EachMethodWarnsThenDetectsAnAbruptRise) {
  for (auto method :
       {DriftOptions::Method::kAdwin, DriftOptions::Method::kPageHinkley,
        DriftOptions::Method::kDdm}) {
    DriftOptions options = Options(method);
    options.page_hinkley.warning_threshold = 25;
    DriftDetector detector(options);
    const std::vector<double> values = AbruptRise(3);
    for (size_t i = 0; i < values.size(); ++i) {
      detector.Add(values[i] == 1, values[i], i + 1);
    }
    const DriftStats s = detector.stats();
    SCOPED_TRACE(static_cast<int>(method));
    EXPECT_GE(s.drifts, 1u);
    EXPECT_GT(s.last_drift_at, 2000u);
    EXPECT_LT(s.last_drift_at, 2400u);
    EXPECT_GE(s.warnings, 1u);
    EXPECT_GT(s.last_warning_at, 2000u);
  }
}

TEST(DriftDetectorTest, AnImprovementIsNoDrift) {
  DriftDetector detector(Options(DriftOptions::Method::kAdwin));
  std::vector<double> values = Bernoulli(0.6, 2000, 5);
  const std::vector<double> after = Bernoulli(0.1, 2000, 6);
  values.insert(values.end(), after.begin(), after.end());
  for (size_t i = 0; i < values.size(); ++i) {
    detector.Add(values[i] == 1, 0.0, i + 1);
  }
  EXPECT_EQ(detector.stats().drifts, 0u);
  EXPECT_LT(detector.stats().width, 2100);  // yet the window moved on
}

TEST(DriftDetectorTest, ReadsTheLossWhenAskedTo) {
  DriftOptions options = Options(DriftOptions::Method::kPageHinkley);
  options.input = DriftOptions::Input::kLoss;
  options.page_hinkley.min_instances = 1;
  options.page_hinkley.threshold = 3;
  DriftDetector detector(options);
  EXPECT_EQ(detector.Add(false, 0.0, 1), DriftSignal::kStable);
  EXPECT_EQ(detector.Add(false, 10.0, 2), DriftSignal::kDrift);  // m = 5
}

TEST(DriftDetectorTest, ContinuesAlikeFromItsExportedState) {
  for (auto method :
       {DriftOptions::Method::kAdwin, DriftOptions::Method::kPageHinkley,
        DriftOptions::Method::kDdm}) {
    SCOPED_TRACE(static_cast<int>(method));
    const std::vector<double> values = AbruptRise(9);
    DriftDetector whole(Options(method));
    DriftDetector first(Options(method));
    for (size_t i = 0; i < 2100; ++i) {
      whole.Add(values[i] == 1, values[i], i + 1);
      first.Add(values[i] == 1, values[i], i + 1);
    }
    DriftDetector second(Options(method));
    ASSERT_TRUE(second.Import(first.Export()).ok());
    std::vector<DriftSignal> a, b;
    for (size_t i = 2100; i < values.size(); ++i) {
      a.push_back(whole.Add(values[i] == 1, values[i], i + 1));
      b.push_back(second.Add(values[i] == 1, values[i], i + 1));
    }
    EXPECT_EQ(a, b);
    EXPECT_EQ(whole.Export(), second.Export());
  }
}

TEST(DriftDetectorTest, KeepsTheTimesOfItsLastFindings) {
  DriftOptions options = Options(DriftOptions::Method::kPageHinkley);
  options.input = DriftOptions::Input::kLoss;
  options.page_hinkley.min_instances = 1;
  options.page_hinkley.threshold = 3;
  options.page_hinkley.warning_threshold = 2;
  DriftDetector detector(options);
  detector.Add(false, 0.0, 1, 1000);
  // m = 5.5 − 2.75 − δ: past the warning level, short of the drift's.
  EXPECT_EQ(detector.Add(false, 5.5, 2, 2000), DriftSignal::kWarning);
  EXPECT_EQ(detector.Add(false, 10.0, 3, 3000), DriftSignal::kDrift);
  DriftStats stats = detector.stats();
  EXPECT_EQ(stats.last_warning_micros, 2000);
  EXPECT_EQ(stats.last_drift_micros, 3000);

  DriftDetector copy(options);
  ASSERT_TRUE(copy.Import(detector.Export()).ok());
  EXPECT_EQ(copy.stats().last_warning_micros, 2000);
  EXPECT_EQ(copy.stats().last_drift_micros, 3000);
  // A state exported before times were kept: the same findings, no times.
  std::vector<double> old = detector.Export();
  old.resize(old.size() - 2);
  DriftDetector from_old(options);
  ASSERT_TRUE(from_old.Import(old).ok());
  EXPECT_EQ(from_old.stats().last_drift_at, 3u);
  EXPECT_EQ(from_old.stats().last_drift_micros, 0);
  std::vector<double> bad = detector.Export();
  bad.back() = -1;
  EXPECT_FALSE(copy.Import(bad).ok());
}

TEST(DriftDetectorTest, RefusesAStateThatDoesNotFit) {
  DriftDetector adwin(Options(DriftOptions::Method::kAdwin));
  for (int i = 0; i < 100; ++i) adwin.Add(i % 3 == 0, 0.0, i + 1);
  const std::vector<double> good = adwin.Export();
  DriftDetector ddm(Options(DriftOptions::Method::kDdm));
  EXPECT_FALSE(ddm.Import(good).ok());  // another method's
  std::vector<double> bad = good;
  bad.pop_back();
  EXPECT_FALSE(adwin.Import(bad).ok());
  bad = good;
  bad.push_back(0);
  EXPECT_FALSE(adwin.Import(bad).ok());
  bad = good;
  bad[0] = 3;  // no such signal
  EXPECT_FALSE(adwin.Import(bad).ok());
  bad = good;
  bad[7] += 1;  // the width no longer matches the buckets
  EXPECT_FALSE(adwin.Import(bad).ok());
  bad = good;
  bad[8] = NAN;
  EXPECT_FALSE(adwin.Import(bad).ok());
  EXPECT_EQ(adwin.Export(), good);  // a refused state changes nothing
}

TEST(DriftDetectorTest, AWarningZoneCountsOnceWhereItBegan) {
  DriftOptions options = Options(DriftOptions::Method::kPageHinkley);
  options.page_hinkley = {1, 0.0, 100, 1, 1};  // δ = 0, warn past 1
  DriftDetector detector(options);
  detector.Add(false, 0, 1);
  // m = Σ (1 − x̄_t): 1/2, 5/6, then 13/12 at the fourth value, and on.
  for (uint64_t i = 2; i <= 12; ++i) detector.Add(true, 0, i);
  const DriftStats s = detector.stats();
  EXPECT_EQ(s.signal, DriftSignal::kWarning);
  EXPECT_EQ(s.warnings, 1u);
  EXPECT_EQ(s.last_warning_at, 4u);
  EXPECT_EQ(s.drifts, 0u);
  EXPECT_EQ(RecentState(s, 12, 10), DriftSignal::kWarning);
  EXPECT_EQ(RecentState(s, 14, 10), DriftSignal::kStable);
  DriftStats drifted = s;
  drifted.last_drift_at = 13;
  EXPECT_EQ(RecentState(drifted, 14, 10), DriftSignal::kDrift);
  EXPECT_EQ(RecentState(drifted, 23, 10), DriftSignal::kStable);
}

TEST(DriftDetectorTest, ChecksItsSettings) {
  DriftOptions o = Options(DriftOptions::Method::kAdwin);
  EXPECT_TRUE(CheckDriftOptions(o).ok());
  o.adwin_delta = 0;
  EXPECT_FALSE(CheckDriftOptions(o).ok());
  o.adwin_delta = 0.05;  // above the warning delta
  EXPECT_FALSE(CheckDriftOptions(o).ok());
  o.adwin_warning_delta = 0;  // no warnings
  EXPECT_TRUE(CheckDriftOptions(o).ok());
  o = Options(DriftOptions::Method::kPageHinkley);
  o.page_hinkley.warning_threshold = 60;  // above λ
  EXPECT_FALSE(CheckDriftOptions(o).ok());
  o = Options(DriftOptions::Method::kDdm);
  o.ddm.warning_level = 3;  // not below the drift level
  EXPECT_FALSE(CheckDriftOptions(o).ok());
  o.ddm.warning_level = NAN;
  EXPECT_FALSE(CheckDriftOptions(o).ok());
}

}  // namespace
}  // namespace halfspace
