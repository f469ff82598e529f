// Selective sampling's trade-off (Cesa-Bianchi, Gentile & Zaniboni, 2006):
// labels asked against mistakes made, for a few values of b, beside the
// perceptron that sees every label. Deterministic: the streams come from a
// fixed seed and the draws from each example's id, so every run prints the
// same table. Asserts nothing.
//
// Each stream has 20,000 examples in d = 10: x uniform on [-1, 1]^d, y the
// side of a fixed hyperplane through the origin, examples within 0.05 of it
// left out (so the separable stream has a margin); the noisy stream flips
// 10% of the labels. Every example is predicted before its label is known
// and a wrong prediction is a mistake, asked or not. Two learners per b:
// the paper's, which learns an asked label as the perceptron would (an
// unweighted model's), and one that learns it with its importance weight
// 1/p (the default).

#include "core/monitors/selective_sampling.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/algorithms/perceptron.h"

namespace halfspace {
namespace {

constexpr int kDimension = 10;
constexpr int kExamples = 20000;

struct Example {
  std::vector<double> x;
  int y;
};

double Uniform(std::mt19937_64& bits) {
  return static_cast<double>(bits() >> 11) * 0x1p-53;
}

std::vector<Example> Stream(double flip) {
  std::mt19937_64 bits(2006);
  std::vector<double> w(kDimension);
  for (double& wi : w) wi = 2 * Uniform(bits) - 1;
  double norm = 0;
  for (double wi : w) norm += wi * wi;
  norm = std::sqrt(norm);
  std::vector<Example> out;
  while (out.size() < kExamples) {
    Example e{std::vector<double>(kDimension), 0};
    double dot = 0;
    for (int j = 0; j < kDimension; ++j) {
      e.x[j] = 2 * Uniform(bits) - 1;
      dot += w[j] * e.x[j];
    }
    if (std::fabs(dot) / norm < 0.05) continue;
    e.y = dot >= 0 ? 1 : -1;
    if (Uniform(bits) < flip) e.y = -e.y;
    out.push_back(std::move(e));
  }
  return out;
}

struct Run {
  int asked = 0;
  int mistakes = 0;
};

// b = 0: every label.
Run Learn(const std::vector<Example>& stream, double b, bool unweighted) {
  Perceptron perceptron(kDimension, 1.0);
  const SelectiveSampling sampling{b, 1, unweighted};
  Run run;
  for (size_t i = 0; i < stream.size(); ++i) {
    const Example& e = stream[i];
    const double score = perceptron.Score(e.x);
    run.mistakes += (score >= 0 ? 1 : -1) != e.y;
    double weight = 1;
    if (b > 0) {
      const LabelQuery q = QueryLabel(sampling, score, absl::StrCat(i));
      if (!q.ask) continue;
      weight = q.weight;
    }
    ++run.asked;
    perceptron.Learn(e.x, e.y, weight);
  }
  return run;
}

void Table(const char* name, const std::vector<Example>& stream) {
  const Run all = Learn(stream, 0, true);
  std::printf("| %s | every label | %d | %d | |\n", name, all.asked,
              all.mistakes);
  for (double b : {0.1, 1.0, 10.0, 100.0}) {
    const Run paper = Learn(stream, b, true);
    const Run weighted = Learn(stream, b, false);
    std::printf("| %s | b = %g | %d (%.1f%%) | %d | %d |\n", name, b,
                paper.asked, 100.0 * paper.asked / kExamples, paper.mistakes,
                weighted.mistakes);
  }
}

}  // namespace
}  // namespace halfspace

int main() {
  using halfspace::Stream;
  using halfspace::Table;
  std::printf(
      "| stream | labels | asked | mistakes, weight 1 | mistakes, weight 1/p "
      "|\n"
      "|---|---|---:|---:|---:|\n");
  Table("separable", Stream(0.0));
  Table("10% noise", Stream(0.1));
  return 0;
}
