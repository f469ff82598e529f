// A write-ahead log record's payload as recovery reads it: decoded, and a
// training or feedback batch replayed into each kind of model as recovery
// does (limits off, the logged refusals applied; feedback joins examples
// remembered as "a", "b" and "c").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/storage/log_record.h"
#include "server/train_batch.h"
#include "tests/fuzz/fuzz_models.h"

namespace {

void ReplayFeedback(const halfspace::storage::v1::FeedbackBatch& logged) {
  using namespace halfspace;
  if (logged.labels_size() > 256) return;  // as a server would have taken
  std::vector<Feedback> feedback;
  for (const storage::v1::FeedbackLabel& label : logged.labels()) {
    feedback.push_back({label.example_id(), label.label(), label.class_label(),
                        label.has_weight()
                            ? std::optional<double>(label.weight())
                            : std::nullopt});
  }
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  std::vector<std::unique_ptr<Model>> models = FuzzModels(budget);
  budget->set_enforcing(false);
  v1::FeatureVector x;
  x.add_dense(1.0);
  for (std::unique_ptr<Model>& model : models) {
    std::vector<PendingExamples::Entry> remembered;
    for (const char* id : {"a", "b", "c"}) {
      remembered.push_back({id, x.SerializeAsString(), INT64_MAX});
    }
    (void)Trainer(nullptr).Remember(*model, std::move(remembered), 0, {});
    TrainBatch batch;
    batch.feedback = feedback;
    batch.now_micros = logged.pending().now_micros();
    batch.pending_limits = LimitsOf(logged.pending());
    batch.refused.assign(logged.refused().begin(), logged.refused().end());
    (void)ReplayTrainBatch(*model, batch, Trainer(nullptr));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  absl::StatusOr<storage::v1::LogRecord> record = DecodeRecord(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!record.ok()) return 0;
  if (record->has_feedback()) {
    ReplayFeedback(record->feedback());
    return 0;
  }
  if (!record->has_train()) return 0;
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
