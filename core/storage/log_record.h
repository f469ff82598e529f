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
#include "core/monitors/pending_examples.h"
#include "core/training/journal.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {

// A model created from `snapshot`: fresh when its weights are empty.
std::string CreateRecord(const ModelSnapshot& snapshot);

// A batch of examples as the request that carried them, and the examples
// a limit refused (see Batch::refused) and a fan-out stream's peers (see
// Batch::peers).
std::string TrainRecord(absl::string_view request, absl::string_view source,
                        uint64_t first_sequence,
                        absl::Span<const uint32_t> refused = {},
                        absl::Span<const PeerOutcomes> peers = {});

// A batch of delayed feedback: the TrainRequest made of the remembered
// examples and their labels, each joining the id it was remembered under
// (see Batch::example_ids).
std::string FeedbackRecord(absl::string_view request, const Batch& batch);

// Examples remembered for delayed feedback (see Model::Remember).
std::string RememberRecord(absl::Span<const PendingExamples::Entry> entries,
                           int64_t now_micros, const PendingLimits& limits);

// The context a logged change to pending examples was made in, and back.
void ToProto(int64_t now_micros, const PendingLimits& limits,
             storage::v1::PendingContext& out);
PendingLimits LimitsOf(const storage::v1::PendingContext& context);

std::string SetWeightsRecord(absl::string_view class_label,
                             absl::Span<const double> w, double b);

std::string DeleteRecord();

// A model's whole state, replacing what it was.
std::string RestoreRecord(const ModelSnapshot& snapshot);

// DATA_LOSS if `payload` is not a LogRecord with a change.
absl::StatusOr<storage::v1::LogRecord> DecodeRecord(absl::string_view payload);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_LOG_RECORD_H_
