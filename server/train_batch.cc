#include "server/train_batch.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "server/convert.h"
#include "server/status.h"
#include "spdlog/spdlog.h"

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

// The response's framing and summaries, `valid` bytes for each valid
// example, and each rejected example's error with its index.
size_t ErrorsSizeBound(const v1::TrainRequest& request,
                       const TrainScratch& scratch, size_t valid) {
  size_t bound = kSummaryBytes;
  v1::ExampleResult rejected;
  for (int i = 0; i < request.examples_size(); ++i) {
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

// Logs what the model's drift reaction did at an example, if anything.
void LogReaction(const Model& model, const ExampleOutcome& o) {
  switch (o.reaction) {
    case ReactionEvent::kNone:
      return;
    case ReactionEvent::kStarted:
      spdlog::info("model {}: a challenger starts learning after example {}",
                   Quoted(model.name()), o.examples_seen);
      return;
    case ReactionEvent::kDropped:
      spdlog::info(
          "model {}: the challenger was dropped at example {}: no drift "
          "came, or it did not win in time",
          Quoted(model.name()), o.examples_seen);
      return;
    case ReactionEvent::kSwitched:
      spdlog::warn(
          "model {}: the challenger replaced the model's weights at example "
          "{}; the old ones are kept for a roll-back",
          Quoted(model.name()), o.examples_seen);
      return;
  }
}

// Logs a line for each drift, each warning begun, and each step of the
// reaction that learning the outcomes' examples brought.
void LogDrift(const Model& model, absl::Span<const ExampleOutcome> outcomes) {
  for (const ExampleOutcome& o : outcomes) {
    if (o.drift_event && o.drift == DriftSignal::kDrift) {
      spdlog::warn("model {}: drift detected at example {}",
                   Quoted(model.name()), o.examples_seen);
    } else if (o.drift_event) {
      spdlog::info("model {}: drift warning at example {}",
                   Quoted(model.name()), o.examples_seen);
    }
    LogReaction(model, o);
  }
}

}  // namespace

absl::Status PrepareRequest(const Model& model, const v1::TrainRequest& request,
                            TrainScratch& scratch, const StopCheck& stop) {
  const int n = request.examples_size();
  if (static_cast<int>(scratch.prepared.size()) < n) {
    scratch.prepared.resize(n);
  }
  for (int i = 0; i < n; ++i) {
    if (stop && stop()) {
      return absl::CancelledError(
          "the call was cancelled or its deadline passed; this request's "
          "examples were not learned");
    }
    model.Prepare(FromProto(request.examples(i), scratch.named),
                  scratch.prepared[i]);
  }
  return absl::OkStatus();
}

size_t ResponseSizeBound(const Model& model, const v1::TrainRequest& request,
                         const TrainScratch& scratch) {
  const int n = request.examples_size();
  if (request.results() == v1::TRAIN_RESULTS_SUMMARY) {
    // A summary lists only the examples that fail; a valid one can fail
    // only while it is learned.
    return ErrorsSizeBound(request, scratch, kLearnErrorBytes);
  }
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
    // The classes to come: no more than the model's limits leave room for,
    // and the longest of them, whichever come first.
    std::vector<size_t> added;
    for (int i = 0; i < n; ++i) {
      const PreparedExample& e = scratch.prepared[i];
      if (e.error.ok() && seen.insert(e.class_label).second) {
        added.push_back(e.class_label.size());
        longest_label = std::max(longest_label, e.class_label.size());
      }
    }
    const size_t room = std::min<int64_t>(added.size(), model.ClassRoom());
    std::partial_sort(added.begin(), added.begin() + room, added.end(),
                      std::greater<>());
    for (size_t k = 0; k < room; ++k)
      class_bytes += added[k] + kClassScoreBytes;
  }
  const size_t valid =
      std::max(kScalarResultBytes +
                   (model.multiclass() ? longest_label + 8 + class_bytes : 0),
               kLearnErrorBytes);
  return ErrorsSizeBound(request, scratch, valid);
}

absl::Status PrepareFeedback(const Model& model,
                             absl::Span<const Feedback> feedback,
                             int64_t now_micros, v1::TrainRequest& train,
                             TrainScratch& scratch, const StopCheck& stop) {
  train.Clear();
  std::vector<absl::Status> unusable(feedback.size());
  std::string features;
  for (size_t i = 0; i < feedback.size(); ++i) {
    const Feedback& f = feedback[i];
    v1::Example* e = train.add_examples();
    double importance = 1;
    const PendingExamples::State state =
        model.Pending(f.id, now_micros, &features, &importance);
    if (state == PendingExamples::State::kUnknown) {
      unusable[i] = absl::NotFoundError(
          absl::StrCat("no example is remembered under id ", Quoted(f.id),
                       ": predict with remember set first"));
    } else if (state != PendingExamples::State::kWaiting) {
      unusable[i] = absl::NotFoundError(absl::StrCat(
          "example ", Quoted(f.id), " no longer waits (labelled, or expired)"));
    } else if (!e->mutable_features()->ParseFromString(features)) {
      e->clear_features();
      unusable[i] =
          absl::DataLossError("the remembered features do not decode");
    }
    e->set_label(f.label);
    e->set_class_label(f.class_label);
    // A label selective sampling asked for is learned with its importance
    // weight 1/p, times the feedback's own weight.
    if (importance != 1) {
      e->set_weight(f.weight.value_or(1.0) * importance);
    } else if (f.weight.has_value()) {
      e->set_weight(*f.weight);
    }
  }
  if (absl::Status s = PrepareRequest(model, train, scratch, stop); !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < feedback.size(); ++i) {
    if (!unusable[i].ok()) scratch.prepared[i].error = std::move(unusable[i]);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> LearnPrepared(const Trainer& trainer, Model& model,
                                       const v1::TrainRequest& request,
                                       TrainBatch& batch, TrainScratch& scratch,
                                       const TrainScratch* prepared) {
  const int n = request.examples_size();
  scratch.outcomes.resize(n);
  if (prepared == nullptr) prepared = &scratch;
  absl::StatusOr<uint64_t> lsn = trainer.Train(
      model, batch, absl::MakeConstSpan(prepared->prepared.data(), n),
      absl::MakeSpan(scratch.outcomes), &scratch.class_names);
  if (lsn.ok() && scratch.log_drift) LogDrift(model, scratch.outcomes);
  return lsn;
}

uint64_t TrainBatchExamples(absl::string_view request) {
  v1::TrainRequest decoded;
  return decoded.ParseFromArray(request.data(), request.size())
             ? decoded.examples_size()
             : 0;
}

absl::StatusOr<uint64_t> LearnBatch(Model& model, TrainBatch& batch,
                                    const Trainer& trainer,
                                    TrainScratch& scratch) {
  v1::TrainRequest request;
  if (!batch.feedback.empty()) {
    if (absl::Status s = PrepareFeedback(model, batch.feedback,
                                         batch.now_micros, request, scratch);
        !s.ok()) {
      return s;
    }
  } else {
    if (!request.ParseFromArray(batch.request.data(), batch.request.size())) {
      return absl::DataLossError("the logged TrainRequest does not decode");
    }
    if (absl::Status s = PrepareRequest(model, request, scratch); !s.ok()) {
      return s;
    }
  }
  return LearnPrepared(trainer, model, request, batch, scratch);
}

absl::Status ReplayTrainBatch(Model& model, TrainBatch& batch,
                              const Trainer& trainer) {
  TrainScratch scratch;
  scratch.log_drift = false;
  return LearnBatch(model, batch, trainer, scratch).status();
}

}  // namespace halfspace
