#include "server/convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/status.h"

namespace halfspace {

namespace {

// One proto enum value and its core counterpart.
template <typename Proto, typename Core>
struct EnumPair {
  Proto proto;
  Core core;
};

constexpr EnumPair<v1::Sgd::Loss, LossKind> kLosses[] = {
    {v1::Sgd::LOSS_HINGE, LossKind::kHinge},
    {v1::Sgd::LOSS_SQUARED_HINGE, LossKind::kSquaredHinge},
    {v1::Sgd::LOSS_MODIFIED_HUBER, LossKind::kModifiedHuber},
    {v1::Sgd::LOSS_LOG, LossKind::kLog},
    {v1::Sgd::LOSS_EXPONENTIAL, LossKind::kExponential},
    {v1::Sgd::LOSS_PERCEPTRON, LossKind::kPerceptron},
};
constexpr EnumPair<v1::Sgd::Penalty, Penalty> kPenalties[] = {
    {v1::Sgd::PENALTY_NONE, Penalty::kNone},
    {v1::Sgd::PENALTY_L2, Penalty::kL2},
    {v1::Sgd::PENALTY_L1, Penalty::kL1},
    {v1::Sgd::PENALTY_ELASTIC_NET, Penalty::kElasticNet},
};
constexpr EnumPair<v1::Sgd::Schedule, Schedule> kSchedules[] = {
    {v1::Sgd::SCHEDULE_CONSTANT, Schedule::kConstant},
    {v1::Sgd::SCHEDULE_OPTIMAL, Schedule::kOptimal},
    {v1::Sgd::SCHEDULE_INVERSE_SCALING, Schedule::kInverseScaling},
    {v1::Sgd::SCHEDULE_ADAGRAD, Schedule::kAdaGrad},
};
constexpr EnumPair<v1::PassiveAggressive::Variant, PaVariant> kPaVariants[] = {
    {v1::PassiveAggressive::VARIANT_PA, PaVariant::kPa},
    {v1::PassiveAggressive::VARIANT_PA_I, PaVariant::kPaI},
    {v1::PassiveAggressive::VARIANT_PA_II, PaVariant::kPaII},
};
constexpr EnumPair<v1::ConfidenceWeighted::Variant, CwVariant> kCwVariants[] = {
    {v1::ConfidenceWeighted::VARIANT_CW, CwVariant::kCw},
    {v1::ConfidenceWeighted::VARIANT_AROW, CwVariant::kArow},
    {v1::ConfidenceWeighted::VARIANT_SCW_I, CwVariant::kScwI},
    {v1::ConfidenceWeighted::VARIANT_SCW_II, CwVariant::kScwII},
    {v1::ConfidenceWeighted::VARIANT_NHERD, CwVariant::kNherd},
};

// The core value of `value`; its zero (UNSPECIFIED) value keeps `out` as it
// is, the default. INVALID_ARGUMENT for a value this server does not know.
template <typename Proto, typename Core, size_t N>
absl::Status FromProto(const EnumPair<Proto, Core> (&pairs)[N], Proto value,
                       const char* field, Core& out) {
  if (value == Proto{}) return absl::OkStatus();
  for (const auto& pair : pairs) {
    if (pair.proto == value) {
      out = pair.core;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has the unknown value ", static_cast<int>(value)));
}

template <typename Proto, typename Core, size_t N>
Proto ToProto(const EnumPair<Proto, Core> (&pairs)[N], Core value) {
  for (const auto& pair : pairs) {
    if (pair.core == value) return pair.proto;
  }
  return Proto{};
}

}  // namespace

namespace {

absl::StatusOr<AlgorithmParams> FromProto(const v1::Algorithm& algorithm) {
  switch (algorithm.algorithm_case()) {
    case v1::Algorithm::kPerceptron: {
      const v1::Perceptron& m = algorithm.perceptron();
      PerceptronParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_margin_threshold()) p.margin_threshold = m.margin_threshold();
      return p;
    }
    case v1::Algorithm::kAveragedPerceptron: {
      const v1::AveragedPerceptron& m = algorithm.averaged_perceptron();
      AveragedPerceptronParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_margin_threshold()) p.margin_threshold = m.margin_threshold();
      return p;
    }
    case v1::Algorithm::kPocketPerceptron: {
      const v1::PocketPerceptron& m = algorithm.pocket_perceptron();
      PocketPerceptronParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_ratchet()) p.ratchet = m.ratchet();
      if (m.has_predict_with_pocket()) {
        p.predict_with_pocket = m.predict_with_pocket();
      }
      return p;
    }
    case v1::Algorithm::kPassiveAggressive: {
      const v1::PassiveAggressive& m = algorithm.passive_aggressive();
      PassiveAggressiveParams p;
      if (m.has_aggressiveness()) p.aggressiveness = m.aggressiveness();
      if (m.has_intercept_decay()) p.intercept_decay = m.intercept_decay();
      if (m.has_average_from()) p.average_from = m.average_from();
      absl::Status s = FromProto(kPaVariants, m.variant(),
                                 "passive_aggressive.variant", p.variant);
      if (!s.ok()) return s;
      return p;
    }
    case v1::Algorithm::kLogisticRegression: {
      const v1::LogisticRegression& m = algorithm.logistic_regression();
      LogisticRegressionParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_l2()) p.l2 = m.l2();
      return p;
    }
    case v1::Algorithm::kSgd: {
      const v1::Sgd& m = algorithm.sgd();
      SgdParams p;
      SgdOptions& o = p.options;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_alpha()) o.alpha = m.alpha();
      if (m.has_l1_ratio()) o.l1_ratio = m.l1_ratio();
      if (m.has_power_t()) o.power_t = m.power_t();
      if (m.has_average_from()) o.average_from = m.average_from();
      if (m.has_intercept_decay()) o.intercept_decay = m.intercept_decay();
      for (absl::Status s :
           {FromProto(kLosses, m.loss(), "sgd.loss", o.loss),
            FromProto(kPenalties, m.penalty(), "sgd.penalty", o.penalty),
            FromProto(kSchedules, m.schedule(), "sgd.schedule", o.schedule)}) {
        if (!s.ok()) return s;
      }
      return p;
    }
    case v1::Algorithm::kMulticlassPerceptron: {
      const v1::MulticlassPerceptron& m = algorithm.multiclass_perceptron();
      MulticlassPerceptronParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      return p;
    }
    case v1::Algorithm::kSoftmaxRegression: {
      const v1::SoftmaxRegression& m = algorithm.softmax_regression();
      SoftmaxRegressionParams p;
      if (m.has_learning_rate()) p.learning_rate = m.learning_rate();
      if (m.has_l2()) p.l2 = m.l2();
      return p;
    }
    case v1::Algorithm::kConfidenceWeighted: {
      const v1::ConfidenceWeighted& m = algorithm.confidence_weighted();
      ConfidenceWeightedParams p;
      if (m.has_phi()) p.phi = m.phi();
      if (m.has_r()) p.r = m.r();
      if (m.has_aggressiveness()) p.aggressiveness = m.aggressiveness();
      absl::Status s = FromProto(kCwVariants, m.variant(),
                                 "confidence_weighted.variant", p.variant);
      if (!s.ok()) return s;
      return p;
    }
    case v1::Algorithm::kVotedPerceptron: {
      const v1::VotedPerceptron& m = algorithm.voted_perceptron();
      VotedPerceptronParams p;
      if (m.has_max_vectors()) p.max_vectors = m.max_vectors();
      return p;
    }
    case v1::Algorithm::ALGORITHM_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "algorithm must be set to one algorithm, e.g. algorithm { perceptron "
      "{} }");
}

