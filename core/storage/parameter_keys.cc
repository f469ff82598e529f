#include "core/storage/parameter_keys.h"

#include <variant>

namespace halfspace {
namespace {

// Every parameter, as a number under a key that never changes meaning.
enum Key : uint32_t {
  kLearningRate = 1,
  kL2 = 2,
  kMarginThreshold = 3,
  kLoss = 4,
  kPenalty = 5,
  kAlpha = 6,
  kL1Ratio = 7,
  kSchedule = 8,
  kPowerT = 9,
  kAverageFrom = 10,
  kPaVariant = 11,
  kAggressiveness = 12,
  kRatchet = 13,
  kPredictWithPocket = 14,
  kOneVsRest = 15,
  kStandardize = 16,
  kHashBits = 17,
  kInterceptDecay = 18,
  kFitIntercept = 19,
  kCwVariant = 20,
  kPhi = 21,
  kR = 22,
  kMaxVectors = 23,
  kProgressWindow = 24,
};

}  // namespace

KeyedValues KeyedParameters(const ModelSpec& spec) {
  KeyedValues out = {{kOneVsRest, spec.one_vs_rest ? 1.0 : 0.0},
                     {kStandardize, spec.standardize ? 1.0 : 0.0},
                     {kHashBits, double(spec.hash_bits)},
                     {kFitIntercept, spec.fit_intercept ? 1.0 : 0.0},
                     {kProgressWindow, double(spec.progress_window)}};
  auto add = [&out](std::initializer_list<std::pair<uint32_t, double>> kv) {
    out.insert(out.end(), kv);
  };
  std::visit(
      Overloaded{
          [&](const PerceptronParams& p) {
            add({{kLearningRate, p.learning_rate},
                 {kMarginThreshold, p.margin_threshold}});
          },
          [&](const LogisticRegressionParams& p) {
            add({{kLearningRate, p.learning_rate}, {kL2, p.l2}});
          },
          [&](const AveragedPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate},
                 {kMarginThreshold, p.margin_threshold}});
          },
          [&](const PassiveAggressiveParams& p) {
            add({{kPaVariant, double(p.variant)},
                 {kAggressiveness, p.aggressiveness},
                 {kInterceptDecay, p.intercept_decay},
                 {kAverageFrom, double(p.average_from)}});
          },
          [&](const SgdParams& p) {
            const SgdOptions& o = p.options;
            add({{kLearningRate, p.learning_rate},
                 {kLoss, double(o.loss)},
                 {kPenalty, double(o.penalty)},
                 {kAlpha, o.alpha},
                 {kL1Ratio, o.l1_ratio},
                 {kSchedule, double(o.schedule)},
                 {kPowerT, o.power_t},
                 {kAverageFrom, double(o.average_from)},
                 {kInterceptDecay, o.intercept_decay}});
          },
          [&](const PocketPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate},
                 {kRatchet, p.ratchet ? 1.0 : 0.0},
                 {kPredictWithPocket, p.predict_with_pocket ? 1.0 : 0.0}});
          },
          [&](const MulticlassPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate}});
          },
          [&](const SoftmaxRegressionParams& p) {
            add({{kLearningRate, p.learning_rate}, {kL2, p.l2}});
          },
          [&](const ConfidenceWeightedParams& p) {
            add({{kCwVariant, double(p.variant)},
                 {kPhi, p.phi},
                 {kR, p.r},
                 {kAggressiveness, p.aggressiveness}});
          },
          [&](const VotedPerceptronParams& p) {
            add({{kMaxVectors, double(p.max_vectors)}});
          },
      },
      spec.algorithm);
  return out;
}

