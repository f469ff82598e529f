#include "core/storage/log_record.h"

#include "core/storage/parameter_keys.h"
#include "core/storage/snapshot_codec.h"

namespace halfspace {

std::string CreateRecord(const ModelSnapshot& snapshot) {
  storage::v1::LogRecord record;
  ToModelFile(snapshot, *record.mutable_create());
  return record.SerializeAsString();
}

namespace {

std::string FeedbackRecord(const TrainBatch& batch) {
  storage::v1::LogRecord record;
  storage::v1::FeedbackBatch* feedback = record.mutable_feedback();
  for (const Feedback& f : batch.feedback) {
    storage::v1::FeedbackLabel* label = feedback->add_labels();
    label->set_example_id(f.id);
    label->set_label(f.label);
    label->set_class_label(f.class_label);
    if (f.weight.has_value()) label->set_weight(*f.weight);
  }
  feedback->mutable_refused()->Add(batch.refused.begin(), batch.refused.end());
  ToProto(batch.now_micros, batch.pending_limits, *feedback->mutable_pending());
  return record.SerializeAsString();
}

}  // namespace

std::string TrainRecord(const TrainBatch& batch) {
  if (!batch.feedback.empty()) return FeedbackRecord(batch);
  storage::v1::LogRecord record;
  storage::v1::TrainBatch* train = record.mutable_train();
  train->set_request(batch.request.data(), batch.request.size());
  train->set_source(batch.source.data(), batch.source.size());
  train->set_first_sequence(batch.first_sequence);
  train->set_follows(batch.follows);
  train->set_now_micros(batch.now_micros);
  train->mutable_refused()->Add(batch.refused.begin(), batch.refused.end());
  for (const PeerOutcomes& peer : batch.peers) {
    storage::v1::PeerOutcomes* out = train->add_peers();
    out->set_model(peer.model.data(), peer.model.size());
    out->set_incarnation(peer.incarnation);
    out->set_outcomes(peer.outcomes.data(), peer.outcomes.size());
  }
  if (!batch.example_ids.empty()) {
    for (const std::string& id : batch.example_ids) train->add_example_ids(id);
    ToProto(batch.now_micros, batch.pending_limits, *train->mutable_pending());
  }
  return record.SerializeAsString();
}

std::string RememberRecord(const RememberBatch& batch) {
  storage::v1::LogRecord record;
  storage::v1::Remember* change = record.mutable_remember();
  for (const PendingExamples::Entry& e : batch.entries) {
    ToStored(e, *change->add_examples());
  }
  ToProto(batch.now_micros, batch.limits, *change->mutable_context());
  return record.SerializeAsString();
}

absl::StatusOr<uint64_t> RecordJournal::Append(absl::string_view model,
                                               const TrainBatch& batch) {
  return Append(model, TrainRecord(batch));
}

absl::StatusOr<uint64_t> RecordJournal::Append(absl::string_view model,
                                               const RememberBatch& batch) {
  return Append(model, RememberRecord(batch));
}

void ToProto(int64_t now_micros, const PendingLimits& limits,
             storage::v1::PendingContext& out) {
  out.set_now_micros(now_micros);
  out.set_max_examples(limits.max_examples);
  out.set_max_bytes(limits.max_bytes);
}

PendingLimits LimitsOf(const storage::v1::PendingContext& context) {
  return {context.max_examples(), context.max_bytes()};
}

std::string SetWeightsRecord(absl::string_view class_label,
                             absl::Span<const double> w, double b) {
  storage::v1::LogRecord record;
  storage::v1::SetWeights* change = record.mutable_set_weights();
  change->set_class_label(class_label.data(), class_label.size());
  change->mutable_weights()->mutable_w()->Assign(w.begin(), w.end());
  change->mutable_weights()->set_b(b);
  return record.SerializeAsString();
}

std::string DeleteRecord() {
  storage::v1::LogRecord record;
  record.mutable_delete_();
  return record.SerializeAsString();
}

std::string RollBackRecord() {
  storage::v1::LogRecord record;
  record.mutable_roll_back();
  return record.SerializeAsString();
}

std::string SetDriftRecord(const DriftOptions& drift) {
  storage::v1::LogRecord record;
  auto& parameters = *record.mutable_set_drift()->mutable_parameters();
  for (const auto& [key, value] : KeyedDriftParameters(drift)) {
    parameters[key] = value;
  }
  return record.SerializeAsString();
}

DriftOptions DriftOf(const storage::v1::SetDrift& change) {
  return DriftFromParameters(
      KeyedValues(change.parameters().begin(), change.parameters().end()));
}

std::string RestoreRecord(const ModelSnapshot& snapshot) {
  storage::v1::LogRecord record;
  ToModelFile(snapshot, *record.mutable_restore());
  return record.SerializeAsString();
}

absl::StatusOr<storage::v1::LogRecord> DecodeRecord(absl::string_view payload) {
  storage::v1::LogRecord record;
  if (!record.ParseFromArray(payload.data(),
                             static_cast<int>(payload.size())) ||
      record.change_case() == storage::v1::LogRecord::CHANGE_NOT_SET) {
    return absl::DataLossError("a log record that holds no change");
  }
  return record;
}

}  // namespace halfspace
