// The write-ahead log's records: each change to a model, encoded as a
// halfspace.storage.v1.LogRecord (proto/halfspace/storage/v1/storage.proto).

#ifndef HALFSPACE_CORE_STORAGE_LOG_RECORD_H_
#define HALFSPACE_CORE_STORAGE_LOG_RECORD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model/model_state.h"
#include "core/training/batch.h"
#include "core/training/journal.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {

// A model created from `snapshot`: fresh when its weights are empty.
std::string CreateRecord(const ModelSnapshot& snapshot);

// A batch of training examples or of delayed feedback (see batch.h).
std::string TrainRecord(const TrainBatch& batch);

// Examples remembered for delayed feedback (see Model::Remember).
std::string RememberRecord(const RememberBatch& batch);

// The context a logged change to pending examples was made in, and back.
void ToProto(int64_t now_micros, const PendingLimits& limits,
             storage::v1::PendingContext& out);
PendingLimits LimitsOf(const storage::v1::PendingContext& context);

std::string SetWeightsRecord(absl::string_view class_label,
                             absl::Span<const double> w, double b);

std::string DeleteRecord();

std::string RollBackRecord();

// New drift settings (see Model::SetDrift), and back.
std::string SetDriftRecord(const DriftOptions& drift);
DriftOptions DriftOf(const storage::v1::SetDrift& change);

// A model's whole state, replacing what it was.
std::string RestoreRecord(const ModelSnapshot& snapshot);

// DATA_LOSS if `payload` is not a LogRecord with a change.
absl::StatusOr<storage::v1::LogRecord> DecodeRecord(absl::string_view payload);

// A journal of LogRecords: the batches it is handed become records as the
// functions above encode them, appended as bytes by the implementation
// (the write-ahead log).
class RecordJournal : public Journal {
 public:
  absl::StatusOr<uint64_t> Append(absl::string_view model,
                                  const TrainBatch& batch) final;
  absl::StatusOr<uint64_t> Append(absl::string_view model,
                                  const RememberBatch& batch) final;
  using Journal::Append;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_LOG_RECORD_H_