bool SetParameters(uint32_t id, const KeyedValues& values, ModelSpec& spec) {
  auto get = [&](Key key, auto fallback) {
    for (const auto& [k, v] : values) {
      if (k == key) return static_cast<decltype(fallback)>(v);
    }
    return fallback;
  };
  spec.one_vs_rest = get(kOneVsRest, 0.0) != 0.0;
  spec.standardize = get(kStandardize, 0.0) != 0.0;
  spec.hash_bits = get(kHashBits, 0);
  spec.fit_intercept = get(kFitIntercept, 1.0) != 0.0;
  // Out of range (a damaged file) becomes 0, which validation refuses.
  const double window = get(kProgressWindow, double(kDefaultProgressWindow));
  spec.progress_window =
      window >= 1 && window <= kMaxProgressWindow ? int64_t(window) : 0;
  switch (static_cast<Algorithm>(id)) {
    case Algorithm::kPerceptron: {
      PerceptronParams p;
      spec.algorithm =
          PerceptronParams{get(kLearningRate, p.learning_rate),
                           get(kMarginThreshold, p.margin_threshold)};
      return true;
    }
    case Algorithm::kLogisticRegression: {
      LogisticRegressionParams p;
      spec.algorithm = LogisticRegressionParams{
          get(kLearningRate, p.learning_rate), get(kL2, p.l2)};
      return true;
    }
    case Algorithm::kAveragedPerceptron:
      spec.algorithm = AveragedPerceptronParams{get(kLearningRate, 1.0),
                                                get(kMarginThreshold, 0.0)};
      return true;
    case Algorithm::kPassiveAggressive: {
      PassiveAggressiveParams p;
      spec.algorithm =
          PassiveAggressiveParams{PaVariant(get(kPaVariant, int(p.variant))),
                                  get(kAggressiveness, p.aggressiveness),
                                  get(kInterceptDecay, p.intercept_decay),
                                  get(kAverageFrom, p.average_from)};
      return true;
    }
    case Algorithm::kSgd: {
      SgdParams p;
      SgdOptions& o = p.options;
      p.learning_rate = get(kLearningRate, p.learning_rate);
      o.loss = LossKind(get(kLoss, int(o.loss)));
      o.penalty = Penalty(get(kPenalty, int(o.penalty)));
      o.alpha = get(kAlpha, o.alpha);
      o.l1_ratio = get(kL1Ratio, o.l1_ratio);
      o.schedule = Schedule(get(kSchedule, int(o.schedule)));
      o.power_t = get(kPowerT, o.power_t);
      o.average_from = get(kAverageFrom, o.average_from);
      o.intercept_decay = get(kInterceptDecay, o.intercept_decay);
      spec.algorithm = p;
      return true;
    }
    case Algorithm::kPocketPerceptron: {
      PocketPerceptronParams p;
      p.learning_rate = get(kLearningRate, p.learning_rate);
      p.ratchet = get(kRatchet, 1.0) != 0.0;
      p.predict_with_pocket = get(kPredictWithPocket, 1.0) != 0.0;
      spec.algorithm = p;
      return true;
    }
    case Algorithm::kMulticlassPerceptron:
      spec.algorithm = MulticlassPerceptronParams{get(kLearningRate, 1.0)};
      return true;
    case Algorithm::kSoftmaxRegression: {
      SoftmaxRegressionParams p;
      spec.algorithm = SoftmaxRegressionParams{
          get(kLearningRate, p.learning_rate), get(kL2, p.l2)};
      return true;
    }
    case Algorithm::kConfidenceWeighted: {
      ConfidenceWeightedParams p;
      p.variant = CwVariant(get(kCwVariant, int(p.variant)));
      p.phi = get(kPhi, p.phi);
      p.r = get(kR, p.r);
      p.aggressiveness = get(kAggressiveness, p.aggressiveness);
      spec.algorithm = p;
      return true;
    }
    case Algorithm::kVotedPerceptron: {
      VotedPerceptronParams p;
      // Out of range (a damaged file) becomes 0, which validation refuses.
      const double v = get(kMaxVectors, double(p.max_vectors));
      p.max_vectors = v >= 1 && v <= kMaxVotedVectors ? int64_t(v) : 0;
      spec.algorithm = p;
      return true;
    }
  }
  return false;
}

}  // namespace halfspace
