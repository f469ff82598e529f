#include "server/convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/algorithm_proto.h"
#include "server/drift_proto.h"
#include "server/status.h"

namespace halfspace {

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
  spec.window_losses = req.window_losses();
  if (req.has_drift()) {
    absl::StatusOr<DriftOptions> drift = FromProto(req.drift());
    if (!drift.ok()) return drift.status();
    spec.drift = *drift;
  }
  if (req.has_selective_sampling()) {
    const v1::SelectiveSampling& s = req.selective_sampling();
    if (s.b() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("selective_sampling.b is 0; it must be in (0, ",
                       kMaxSamplingB, "]: larger asks for more labels"));
    }
    spec.sampling = {s.b(), s.seed(), s.unweighted()};
  }
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
  out->set_multiclass(IsMulticlass(spec));
  out->set_standardize(spec.standardize);
  out->set_fit_intercept(spec.fit_intercept);
  out->set_progress_window(static_cast<uint32_t>(spec.progress_window));
  out->set_window_losses(spec.window_losses);
  if (spec.drift.method != DriftOptions::Method::kNone) {
    ToProto(spec.drift, out->mutable_drift());
  }
  if (Enabled(spec.sampling)) {
    out->mutable_selective_sampling()->set_b(spec.sampling.b);
    out->mutable_selective_sampling()->set_seed(spec.sampling.seed);
    out->mutable_selective_sampling()->set_unweighted(spec.sampling.unweighted);
  }
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
  s->set_nonzero_weights(stats.nonzero_weights);
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
  if (w.loss.has_value()) s->set_window_loss(*w.loss);
  s->set_decayed_accuracy(w.decayed_accuracy);
  s->set_decayed_loss(w.decayed_loss);
  if (stats.drift.has_value()) ToProto(*stats.drift, s->mutable_drift());
}

void ToProto(const PairedComparison& comparison, v1::PairedTest* out) {
  const PairedCounts& counts = comparison.counts;
  out->set_examples(counts.examples);
  out->set_both_wrong(counts.both_wrong);
  out->set_only_first_wrong(counts.only_peer_wrong);
  out->set_only_this_wrong(counts.only_self_wrong);
  out->set_accuracy_difference(comparison.accuracy_difference);
  out->set_chi_square(comparison.test.chi_square);
  out->set_p_value(comparison.test.p_value);
  out->set_significant(comparison.significant);
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
  if (outcome.drift.has_value()) out->set_drift(ToProto(*outcome.drift));
  if (outcome.reaction != ReactionEvent::kNone) {
    out->set_reaction(ToProto(outcome.reaction));
  }
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

FeatureInput FromProto(const v1::FeatureVector& x, NamedParts& parts) {
  std::vector<NamedFeature>& named = parts.named;
  named.clear();
  for (const v1::NamedFeature& f : x.named()) {
    named.push_back(
        NamedFeature{f.group(), f.name(), f.has_value() ? f.value() : 1.0});
  }
  std::vector<HashedGroup>& hashed = parts.hashed;
  hashed.clear();
  for (const v1::HashedGroup& g : x.hashed()) {
    hashed.push_back(HashedGroup{g.group(), absl::MakeConstSpan(g.hashes()),
                                 absl::MakeConstSpan(g.values())});
  }
  FeatureInput input(absl::MakeConstSpan(x.dense()));
  if (x.has_sparse()) {
    input.has_sparse = true;
    input.sparse_indices = absl::MakeConstSpan(x.sparse().indices());
    input.sparse_values = absl::MakeConstSpan(x.sparse().values());
  }
  input.named = named;
  input.hashed = hashed;
  return input;
}

Example FromProto(const v1::Example& example, NamedParts& parts) {
  return Example{FromProto(example.features(), parts), example.label(),
                 example.has_weight() ? example.weight() : 1.0,
                 example.class_label()};
}

}  // namespace halfspace
