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

constexpr EnumPair<v1::Algorithm, Algorithm> kAlgorithms[] = {
    {v1::ALGORITHM_PERCEPTRON, Algorithm::kPerceptron},
    {v1::ALGORITHM_LOGISTIC_REGRESSION, Algorithm::kLogisticRegression},
    {v1::ALGORITHM_AVERAGED_PERCEPTRON, Algorithm::kAveragedPerceptron},
    {v1::ALGORITHM_PASSIVE_AGGRESSIVE, Algorithm::kPassiveAggressive},
    {v1::ALGORITHM_SGD, Algorithm::kSgd},
    {v1::ALGORITHM_POCKET_PERCEPTRON, Algorithm::kPocketPerceptron},
    {v1::ALGORITHM_MULTICLASS_PERCEPTRON, Algorithm::kMulticlassPerceptron},
    {v1::ALGORITHM_SOFTMAX_REGRESSION, Algorithm::kSoftmaxRegression},
};
constexpr EnumPair<v1::Loss, LossKind> kLosses[] = {
    {v1::LOSS_HINGE, LossKind::kHinge},
    {v1::LOSS_SQUARED_HINGE, LossKind::kSquaredHinge},
    {v1::LOSS_MODIFIED_HUBER, LossKind::kModifiedHuber},
    {v1::LOSS_LOG, LossKind::kLog},
    {v1::LOSS_EXPONENTIAL, LossKind::kExponential},
    {v1::LOSS_PERCEPTRON, LossKind::kPerceptron},
};
constexpr EnumPair<v1::Penalty, Penalty> kPenalties[] = {
    {v1::PENALTY_NONE, Penalty::kNone},
    {v1::PENALTY_L2, Penalty::kL2},
    {v1::PENALTY_L1, Penalty::kL1},
    {v1::PENALTY_ELASTIC_NET, Penalty::kElasticNet},
};
constexpr EnumPair<v1::Schedule, Schedule> kSchedules[] = {
    {v1::SCHEDULE_CONSTANT, Schedule::kConstant},
    {v1::SCHEDULE_OPTIMAL, Schedule::kOptimal},
    {v1::SCHEDULE_INVERSE_SCALING, Schedule::kInverseScaling},
    {v1::SCHEDULE_ADAGRAD, Schedule::kAdaGrad},
};
constexpr EnumPair<v1::PassiveAggressiveVariant, PaVariant> kPaVariants[] = {
    {v1::PA_VARIANT_PA, PaVariant::kPa},
    {v1::PA_VARIANT_PA_I, PaVariant::kPaI},
    {v1::PA_VARIANT_PA_II, PaVariant::kPaII},
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

absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req) {
  ModelSpec spec;
  if (req.algorithm() == v1::ALGORITHM_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "algorithm must be set, e.g. ALGORITHM_PERCEPTRON");
  }
  const v1::Hyperparameters& h = req.hyperparameters();
  SgdOptions& sgd = spec.sgd;
  for (absl::Status s :
       {FromProto(kAlgorithms, req.algorithm(), "algorithm", spec.algorithm),
        FromProto(kLosses, h.loss(), "loss", sgd.loss),
        FromProto(kPenalties, h.penalty(), "penalty", sgd.penalty),
        FromProto(kSchedules, h.schedule(), "schedule", sgd.schedule),
        FromProto(kPaVariants, h.pa_variant(), "pa_variant", spec.pa_variant)}) {
    if (!s.ok()) return s;
  }
  spec.dimension = req.dimension();
  spec.one_vs_rest = req.one_vs_rest();
  spec.standardize = req.standardize();
  spec.hash_bits = static_cast<int>(std::min(req.hash_bits(), 1u << 30));
  for (const v1::Interaction& i : req.interactions()) {
    spec.interactions.push_back({i.first_group(), i.second_group()});
  }
  if (h.learning_rate() != 0.0) spec.learning_rate = h.learning_rate();
  spec.l2 = h.l2();
  spec.margin_threshold = h.margin_threshold();
  if (h.has_alpha()) sgd.alpha = h.alpha();
  if (h.has_l1_ratio()) sgd.l1_ratio = h.l1_ratio();
  if (h.has_power_t()) sgd.power_t = h.power_t();
  sgd.average_from = h.average_from();
  if (h.has_aggressiveness()) spec.aggressiveness = h.aggressiveness();
  if (h.has_ratchet()) spec.ratchet = h.ratchet();
  if (h.has_predict_with_pocket()) {
    spec.predict_with_pocket = h.predict_with_pocket();
  }
  return spec;
}

