// A write-ahead log record's payload as recovery reads it: decoded, and a
// training batch replayed into each kind of model as recovery does (limits
// off, the logged refusals applied).

#include <cstddef>
#include <cstdint>

#include "core/storage/log_record.h"
#include "server/train_batch.h"
#include "tests/fuzz/fuzz_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  absl::StatusOr<storage::v1::LogRecord> record = DecodeRecord(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!record.ok() || !record->has_train()) return 0;
  v1::TrainRequest request;
  // Replay bounds nothing: what was logged passed the limits once. Keep
  // the fuzzer's own inputs to what a server would have accepted.
  if (!request.ParseFromString(record->train().request()) ||
      request.examples_size() > 256) {
    return 0;
  }
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  std::vector<std::unique_ptr<Model>> models = FuzzModels(budget);
  budget->set_enforcing(false);
  for (std::unique_ptr<Model>& model : models) {
    TrainBatch batch;
    batch.source = record->train().source();
    batch.first_sequence = record->train().first_sequence();
    batch.request = record->train().request();
    batch.refused.assign(record->train().refused().begin(),
                         record->train().refused().end());
    (void)ReplayTrainBatch(*model, batch, Trainer(nullptr));
  }
  return 0;
}
