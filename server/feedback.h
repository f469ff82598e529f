// Delayed labels over the API: a Predict that remembers its instances, and
// a Feedback that learns them once their labels come (see
// core/monitors/pending_examples.h for what is kept, and for how long).
//
// A remembered instance keeps its FeatureVector as the request carried it;
// feedback turns the remembered instances and their labels into the
// examples a Train stream would have sent, and learns them as the stream
// does, so that the model ends bit for bit where that stream would have left
// it. The log holds the ids and labels (the features are in the log's
// earlier record or the snapshot), so recovery learns them again alike
// (see PrepareFeedback).

#ifndef HALFSPACE_SERVER_FEEDBACK_H_
#define HALFSPACE_SERVER_FEEDBACK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/model/model.h"
#include "core/monitors/selective_sampling.h"
#include "core/registry/model_registry.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/predict.h"
#include "server/service_parts.h"

namespace halfspace {

using Instances = google::protobuf::RepeatedPtrField<v1::FeatureVector>;
using ExampleIds = google::protobuf::RepeatedPtrField<std::string>;

// INVALID_ARGUMENT unless a request's `remember`, `query` and `ids` are
// usable: no ids, or with remember or query one valid id per instance, all
// different; a query without remember needs the ids. Checked before
// predicting.
absl::Status CheckExampleIds(bool remember, bool query, const ExampleIds& ids,
                             int instances);

// Remembers `instances` on `model` under `ids` (or ids it makes, if none)
// and names each id in its prediction; with `query`, also answers each
// prediction's label query and remembers its importance weight. Sets `lsn`
// to the record logged. On error nothing is remembered. Every replica of a
// replicated model remembers them, through its stream.
absl::Status RememberInstances(
    Model& model, const ServiceParts& parts, const Instances& instances,
    const ExampleIds& ids, bool query,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions,
    uint64_t& lsn);

// What a label query reads (see selective_sampling.h): a binary model's
// score f(x); a multiclass model's gap between its two highest class
// scores, 0 with fewer than two (`prediction` holds every class's score, or
// at least the two highest).
double QueryMargin(bool multiclass, const v1::Prediction& prediction);

// Answers a prediction's label query (PredictRequest.query) for a model of
// `spec`, from its QueryMargin and `example_id`. Returns the importance
// weight of the prediction's label.
double AnswerQuery(const ModelSpec& spec, const std::string& example_id,
                   v1::Prediction& prediction);

// Keeps the `top_k` highest class scores of each prediction a query made
// read more of (see PredictAndRemember); none when top_k is unset.
void TrimClassScores(
    std::optional<int64_t> top_k,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions);

// Predicts for a PredictRequest or PredictStreamRequest (see PredictInto)
// on the model `name` names or points to, into `response`'s predictions and
// model, and, if it asks to, remembers its instances, which needs the train
// permission; sets `lsn` to the record its answer waits for.
template <typename Request, typename Response>
absl::Status PredictAndRemember(const ServiceParts& parts,
                                const Principal& principal,
                                const std::string& name, const Request& request,
                                PredictScratch& scratch, const StopCheck& stop,
                                Response& response, uint64_t& lsn) {
  if (request.remember()) {
    if (absl::Status s = principal.Check(Permission::kTrain, name); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          CheckExampleIds(request.remember(), request.query(),
                          request.example_ids(), request.instances_size());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::shared_ptr<Model>> model = parts.registry->Lookup(name);
  if (!model.ok()) return model.status();
  const SelectiveSampling& sampling = (*model)->spec().sampling;
  if (request.query() && !Enabled(sampling)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", Quoted((*model)->name()),
        " does not sample labels: create it with selective_sampling to "
        "query"));
  }
  PredictOptions options = PredictOptionsFor(request, parts.max_message_bytes);
  // A multiclass query reads the two highest class scores, whatever the
  // request asked to see.
  std::optional<int64_t> top_k;
  if (request.query() && (*model)->multiclass() && options.top_k >= 0 &&
      options.top_k < 2) {
    top_k = options.top_k;
    options.top_k = 2;
  }
  absl::Status status = PredictInto(**model, parts.registry->budget().limits(),
                                    request.instances(), options, scratch, stop,
                                    *response.mutable_predictions());
  if (!status.ok()) return status;
  response.set_model((*model)->name());
  if (!request.remember()) {
    if (request.query()) {
      for (int i = 0; i < request.instances_size(); ++i) {
        AnswerQuery((*model)->spec(), request.example_ids(i),
                    *response.mutable_predictions(i));
      }
    }
  } else {
    status = RememberInstances(**model, parts, request.instances(),
                               request.example_ids(), request.query(),
                               *response.mutable_predictions(), lsn);
  }
  TrimClassScores(top_k, *response.mutable_predictions());
  return status;
}

// Learns the request's feedback on `model` and answers one result per
// feedback; sets `lsn` to the record logged (0 if none was learned).
// RESOURCE_EXHAUSTED, learning nothing, if the response could pass
// parts.max_message_bytes. A replicated model learns it through its
// stream, every replica alike (`lsn` stays 0).
absl::Status LearnFeedback(Model& model, const ServiceParts& parts,
                           const v1::FeedbackRequest& request,
                           const StopCheck& stop,
                           v1::FeedbackResponse& response, uint64_t& lsn);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_FEEDBACK_H_
