// The drift detectors on streams with known drifts (tests/drift_streams.h):
// how soon each finds an abrupt drift and how often it cries wolf. Each
// detector watches the progressive mistakes of an averaged perceptron, as
// a model's does. Deterministic (fixed seeds); asserts nothing.
//
// - SEA concepts, 40,000 examples, drifts at 10,000, 20,000 and 30,000,
//   10% label noise, 10 streams: of the 30 drifts, how many were found (a
//   drift signalled after one and before the next), the mean and the
//   largest delay of the first such signal, and every other drift signal
//   as a false alarm (per 10,000 examples).
// - A reversal: the stationary stream below with y = −y from example
//   20,000 on: the mean delay of the first drift signal after it (over the
//   10 streams), and how many were found.
// - A rotating hyperplane (gradual drift: d = 10, each weight moving by
//   0.001 an example), 5% noise, 10 streams of 40,000: drift signals per
//   10,000 examples. There is no true position to measure a delay from.
// - Stationary: the same hyperplane, still, 10% noise, 10 streams of
//   40,000: every drift signal is a false alarm.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "tests/drift_streams.h"

namespace halfspace {
namespace {

constexpr int kStreams = 10;
constexpr int kExamples = 40000;
constexpr int kPeriod = 10000;

// The positions (1-based) at which the model's detector signalled a drift.
std::vector<uint64_t> Drifts(const DriftOptions& drift,
                             const std::vector<LabeledPoint>& points) {
  ModelSpec spec;
  spec.algorithm = DefaultParams(Algorithm::kAveragedPerceptron);
  spec.dimension = static_cast<int64_t>(points.front().x.size());
  spec.drift = drift;
  std::unique_ptr<Model> model = *Model::Create("m", spec);
  std::vector<uint64_t> drifts;
  std::vector<ExampleOutcome> out(1);
  for (const LabeledPoint& p : points) {
    const Example e{p.x, p.y};
    if (!model->Learn({e}, absl::MakeSpan(out)).ok()) std::abort();
    if (out[0].drift == DriftSignal::kDrift) {
      drifts.push_back(out[0].examples_seen);
    }
  }
  return drifts;
}

struct Setting {
  const char* name;
  DriftOptions options;
};

std::vector<Setting> Settings() {
  std::vector<Setting> out;
  DriftOptions adwin;
  adwin.method = DriftOptions::Method::kAdwin;
  out.push_back({"adwin, δ = 0.002", adwin});
  adwin.adwin_delta = 0.0002;
  adwin.adwin_warning_delta = 0.002;
  out.push_back({"adwin, δ = 0.0002", adwin});
  DriftOptions page_hinkley;
  page_hinkley.method = DriftOptions::Method::kPageHinkley;
  out.push_back({"page_hinkley, λ = 50", page_hinkley});
  page_hinkley.page_hinkley.threshold = 25;
  out.push_back({"page_hinkley, λ = 25", page_hinkley});
  DriftOptions ddm;
  ddm.method = DriftOptions::Method::kDdm;
  out.push_back({"ddm", ddm});
  return out;
}

double PerTenThousand(int count) {
  return 10000.0 * count / (static_cast<double>(kStreams) * kExamples);
}

void Row(const Setting& setting) {
  int found = 0, false_alarms = 0;
  uint64_t delay_sum = 0, delay_max = 0;
  int rotating = 0, stationary = 0;
  uint64_t reversal_delay = 0;
  int reversals_found = 0;
  for (int s = 0; s < kStreams; ++s) {
    const std::vector<uint64_t> sea =
        Drifts(setting.options, SeaConcepts(kExamples, kPeriod, 0.1, 100 + s));
    for (int k = 1; k * kPeriod < kExamples; ++k) {
      const uint64_t at = static_cast<uint64_t>(k) * kPeriod;
      auto first = std::find_if(sea.begin(), sea.end(),
                                [&](uint64_t p) { return p > at; });
      if (first != sea.end() && *first <= at + kPeriod) {
        ++found;
        delay_sum += *first - at;
        delay_max = std::max(delay_max, *first - at);
      }
    }
    // Every signal but the first after each drift is a false alarm.
    uint64_t last_period = 0;
    for (uint64_t p : sea) {
      const uint64_t period = (p - 1) / kPeriod;
      if (period == 0 || period == last_period) {
        ++false_alarms;
      }
      last_period = period;
    }
    rotating += static_cast<int>(
        Drifts(setting.options,
               RotatingHyperplane(kExamples, 10, 0.001, 0.05, 200 + s))
            .size());
    stationary += static_cast<int>(
        Drifts(setting.options, Stationary(kExamples, 10, 0.1, 300 + s))
            .size());
    const std::vector<LabeledPoint> reversal =
        Reversed(Stationary(kExamples, 10, 0.1, 400 + s), kExamples / 2);
    const std::vector<uint64_t> flipped = Drifts(setting.options, reversal);
    auto first = std::find_if(flipped.begin(), flipped.end(),
                              [](uint64_t p) { return p > kExamples / 2; });
    if (first != flipped.end()) {
      ++reversals_found;
      reversal_delay += *first - kExamples / 2;
    }
  }
  std::printf(
      "| %s | %d of 30 | %.0f | %llu | %.2f | %d of 10, %.0f | %.2f | %.2f |\n",
      setting.name, found,
      found > 0 ? static_cast<double>(delay_sum) / found : 0.0,
      static_cast<unsigned long long>(delay_max), PerTenThousand(false_alarms),
      reversals_found,
      reversals_found > 0
          ? static_cast<double>(reversal_delay) / reversals_found
          : 0.0,
      PerTenThousand(rotating), PerTenThousand(stationary));
}

}  // namespace
}  // namespace halfspace

int main() {
  std::printf(
      "| detector | SEA: drifts found | mean delay | largest delay | SEA: "
      "false alarms / 10k | reversal: found, mean delay | rotating: signals "
      "/ 10k | stationary: false alarms / 10k |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const halfspace::Setting& setting : halfspace::Settings()) {
    halfspace::Row(setting);
  }
  return 0;
}
