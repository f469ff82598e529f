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
#include <string>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/registry/model_registry.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/predict.h"
#include "server/service_parts.h"

namespace halfspace {

using Instances = google::protobuf::RepeatedPtrField<v1::FeatureVector>;
using ExampleIds = google::protobuf::RepeatedPtrField<std::string>;

// INVALID_ARGUMENT unless a request's `remember` and `ids` are usable: no
// ids, or with remember one valid id per instance, all different. Checked
// before predicting.
absl::Status CheckRemember(bool remember, const ExampleIds& ids, int instances);

// Remembers `instances` on `model` under `ids` (or ids it makes, if none)
// and names each id in its prediction; sets `lsn` to the record logged. On
// error nothing is remembered. Every replica of a replicated model
// remembers them, through its stream.
absl::Status RememberInstances(
    Model& model, const ServiceParts& parts, const Instances& instances,
    const ExampleIds& ids,
    google::protobuf::RepeatedPtrField<v1::Prediction>& predictions,
    uint64_t& lsn);

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
  if (absl::Status s = CheckRemember(request.remember(), request.example_ids(),
                                     request.instances_size());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::shared_ptr<Model>> model = parts.registry->Lookup(name);
  if (!model.ok()) return model.status();
  absl::Status status = PredictInto(
      **model, parts.registry->budget().limits(), request.instances(),
      PredictOptionsFor(request, parts.max_message_bytes), scratch, stop,
      *response.mutable_predictions());
  if (!status.ok()) return status;
  response.set_model((*model)->name());
  if (!request.remember()) return status;
  return RememberInstances(**model, parts, request.instances(),
                           request.example_ids(),
                           *response.mutable_predictions(), lsn);
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
