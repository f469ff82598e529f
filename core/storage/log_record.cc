#include "core/storage/log_record.h"

#include "core/storage/snapshot_codec.h"

namespace halfspace {

std::string CreateRecord(const ModelSnapshot& snapshot) {
  storage::v1::LogRecord record;
  ToModelFile(snapshot, *record.mutable_create());
  return record.SerializeAsString();
}

std::string TrainRecord(absl::string_view request, absl::string_view source,
                        uint64_t first_sequence,
                        absl::Span<const uint32_t> refused) {
  storage::v1::LogRecord record;
  storage::v1::TrainBatch* batch = record.mutable_train();
  batch->set_request(request.data(), request.size());
  batch->set_source(source.data(), source.size());
  batch->set_first_sequence(first_sequence);
  batch->mutable_refused()->Add(refused.begin(), refused.end());
  return record.SerializeAsString();
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

std::string RestoreRecord(const ModelSnapshot& snapshot) {
  storage::v1::LogRecord record;
  ToModelFile(snapshot, *record.mutable_restore());
  return record.SerializeAsString();
}

absl::StatusOr<storage::v1::LogRecord> DecodeRecord(absl::string_view payload) {
  storage::v1::LogRecord record;
  if (!record.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
      record.change_case() == storage::v1::LogRecord::CHANGE_NOT_SET) {
    return absl::DataLossError("a log record that holds no change");
  }
  return record;
}

}  // namespace halfspace
