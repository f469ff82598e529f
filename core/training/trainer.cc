#include "core/training/trainer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {
namespace {

// OK for a batch the trainer can apply; else why not (nothing learned).
absl::Status CheckBatch(const TrainBatch& batch, size_t examples) {
  if (!batch.source.empty() && batch.first_sequence == 0) {
    return absl::InvalidArgumentError(
        "sequence numbers start at 1; a tagged batch cannot start at 0");
  }
  const size_t ids = std::max(batch.feedback.size(), batch.example_ids.size());
  if ((!batch.feedback.empty() && !batch.example_ids.empty()) ||
      (ids != 0 && ids != examples)) {
    return absl::InvalidArgumentError(absl::StrCat("a feedback batch of ",
                                                   examples, " examples names ",
                                                   ids, " example ids"));
  }
  return absl::OkStatus();
}

// The ids of the remembered examples a feedback batch's examples join, in
// order; none for a plain batch.
std::vector<absl::string_view> FeedbackIds(const TrainBatch& batch) {
  std::vector<absl::string_view> ids(batch.example_ids.begin(),
                                     batch.example_ids.end());
  for (const Feedback& f : batch.feedback) ids.push_back(f.id);
  return ids;
}

}  // namespace

absl::StatusOr<uint64_t> Trainer::Train(
    Model& model, TrainBatch& batch, absl::Span<const PreparedExample> examples,
    absl::Span<ExampleOutcome> outcomes,
    std::vector<std::string>* class_names) const {
  const size_t n = examples.size();
  if (absl::Status s = CheckBatch(batch, n); !s.ok()) return s;
  const bool tagged = !batch.source.empty();
  std::vector<absl::string_view> ids = FeedbackIds(batch);
  Model::Writer writer = model.Write();
  if (absl::Status s = writer.CheckNotDeleted(); !s.ok()) return s;
  // 1. Examples [0, fresh) were applied before: sequence <= the source's
  // last.
  const uint64_t last = tagged ? writer.LastSequence(batch.source) : 0;
  if (tagged && batch.follows > last) {
    // The batch before it on its stream was lost, or is stored after it:
    // learning this one would make that one a duplicate when it is sent
    // again, or skip its examples.
    return absl::AbortedError(absl::StrCat(
        "not learned: the request before it on this stream (source ",
        Quoted(batch.source), " up to sequence ", batch.follows,
        ") was not learned before it; send again from the last "
        "acknowledged request"));
  }
  size_t fresh = 0;
  if (last != 0 && batch.first_sequence <= last) {
    fresh = static_cast<size_t>(
        std::min<uint64_t>(n, last - batch.first_sequence + 1));
  }
  if (tagged && last == 0 && writer.sources() >= kMaxSources) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model ", Quoted(model.name()), " already tracks ",
                     kMaxSources, " sources; reuse a source id"));
  }
  // 2.
  const int64_t reserved =
      writer.Admit(examples, fresh, outcomes, batch.refused);
  LearnPlan plan;
  plan.from = fresh;
  plan.refused = batch.refused;
  plan.ids = ids;
  plan.now_micros = batch.now_micros;
  plan.pending_limits = batch.pending_limits;
  // 3. and 4.
  absl::StatusOr<uint64_t> lsn = WriteDown(model, batch, fresh < n, writer);
  if (!lsn.ok()) {
    writer.Unreserve(reserved);
    return lsn.status();
  }
  writer.Learn(examples, outcomes, plan, class_names);
  // 5.
  if (!ids.empty()) {
    writer.ExpirePending(batch.now_micros, batch.pending_limits);
  }
  if (!batch.peers.empty()) writer.CountPeers(batch.peers, outcomes);
  if (tagged && fresh < n) {
    writer.SetLastSequence(batch.source, batch.first_sequence + n - 1);
  }
  return *lsn;
}

absl::StatusOr<uint64_t> Trainer::WriteDown(const Model& model,
                                            const TrainBatch& batch,
                                            bool changes,
                                            Model::Writer& writer) const {
  if (!changes || journal_ == nullptr) return 0;
  absl::StatusOr<uint64_t> lsn = journal_->Append(model.name(), batch);
  if (lsn.ok()) writer.set_lsn(*lsn);
  return lsn;
}

absl::StatusOr<uint64_t> Trainer::Remember(
    Model& model, std::vector<PendingExamples::Entry>&& entries,
    int64_t now_micros, const PendingLimits& limits) const {
  uint64_t lsn = 0;
  WriteAhead write_ahead;
  if (journal_ != nullptr) {
    // Called before `entries` are taken: they are whole.
    write_ahead = [&]() -> absl::StatusOr<uint64_t> {
      const RememberBatch batch{entries, now_micros, limits};
      absl::StatusOr<uint64_t> appended = journal_->Append(model.name(), batch);
      if (appended.ok()) lsn = *appended;
      return appended;
    };
  }
  absl::Status s =
      model.Remember(std::move(entries), now_micros, limits, write_ahead);
  if (!s.ok()) return s;
  return lsn;
}

}  // namespace halfspace