void ToProto(const Model& model, v1::Model* out) {
  const ModelSpec& spec = model.spec();
  out->set_name(model.name());
  out->set_algorithm(ToProto(kAlgorithms, spec.algorithm));
  out->set_dimension(spec.dimension);
  out->set_one_vs_rest(spec.one_vs_rest);
  out->set_standardize(spec.standardize);
  out->set_hash_bits(spec.hash_bits);
  for (const Interaction& i : spec.interactions) {
    v1::Interaction* pair = out->add_interactions();
    pair->set_first_group(i.first);
    pair->set_second_group(i.second);
  }
  for (std::string& label : model.classes()) {
    out->add_classes(std::move(label));
  }
  v1::Hyperparameters* h = out->mutable_hyperparameters();
  switch (spec.algorithm) {
    case Algorithm::kPerceptron:
      h->set_learning_rate(spec.learning_rate);
      h->set_margin_threshold(spec.margin_threshold);
      break;
    case Algorithm::kLogisticRegression:
    case Algorithm::kSoftmaxRegression:
      h->set_learning_rate(spec.learning_rate);
      h->set_l2(spec.l2);
      break;
    case Algorithm::kMulticlassPerceptron:
      h->set_learning_rate(spec.learning_rate);
      break;
    case Algorithm::kAveragedPerceptron:
      h->set_learning_rate(spec.learning_rate);
      break;
    case Algorithm::kPocketPerceptron:
      h->set_learning_rate(spec.learning_rate);
      h->set_ratchet(spec.ratchet);
      h->set_predict_with_pocket(spec.predict_with_pocket);
      break;
    case Algorithm::kPassiveAggressive:
      h->set_pa_variant(ToProto(kPaVariants, spec.pa_variant));
      h->set_aggressiveness(spec.aggressiveness);
      break;
    case Algorithm::kSgd:
      h->set_learning_rate(spec.learning_rate);
      h->set_loss(ToProto(kLosses, spec.sgd.loss));
      h->set_penalty(ToProto(kPenalties, spec.sgd.penalty));
      h->set_alpha(spec.sgd.alpha);
      h->set_l1_ratio(spec.sgd.l1_ratio);
      h->set_schedule(ToProto(kSchedules, spec.sgd.schedule));
      h->set_power_t(spec.sgd.power_t);
      h->set_average_from(spec.sgd.average_from);
      break;
  }

  const ModelStats stats = model.Stats();
  const ModelCounters& c = stats.counters;
  v1::ModelStats* s = out->mutable_stats();
  s->set_examples_seen(c.examples_seen);
  s->set_updates(c.updates);
  s->set_mistakes(c.mistakes);
  s->set_average_loss(c.examples_seen == 0 ? 0.0
                                           : c.loss_sum / c.examples_seen);
  s->set_weight_norm(stats.weight_norm);
  s->set_max_example_norm(std::sqrt(c.max_squared_norm));
  s->set_bias(stats.bias);
  s->set_progressive_accuracy(
      c.examples_seen == 0
          ? 0.0
          : 1.0 - static_cast<double>(c.mistakes) / c.examples_seen);
}

namespace {

void AddClassScores(absl::Span<const double> scores,
                    absl::Span<const double> probabilities,
                    const std::vector<std::string>& class_names,
                    google::protobuf::RepeatedPtrField<v1::ClassScore>* out) {
  for (size_t k = 0; k < scores.size(); ++k) {
    v1::ClassScore* c = out->Add();
    c->set_label(class_names[k]);
    c->set_score(scores[k]);
    if (!probabilities.empty()) c->set_probability(probabilities[k]);
  }
}

}  // namespace

void ToProto(const ExampleOutcome& outcome,
             const std::vector<std::string>& class_names,
             v1::ExampleResult* out) {
  if (!outcome.error.ok()) {
    ToRpcStatus(outcome.error, out->mutable_error());
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

void ToProto(const Prediction& prediction,
             const std::vector<std::string>& class_names,
             v1::Prediction* out) {
  if (prediction.predicted_class >= 0) {
    out->set_predicted_class(class_names[prediction.predicted_class]);
    AddClassScores(prediction.class_scores, prediction.class_probabilities,
                   class_names, out->mutable_class_scores());
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

namespace {

// `sparse` is null when the message has no sparse part.
FeatureInput Input(const google::protobuf::RepeatedField<double>& dense,
                   const v1::SparseVector* sparse,
                   const google::protobuf::RepeatedPtrField<v1::NamedFeature>&
                       named_features,
                   std::vector<NamedFeature>& named) {
  named.clear();
  for (const v1::NamedFeature& f : named_features) {
    named.push_back(
        NamedFeature{f.group(), f.name(), f.has_value() ? f.value() : 1.0});
  }
  FeatureInput input(absl::MakeConstSpan(dense));
  if (sparse != nullptr) {
    input.has_sparse = true;
    input.sparse_indices = absl::MakeConstSpan(sparse->indices());
    input.sparse_values = absl::MakeConstSpan(sparse->values());
  }
  input.named = named;
  return input;
}

}  // namespace

Example FromProto(const v1::Example& example,
                  std::vector<NamedFeature>& named) {
  return Example{
      Input(example.features(),
            example.has_sparse() ? &example.sparse() : nullptr,
            example.named(), named),
      example.label(), example.has_weight() ? example.weight() : 1.0,
      example.class_label()};
}

FeatureInput FromProto(const v1::FeatureVector& x,
                       std::vector<NamedFeature>& named) {
  return Input(x.values(), x.has_sparse() ? &x.sparse() : nullptr, x.named(),
               named);
}

}  // namespace halfspace
