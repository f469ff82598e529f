#include "server/train_batch.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "server/convert.h"
#include "server/status.h"

namespace halfspace {
namespace {

// The most one valid example's result takes without class scores: nine
// scalar fields (varints at their widest) and the entry's own tag and
// length.
constexpr size_t kScalarResultBytes = 80;
// The most an error found while learning takes (a class past the limits).
constexpr size_t kLearnErrorBytes = 512;
// A class score's fields besides its label, and the label's tag and length.
constexpr size_t kClassScoreBytes = 32;
// The pass summary, and the response's own framing.
constexpr size_t kSummaryBytes = 256;

}  // namespace

void PrepareRequest(const Model& model, const v1::TrainRequest& request,
                    TrainScratch& scratch) {
  const int n = request.examples_size();
  if (static_cast<int>(scratch.prepared.size()) < n) {
    scratch.prepared.resize(n);
  }
  for (int i = 0; i < n; ++i) {
    model.Prepare(FromProto(request.examples(i), scratch.named),
                  scratch.prepared[i]);
  }
}

size_t ResponseSizeBound(const Model& model, const v1::TrainRequest& request,
                         const TrainScratch& scratch) {
  const int n = request.examples_size();
  size_t class_bytes = 0;  // every class's score, the classes to come too
  size_t longest_label = 0;
  if (model.multiclass()) {
    absl::flat_hash_set<absl::string_view> seen;
    const std::vector<std::string> classes = model.classes();
    for (const std::string& label : classes) seen.insert(label);
    auto add = [&](absl::string_view label) {
      class_bytes += label.size() + kClassScoreBytes;
      longest_label = std::max(longest_label, label.size());
    };
    for (const std::string& label : classes) add(label);
    for (int i = 0; i < n; ++i) {
      const PreparedExample& e = scratch.prepared[i];
      if (e.error.ok() && seen.insert(e.class_label).second) add(e.class_label);
    }
  }
  const size_t valid = std::max(
      kScalarResultBytes + (model.multiclass()
                                ? longest_label + 8 + class_bytes
                                : 0),
      kLearnErrorBytes);
  size_t bound = kSummaryBytes;
  v1::ExampleResult rejected;
  for (int i = 0; i < n; ++i) {
    const PreparedExample& e = scratch.prepared[i];
    if (e.error.ok()) {
      bound += valid;
    } else {
      ToRpcStatus(e.error, rejected.mutable_error());
      bound += rejected.ByteSizeLong() + 8;
    }
  }
  return bound;
}

absl::Status LearnPrepared(Model& model, const v1::TrainRequest& request,
                           Batch& batch, TrainScratch& scratch) {
  const int n = request.examples_size();
  scratch.outcomes.resize(n);
  return model.Learn(absl::MakeConstSpan(scratch.prepared.data(), n),
                     absl::MakeSpan(scratch.outcomes), &scratch.class_names,
                     &batch);
}

absl::Status ReplayTrainBatch(Model& model,
                              const storage::v1::TrainBatch& record,
                              Batch& batch) {
  v1::TrainRequest request;
  if (!request.ParseFromString(record.request())) {
    return absl::DataLossError("the logged TrainRequest does not decode");
  }
  TrainScratch scratch;
  PrepareRequest(model, request, scratch);
  return LearnPrepared(model, request, batch, scratch);
}

}  // namespace halfspace
