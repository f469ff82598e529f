// The drift reaction (core/model/drift_reaction.h) against the model left
// alone: an averaged perceptron with a detector, reacting (a challenger at
// the warning, a switch when McNemar's test finds it better, alpha = 0.05)
// or only reporting, on streams with known drifts (tests/drift_streams.h).
// Deterministic (fixed seeds); asserts nothing.
//
// - A reversal: the stationary hyperplane (d = 10, 10% noise), y = −y from
//   example 20,000 on, 10 streams of 40,000.
// - SEA concepts, 10% noise, drifts at 10,000, 20,000 and 30,000, 10
//   streams of 40,000.
// - Stationary: the hyperplane, still, 10% noise, 10 streams of 40,000:
//   every switch is a false one.
//
// For each drift: whether a switch followed it (before the next drift) and
// how soon, the mistakes in the 500 and the 2,000 examples after it,
// and the examples until the model recovers: until its mistakes over the
// last 200 examples are no more than over the 1,000 before the drift (as a
// rate) plus 2 points; capped at the next drift.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/model/model.h"
#include "tests/drift_streams.h"

namespace halfspace {
namespace {

constexpr int kStreams = 10;
constexpr int kExamples = 40000;

struct Run {
  std::vector<bool> mistakes;    // per example, before its update
  std::vector<size_t> switches;  // where (1-based)
};

Run Learn(DriftOptions drift, bool challenge,
          const std::vector<LabeledPoint>& points) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  spec.dimension = static_cast<int64_t>(points.front().x.size());
  drift.challenge = challenge;
  spec.drift = drift;
  std::unique_ptr<Model> model = *Model::Create("m", spec);
  Run run;
  std::vector<ExampleOutcome> out(1);
  for (const LabeledPoint& p : points) {
    const Example e{p.x, p.y};
    if (!model->Learn({e}, absl::MakeSpan(out)).ok()) std::abort();
    run.mistakes.push_back(out[0].mistake);
    if (out[0].reaction == ReactionEvent::kSwitched) {
      run.switches.push_back(out[0].examples_seen);
    }
  }
  return run;
}

int Count(const std::vector<bool>& m, size_t from, size_t to) {
  return static_cast<int>(std::count(m.begin() + from, m.begin() + to, true));
}

// Examples after `at` until the mistakes over the last 200 fall to the
// rate over the 1,000 before `at` plus 2 points; `end` - `at` if never.
size_t Recovery(const std::vector<bool>& m, size_t at, size_t end) {
  const double before = Count(m, at - 1000, at) / 1000.0;
  int window = 0;
  for (size_t t = at; t < end; ++t) {
    window += m[t] ? 1 : 0;
    if (t >= at + 200) window -= m[t - 200] ? 1 : 0;
    if (t >= at + 199 && window / 200.0 <= before + 0.02) return t + 1 - at;
  }
  return end - at;
}

// Sums over the drifts of the streams.
struct Tally {
  int drifts = 0;
  int switches = 0;
  int switched_drifts = 0;  // drifts followed by a switch before the next
  long switch_delay = 0;    // the first such switch's, summed
  long mistakes_500 = 0;
  long mistakes_2000 = 0;
  long recovery = 0;

  void Add(const Run& run, const std::vector<size_t>& at_drifts, size_t n) {
    switches += static_cast<int>(run.switches.size());
    for (size_t k = 0; k < at_drifts.size(); ++k) {
      const size_t at = at_drifts[k];
      const size_t end = k + 1 < at_drifts.size() ? at_drifts[k + 1] : n;
      ++drifts;
      mistakes_500 += Count(run.mistakes, at, at + 500);
      mistakes_2000 += Count(run.mistakes, at, at + 2000);
      recovery += static_cast<long>(Recovery(run.mistakes, at, end));
      auto first = std::find_if(run.switches.begin(), run.switches.end(),
                                [at](size_t p) { return p > at; });
      if (first != run.switches.end() && *first <= end) {
        ++switched_drifts;
        switch_delay += static_cast<long>(*first - at);
      }
    }
  }
};

void Row(const char* stream, const char* detector, bool challenge,
         const Tally& t) {
  const double d = t.drifts;
  std::printf("| %s | %s | %s | %d of %d, %.0f | %.1f | %.1f | %.0f |\n",
              stream, detector, challenge ? "challenger" : "none",
              t.switched_drifts, t.drifts,
              t.switched_drifts > 0
                  ? static_cast<double>(t.switch_delay) / t.switched_drifts
                  : 0.0,
              t.mistakes_500 / d, t.mistakes_2000 / d, t.recovery / d);
}

}  // namespace
}  // namespace halfspace

int main() {
  using halfspace::DriftOptions;
  std::printf(
      "| stream | detector | reaction | drifts switched after, mean delay | "
      "mistakes in 500 after a drift | in 2,000 | examples to recover |\n"
      "|---|---|---|---:|---:|---:|---:|\n");
  DriftOptions adwin;
  adwin.method = DriftOptions::Method::kAdwin;
  DriftOptions ddm;
  ddm.method = DriftOptions::Method::kDdm;
  const struct {
    const char* name;
    DriftOptions options;
  } detectors[] = {{"adwin", adwin}, {"ddm", ddm}};
  for (const auto& detector : detectors) {
    for (bool challenge : {false, true}) {
      halfspace::Tally reversal, sea, stationary;
      for (int s = 0; s < halfspace::kStreams; ++s) {
        std::vector<halfspace::LabeledPoint> points = halfspace::Reversed(
            halfspace::Stationary(halfspace::kExamples, 10, 0.1, 400 + s),
            halfspace::kExamples / 2);
        reversal.Add(halfspace::Learn(detector.options, challenge, points),
                     {halfspace::kExamples / 2}, points.size());
        points =
            halfspace::SeaConcepts(halfspace::kExamples, 10000, 0.1, 100 + s);
        sea.Add(halfspace::Learn(detector.options, challenge, points),
                {10000, 20000, 30000}, points.size());
        points = halfspace::Stationary(halfspace::kExamples, 10, 0.1, 300 + s);
        stationary.Add(halfspace::Learn(detector.options, challenge, points),
                       {}, points.size());
      }
      halfspace::Row("reversal", detector.name, challenge, reversal);
      halfspace::Row("SEA", detector.name, challenge, sea);
      std::printf("| stationary | %s | %s | %d switches | | | |\n",
                  detector.name, challenge ? "challenger" : "none",
                  stationary.switches);
    }
  }
  return 0;
}
