// Making and learning a batch's examples: one TrainRequest's, or delayed
// feedback's. Shared by the Train stream, the Feedback call and recovery,
// which replays the batches the write-ahead log holds, so that all learn
// exactly alike.

#ifndef HALFSPACE_SERVER_TRAIN_BATCH_H_
#define HALFSPACE_SERVER_TRAIN_BATCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/registry/model_registry.h"
#include "core/training/batch.h"
#include "core/training/trainer.h"
#include "halfspace/v1/halfspace.pb.h"
#include "server/convert.h"

namespace halfspace {

// Buffers reused from request to request, so that a stream does not
// allocate per example after its first few messages.
struct TrainScratch {
  NamedParts named;                       // one example's, while preparing it
  std::vector<PreparedExample> prepared;  // only grows: scratch is reused
  std::vector<ExampleOutcome> outcomes;   // one per example of the request
  std::vector<std::string> class_names;   // the model's classes, cached
  // Whether LearnPrepared logs the drifts and warnings the batch's
  // examples brought (not while recovery replays them).
  bool log_drift = true;
};

// Checks and featurizes the request's examples (no lock held) into
// scratch.prepared; CANCELLED once `stop` says so.
absl::Status PrepareRequest(const Model& model, const v1::TrainRequest& request,
                            TrainScratch& scratch,
                            const StopCheck& stop = nullptr);

// The examples of delayed feedback for `model`: each the features
// remembered under its id (as of `now_micros`) with its label, into `train`
// and prepared into `scratch`, as PrepareRequest does. An id that no longer
// waits, or whose features do not decode, gets an example that carries its
// error: the trainer answers it and learns nothing of it. The Feedback call
// and recovery both make their examples here.
absl::Status PrepareFeedback(const Model& model,
                             absl::Span<const Feedback> feedback,
                             int64_t now_micros, v1::TrainRequest& train,
                             TrainScratch& scratch,
                             const StopCheck& stop = nullptr);

// An upper bound on the size of the prepared request's TrainResponse,
// whatever learning brings (a new class per example, errors).
size_t ResponseSizeBound(const Model& model, const v1::TrainRequest& request,
                         const TrainScratch& scratch);

// Trains `model` on the prepared request as `batch` says (see trainer.h);
// the outcomes are in scratch.outcomes. The prepared examples are
// scratch's own, or `prepared`'s when given (prepared by a model that
// PreparesLike this one). Returns the batch's LSN (0 if none).
absl::StatusOr<uint64_t> LearnPrepared(const Trainer& trainer, Model& model,
                                       const v1::TrainRequest& request,
                                       TrainBatch& batch, TrainScratch& scratch,
                                       const TrainScratch* prepared = nullptr);

// The examples of a logged request (see ModelRegistry::ExamplesOf); 0 for
// one that does not decode.
uint64_t TrainBatchExamples(absl::string_view request);

// Learns a logged batch, of examples (its request decoded) or of delayed
// feedback (its examples made by PrepareFeedback), as `batch` says; what
// each example did is in scratch.outcomes. DATA_LOSS for a request that
// does not decode; else as LearnPrepared.
absl::StatusOr<uint64_t> LearnBatch(Model& model, TrainBatch& batch,
                                    const Trainer& trainer,
                                    TrainScratch& scratch);

// Recovery's replay of a logged batch (see ModelRegistry::TrainReplay).
absl::Status ReplayTrainBatch(Model& model, TrainBatch& batch,
                              const Trainer& trainer);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_TRAIN_BATCH_H_
