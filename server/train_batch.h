// Learning one TrainRequest's examples: shared by the Train stream and by
// recovery, which replays the requests the write-ahead log holds, so that
// both learn exactly alike.

#ifndef HALFSPACE_SERVER_TRAIN_BATCH_H_
#define HALFSPACE_SERVER_TRAIN_BATCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/registry/model_registry.h"
#include "core/training/journal.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// Buffers reused from request to request, so that a stream does not
// allocate per example after its first few messages.
struct TrainScratch {
  std::vector<NamedFeature> named;        // one example's, while preparing it
  std::vector<PreparedExample> prepared;  // only grows: scratch is reused
  std::vector<ExampleOutcome> outcomes;   // one per example of the request
  std::vector<std::string> class_names;   // the model's classes, cached
};

// Checks and featurizes the request's examples (no lock held) into
// scratch.prepared; CANCELLED once `stop` says so.
absl::Status PrepareRequest(const Model& model, const v1::TrainRequest& request,
                            TrainScratch& scratch,
                            const StopCheck& stop = nullptr);

// An upper bound on the size of the prepared request's TrainResponse,
// whatever learning brings (a new class per example, errors).
size_t ResponseSizeBound(const Model& model, const v1::TrainRequest& request,
                         const TrainScratch& scratch);

// Learns the prepared request as Model::Learn does with `batch`; the
// outcomes are in scratch.outcomes. The prepared examples are scratch's
// own, or `prepared`'s when given (prepared by a model that PreparesLike
// this one).
absl::Status LearnPrepared(Model& model, const v1::TrainRequest& request,
                           Batch& batch, TrainScratch& scratch,
                           const TrainScratch* prepared = nullptr);

// The examples of a logged batch (see ModelRegistry::ExamplesOf); 0 for
// one that does not decode.
uint64_t TrainBatchExamples(const storage::v1::TrainBatch& record);

// Recovery's replay of a logged batch (see ModelRegistry::TrainReplay).
absl::Status ReplayTrainBatch(Model& model,
                              const storage::v1::TrainBatch& record,
                              Batch& batch);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_TRAIN_BATCH_H_
