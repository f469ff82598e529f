#include "server/replication.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/base/quoted.h"
#include "core/model/limits.h"
#include "server/producer_message.h"
#include "server/train_batch.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

constexpr int kDefaultReplicas = 3;
constexpr int kMaxReplicas = 5;
constexpr size_t kMaxStreamName = 64;
constexpr size_t kMaxSubject = 255;

bool NameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '-';
}

absl::Status CheckStream(absl::string_view stream) {
  const bool fine = !stream.empty() && stream.size() <= kMaxStreamName &&
                    std::all_of(stream.begin(), stream.end(), NameChar);
  if (fine) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("replication.stream is ", Quoted(stream), "; use 1 to ",
                   kMaxStreamName, " characters from [A-Za-z0-9_-]"));
}

absl::Status CheckSubject(absl::string_view subject) {
  bool fine = !subject.empty() && subject.size() <= kMaxSubject;
  for (absl::string_view token : absl::StrSplit(subject, '.')) {
    fine = fine && !token.empty() &&
           std::all_of(token.begin(), token.end(), NameChar);
  }
  if (fine) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "replication.subject is ", Quoted(subject),
      "; use tokens of [A-Za-z0-9_-] separated by '.', no wildcards, up to ",
      kMaxSubject, " characters"));
}

// Learns a record's batch as recovery does, keeping what each example did.
absl::Status LearnRecord(Model& model, TrainBatch& batch,
                         const Trainer& trainer, AppliedBatch* applied) {
  TrainScratch scratch;
  absl::StatusOr<uint64_t> learned = LearnBatch(model, batch, trainer, scratch);
  if (!learned.ok()) return learned.status();
  // The memory all models share differs from server to server: a replica
  // it refuses an example would differ from the others. Per-model limits
  // decide alike on replicas that run with the same flags.
  for (const uint32_t i : batch.refused) {
    const absl::Status& refusal = scratch.outcomes[i].error;
    if (LimitOf(refusal) == "max_total_model_bytes") return refusal;
  }
  if (applied != nullptr) {
    applied->outcomes = std::move(scratch.outcomes);
    applied->class_names = std::move(scratch.class_names);
  }
  return absl::OkStatus();
}

}  // namespace

ReplicaOptions ServerReplicaOptions(std::string reader, Metrics* metrics) {
  ReplicaOptions options;
  options.reader = std::move(reader);
  options.learn = LearnRecord;
  options.read_producer = DecodeProducerMessage;
  options.report = [metrics](absl::string_view model, uint64_t position,
                             const absl::Status& why) {
    spdlog::warn("replica of '{}': stream position {}: {}", std::string(model),
                 position, why.ToString());
    metrics->RecordReplicaSkip(std::string(model));
  };
  options.unshared = [](absl::string_view model, const absl::Status& why) {
    spdlog::warn("replica of '{}': its snapshot is not shared: {}",
                 std::string(model), why.ToString());
  };
  options.taken_over = [](absl::string_view model, uint64_t revision) {
    spdlog::warn(
        "model '{}' takes over the name's abandoned claim (catalog revision "
        "{}): its creator gave up and no creation of it was stored",
        std::string(model), revision);
  };
  options.joined = [](absl::string_view model, uint64_t position) {
    spdlog::info(
        "replica of '{}' starts from the shared snapshot at stream "
        "position {}",
        std::string(model), position);
  };
  options.stalled = [](absl::string_view model, const absl::Status& why) {
    spdlog::warn("replica of '{}' cannot read its stream, retrying: {}",
                 std::string(model), why.ToString());
  };
  return options;
}

absl::StatusOr<std::optional<Replication>> ReplicationFromRequest(
    const v1::CreateModelRequest& request) {
  if (!request.has_replication()) return std::nullopt;
  const v1::Replication& r = request.replication();
  Replication replication;
  replication.stream =
      r.stream().empty()
          ? absl::StrCat("halfspace_",
                         absl::StrReplaceAll(request.model(), {{".", "_"}}))
          : r.stream();
  replication.subject = r.subject().empty()
                            ? absl::StrCat("halfspace.train.", request.model())
                            : r.subject();
  replication.replicas = r.replicas() == 0 ? kDefaultReplicas : r.replicas();
  if (absl::Status s = CheckStream(replication.stream); !s.ok()) return s;
  if (absl::Status s = CheckSubject(replication.subject); !s.ok()) return s;
  if (replication.replicas < 1 || replication.replicas > kMaxReplicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("replication.replicas is ", r.replicas(), "; use 1 to ",
                     kMaxReplicas, " (0 for ", kDefaultReplicas, ")"));
  }
  return replication;
}

absl::Status NotFollowed(const Model& model) {
  return absl::UnavailableError(
      absl::StrCat("model ", Quoted(model.name()),
                   " is replicated, and this server no longer follows its "
                   "stream"));
}

absl::Status NotHeldYet(const ReplicaSet* replicas, absl::string_view model,
                        absl::Status status) {
  if (replicas == nullptr) return status;
  return replicas->NotHeldYet(model, std::move(status));
}

absl::Time ReplicaDeadline(absl::Time call_deadline) {
  return std::min(call_deadline, absl::Now() + kReplicaWait);
}

void ToProto(const Model& model, const ReplicaSet& replicas,
             v1::ReplicaState* out) {
  const Replication& r = model.spec().replication;
  out->mutable_replication()->set_stream(r.stream);
  out->mutable_replication()->set_subject(r.subject);
  out->mutable_replication()->set_replicas(r.replicas);
  const ReplicaSet::Lag lag = replicas.LagOf(model.name());
  out->set_position(std::max(model.lsn(), lag.position));
  out->set_lag_records(lag.records);
  out->set_lag_seconds(lag.seconds);
  out->set_stalled(lag.stalled);
}

}  // namespace halfspace