// Every parameter, with the value in effect.
void ToProto(const AlgorithmParams& params, v1::Algorithm* out) {
  std::visit(
      Overloaded{
          [&](const PerceptronParams& p) {
            v1::Perceptron* m = out->mutable_perceptron();
            m->set_learning_rate(p.learning_rate);
            m->set_margin_threshold(p.margin_threshold);
          },
          [&](const AveragedPerceptronParams& p) {
            v1::AveragedPerceptron* m = out->mutable_averaged_perceptron();
            m->set_learning_rate(p.learning_rate);
            m->set_margin_threshold(p.margin_threshold);
          },
          [&](const PocketPerceptronParams& p) {
            v1::PocketPerceptron* m = out->mutable_pocket_perceptron();
            m->set_learning_rate(p.learning_rate);
            m->set_ratchet(p.ratchet);
            m->set_predict_with_pocket(p.predict_with_pocket);
          },
          [&](const PassiveAggressiveParams& p) {
            v1::PassiveAggressive* m = out->mutable_passive_aggressive();
            m->set_variant(ToProto(kPaVariants, p.variant));
            m->set_aggressiveness(p.aggressiveness);
            m->set_intercept_decay(p.intercept_decay);
            m->set_average_from(p.average_from);
          },
          [&](const LogisticRegressionParams& p) {
            v1::LogisticRegression* m = out->mutable_logistic_regression();
            m->set_learning_rate(p.learning_rate);
            m->set_l2(p.l2);
          },
          [&](const SgdParams& p) {
            v1::Sgd* m = out->mutable_sgd();
            const SgdOptions& o = p.options;
            m->set_learning_rate(p.learning_rate);
            m->set_loss(ToProto(kLosses, o.loss));
            m->set_penalty(ToProto(kPenalties, o.penalty));
            m->set_alpha(o.alpha);
            m->set_l1_ratio(o.l1_ratio);
            m->set_schedule(ToProto(kSchedules, o.schedule));
            m->set_power_t(o.power_t);
            m->set_average_from(o.average_from);
            m->set_intercept_decay(o.intercept_decay);
          },
          [&](const MulticlassPerceptronParams& p) {
            out->mutable_multiclass_perceptron()->set_learning_rate(
                p.learning_rate);
          },
          [&](const SoftmaxRegressionParams& p) {
            v1::SoftmaxRegression* m = out->mutable_softmax_regression();
            m->set_learning_rate(p.learning_rate);
            m->set_l2(p.l2);
          },
          [&](const ConfidenceWeightedParams& p) {
            v1::ConfidenceWeighted* m = out->mutable_confidence_weighted();
            m->set_variant(ToProto(kCwVariants, p.variant));
            m->set_phi(p.phi);
            m->set_r(p.r);
            m->set_aggressiveness(p.aggressiveness);
          },
          [&](const VotedPerceptronParams& p) {
            out->mutable_voted_perceptron()->set_max_vectors(
                static_cast<uint32_t>(p.max_vectors));
          },
      },
      params);
}

}  // namespace

absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req) {
  absl::StatusOr<AlgorithmParams> algorithm = FromProto(req.algorithm());
  if (!algorithm.ok()) return algorithm.status();
  ModelSpec spec;
  spec.algorithm = *std::move(algorithm);
  spec.dimension = req.dimension();
  spec.one_vs_rest = req.one_vs_rest();
  spec.standardize = req.standardize();
  spec.fit_intercept = !req.has_fit_intercept() || req.fit_intercept();
  if (req.has_progress_window()) spec.progress_window = req.progress_window();
  spec.hash_bits = static_cast<int>(std::min(req.hash_bits(), 1u << 30));
  for (const v1::Interaction& i : req.interactions()) {
    spec.interactions.push_back({i.first_group(), i.second_group()});
  }
  return spec;
}

void ToProto(const Model& model, v1::Model* out) {
  const ModelSpec& spec = model.spec();
  out->set_name(model.name());
  ToProto(spec.algorithm, out->mutable_algorithm());
  out->set_dimension(spec.dimension);
  out->set_one_vs_rest(spec.one_vs_rest);
  out->set_standardize(spec.standardize);
  out->set_fit_intercept(spec.fit_intercept);
  out->set_progress_window(static_cast<uint32_t>(spec.progress_window));
  out->set_hash_bits(spec.hash_bits);
  for (const Interaction& i : spec.interactions) {
    v1::Interaction* pair = out->add_interactions();
    pair->set_first_group(i.first);
    pair->set_second_group(i.second);
  }
  for (std::string& label : model.classes()) {
    out->add_classes(std::move(label));
  }

  ToProto(model.Stats(), out->mutable_stats());
}

