#include "server/convert.h"

#include <cmath>

#include "server/status.h"

namespace halfspace {

absl::StatusOr<ModelSpec> SpecFromRequest(const v1::CreateModelRequest& req) {
  ModelSpec spec;
  switch (req.algorithm()) {
    case v1::PERCEPTRON:
      spec.algorithm = Algorithm::kPerceptron;
      break;
    case v1::LOGISTIC_REGRESSION:
      spec.algorithm = Algorithm::kLogisticRegression;
      break;
    default:
      return absl::InvalidArgumentError(
          "algorithm must be set: PERCEPTRON or LOGISTIC_REGRESSION");
  }
  spec.dimension = req.dimension();
  const v1::Hyperparameters& h = req.hyperparameters();
  if (h.learning_rate() != 0.0) spec.learning_rate = h.learning_rate();
  spec.l2 = h.l2();
  return spec;
}

void ToProto(const Model& model, v1::Model* out) {
  const ModelSpec& spec = model.spec();
  out->set_name(model.name());
  out->set_algorithm(spec.algorithm == Algorithm::kPerceptron
                         ? v1::PERCEPTRON
                         : v1::LOGISTIC_REGRESSION);
  out->set_dimension(spec.dimension);
  out->mutable_hyperparameters()->set_learning_rate(spec.learning_rate);
  out->mutable_hyperparameters()->set_l2(spec.l2);

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
}

void ToProto(const ExampleOutcome& outcome, v1::ExampleResult* out) {
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
}

void ToProto(const Prediction& prediction, v1::Prediction* out) {
  out->set_label(prediction.label);
  out->set_score(prediction.score);
  if (prediction.signed_distance.has_value()) {
    out->set_signed_distance(*prediction.signed_distance);
  }
  if (prediction.probability.has_value()) {
    out->set_probability(*prediction.probability);
  }
}

}  // namespace halfspace
