// A producer's message on a replicated model's stream, as a replica reads
// it: its first byte picks the format header (none, protobuf, csv, libsvm,
// vw, or one no producer uses), the rest are the message's bytes. Decoded
// for each model's kind, then prepared and learned as the replica does.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "server/producer_message.h"
#include "server/train_batch.h"
#include "tests/fuzz/fuzz_models.h"

namespace halfspace {
namespace {

void Check(bool invariant) {
  if (!invariant) __builtin_trap();
}

constexpr const char* kFormats[] = {"",       "protobuf", "csv",
                                    "libsvm", "vw",       "avro"};

}  // namespace
}  // namespace halfspace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  if (size == 0) return 0;
  const absl::string_view format =
      kFormats[data[0] % (sizeof(kFormats) / sizeof(kFormats[0]))];
  const absl::string_view message(reinterpret_cast<const char*>(data) + 1,
                                  size - 1);
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  std::vector<std::unique_ptr<Model>> models = FuzzModels(budget);
  const size_t lines = std::count(message.begin(), message.end(), '\n') + 1;
  for (std::unique_ptr<Model>& model : models) {
    absl::StatusOr<ProducerBatch> batch =
        DecodeProducerMessage(format, message, model->multiclass());
    if (!batch.ok()) continue;
    Check(batch->left_out.size() <= kReportedLines + 1);
    v1::TrainRequest request;
    Check(request.ParseFromString(batch->request));
    const bool text = !format.empty() && format != "protobuf";
    if (text) Check(static_cast<size_t>(request.examples_size()) <= lines);
    TrainScratch scratch;
    Check(PrepareRequest(*model, request, scratch).ok());
    TrainBatch train;
    train.source = batch->source;
    train.first_sequence = batch->first_sequence;
    (void)LearnPrepared(Trainer(nullptr), *model, request, train, scratch);
  }
  return 0;
}