void ToProto(const ModelStats& stats, v1::ModelStats* s) {
  const ModelCounters& c = stats.counters;
  s->set_examples_seen(c.examples_seen);
  s->set_updates(c.updates);
  s->set_mistakes(c.mistakes);
  s->set_average_loss(c.examples_seen == 0 ? 0.0
                                           : c.loss_sum / c.examples_seen);
  s->set_weight_norm(stats.weight_norm);
  s->set_max_example_norm(std::sqrt(c.max_squared_norm));
  s->set_bias(stats.bias);
  s->set_progressive_accuracy(c.examples_seen == 0
                                  ? 0.0
                                  : 1.0 - static_cast<double>(c.mistakes) /
                                              c.examples_seen);
  s->set_pending_waiting(stats.pending.waiting);
  s->set_pending_remembered(stats.pending.counters.remembered);
  s->set_pending_joined(stats.pending.counters.joined);
  s->set_pending_expired(stats.pending.counters.expired);
  s->set_pending_bytes(stats.pending.bytes);
  const ProgressWindow::Summary& w = stats.window;
  s->set_window_examples(w.examples);
  s->set_window_accuracy(w.accuracy);
  s->set_window_loss(w.loss);
  s->set_decayed_accuracy(w.decayed_accuracy);
  s->set_decayed_loss(w.decayed_loss);
}

void ToProto(const PairedCounts& counts, double alpha, v1::PairedTest* out) {
  const uint64_t b = counts.only_peer_wrong;  // only the first wrong
  const uint64_t c = counts.only_self_wrong;
  out->set_examples(counts.examples);
  out->set_both_wrong(counts.both_wrong);
  out->set_only_first_wrong(b);
  out->set_only_this_wrong(c);
  out->set_accuracy_difference(
      counts.examples == 0 ? 0.0
                           : (static_cast<double>(b) - static_cast<double>(c)) /
                                 static_cast<double>(counts.examples));
  const McNemarTest test = McNemar(b, c);
  out->set_chi_square(test.chi_square);
  out->set_p_value(test.p_value);
  out->set_significant(test.p_value < alpha);
}

namespace {

// The scores of classes `classes` (empty: of every class, in order).
void AddClassScores(absl::Span<const double> scores,
                    absl::Span<const double> probabilities,
                    const std::vector<std::string>& class_names,
                    google::protobuf::RepeatedPtrField<v1::ClassScore>* out,
                    absl::Span<const int> classes = {}) {
  out->Reserve(out->size() + scores.size());
  for (size_t k = 0; k < scores.size(); ++k) {
    v1::ClassScore* c = out->Add();
    c->set_label(class_names[classes.empty() ? k : classes[k]]);
    c->set_score(scores[k]);
    if (!probabilities.empty()) c->set_probability(probabilities[k]);
  }
}

}  // namespace

void ToProto(const PassCounters& counters, v1::TrainSummary* out) {
  out->set_examples(counters.examples);
  out->set_updates(counters.updates);
  out->set_mistakes(counters.mistakes);
  out->set_loss_sum(counters.loss_sum);
  out->set_duplicates(counters.duplicates);
}

void ToProto(const ExampleOutcome& outcome,
             const std::vector<std::string>& class_names,
             v1::ExampleResult* out) {
  if (!outcome.error.ok()) {
    ToRpcStatus(outcome.error, out->mutable_error());
    return;
  }
  if (outcome.duplicate) {
    out->set_duplicate(true);
    return;
  }
  const Update& u = outcome.update;
  out->set_score(u.score);
  out->set_margin(u.margin);
  out->set_predicted_label(u.predicted_label);
  out->set_updated(u.updated);
  out->set_loss(u.loss);
  if (u.probability.has_value()) out->set_probability(*u.probability);
  out->set_examples_seen(outcome.examples_seen);
  out->set_updates(outcome.updates);
  if (outcome.predicted_class >= 0) {
    out->set_predicted_class(class_names[outcome.predicted_class]);
    AddClassScores(outcome.class_scores, outcome.class_probabilities,
                   class_names, out->mutable_class_scores());
  }
}

void ToProto(const Listing& listing, v1::Model* out) {
  if (listing.model != nullptr) {
    ToProto(*listing.model, out);
    return;
  }
  out->set_name(listing.name);
  out->set_unavailable_reason(std::string(listing.unavailable.message()));
}

void ToProto(const Prediction& prediction,
             const std::vector<std::string>& class_names, v1::Prediction* out) {
  if (prediction.predicted_class >= 0) {
    out->set_predicted_class(class_names[prediction.predicted_class]);
    AddClassScores(prediction.class_scores, prediction.class_probabilities,
                   class_names, out->mutable_class_scores(),
                   prediction.classes);
    return;
  }
  out->set_label(prediction.label);
  out->set_score(prediction.score);
  if (prediction.signed_distance.has_value()) {
    out->set_signed_distance(*prediction.signed_distance);
  }
  if (prediction.probability.has_value()) {
    out->set_probability(*prediction.probability);
  }
}

void ToProto(uint64_t pass, const PassCounters& counters,
             const ModelStats& stats, v1::PassSummary* out) {
  out->set_pass(pass);
  out->set_examples(counters.examples);
  out->set_updates(counters.updates);
  out->set_mistakes(counters.mistakes);
  out->set_average_loss(
      counters.examples == 0 ? 0.0 : counters.loss_sum / counters.examples);
  out->set_converged(counters.examples > 0 && counters.updates == 0);
  out->set_weight_norm(stats.weight_norm);
  out->set_bias(stats.bias);
  out->set_max_example_norm(std::sqrt(stats.counters.max_squared_norm));
}

void ToProto(const ModelSnapshot& weights, v1::GetWeightsResponse* out) {
  out->mutable_weights()->Add(weights.weights.w.begin(),
                              weights.weights.w.end());
  out->set_bias(weights.weights.b);
  for (size_t k = 0; k < weights.classes.size(); ++k) {
    v1::ClassWeights* row = out->add_classes();
    row->set_label(weights.classes[k]);
    const LinearWeights& w = weights.class_weights[k];
    row->mutable_weights()->Add(w.w.begin(), w.w.end());
    row->set_bias(w.b);
  }
}

size_t EvaluateResponseBound(const Evaluation& e, bool confusion) {
  // A ClassMetrics besides its label: a varint, three doubles, the label's
  // tag and length and its own; a confusion label's tag and length.
  constexpr size_t kClassBytes = 11 + 3 * 9 + 3 + 3 + 3;
  size_t bound = 1024;  // the counts, the first error and the framing
  if (!e.first_error().ok()) bound += e.first_error().message().size();
  for (const std::string& label : e.classes()) {
    bound += kClassBytes + 2 * label.size();
  }
  if (confusion) {  // packed varints: 1 byte for a 0, at most 10 otherwise
    const size_t n = e.classes().size();
    bound += n * n + 9 * e.nonzero_cells() + 6;
  }
  return bound;
}

void ToProto(const Evaluation& e, bool confusion, v1::EvaluateResponse* out) {
  out->set_examples(e.examples());
  out->set_rejected(e.rejected());
  if (!e.first_error().ok()) {
    ToRpcStatus(e.first_error(), out->mutable_first_error());
  }
  out->set_accuracy(e.accuracy());
  const int n = static_cast<int>(e.classes().size());
  for (int cls = 0; cls < n; ++cls) {
    const Evaluation::ClassMetrics m = e.metrics(cls);
    v1::ClassMetrics* c = out->add_classes();
    c->set_label(e.classes()[cls]);
    c->set_support(m.support);
    c->set_precision(m.precision);
    c->set_recall(m.recall);
    c->set_f1(m.f1);
    out->add_confusion_labels(e.classes()[cls]);
  }
  if (confusion) {
    out->mutable_confusion()->Reserve(n * n);
    for (int t = 0; t < n; ++t) {
      for (int p = 0; p < n; ++p) out->add_confusion(e.confusion(t, p));
    }
  }
  if (e.log_loss().has_value()) out->set_log_loss(*e.log_loss());
}

FeatureInput FromProto(const v1::FeatureVector& x,
                       std::vector<NamedFeature>& named) {
  named.clear();
  for (const v1::NamedFeature& f : x.named()) {
    named.push_back(
        NamedFeature{f.group(), f.name(), f.has_value() ? f.value() : 1.0});
  }
  FeatureInput input(absl::MakeConstSpan(x.dense()));
  if (x.has_sparse()) {
    input.has_sparse = true;
    input.sparse_indices = absl::MakeConstSpan(x.sparse().indices());
    input.sparse_values = absl::MakeConstSpan(x.sparse().values());
  }
  input.named = named;
  return input;
}

Example FromProto(const v1::Example& example,
                  std::vector<NamedFeature>& named) {
  return Example{FromProto(example.features(), named), example.label(),
                 example.has_weight() ? example.weight() : 1.0,
                 example.class_label()};
}

}  // namespace halfspace
