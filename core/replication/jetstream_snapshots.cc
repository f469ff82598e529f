// JetStreamLog's shared snapshots. A model file is cut into chunks of up to
// kChunkBytes (a NATS message holds 1 MiB by default), published to the
// snapshot stream under the model's subject, each with the header
// Halfspace-Snapshot: WRITER/POSITION and a message id of its own (a
// retried chunk is stored once). Only then does the index bucket say where
// they lie, by a compare-and-set that takes only a later position: that
// write is the snapshot's commit. The chunks of earlier snapshots are
// purged after it. Two servers writing at once interleave their chunks;
// the tag keeps them apart, and the index names one writer's.

#include <nats/nats.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/replication/jetstream_handles.h"
#include "core/storage/crc32c.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {
namespace {

constexpr char kSnapshotStream[] = "halfspace_snapshots";
constexpr char kSnapshotSubjects[] = "halfspace.snapshots.>";
constexpr char kSnapshotIndex[] = "halfspace_snapshot_index";
constexpr char kSnapshotHeader[] = "Halfspace-Snapshot";
constexpr size_t kChunkBytes = size_t{256} << 10;

// Model names may hold what subjects and keys do not: both name the model
// in hexadecimal.
std::string Key(absl::string_view model) {
  return absl::BytesToHexString(model);
}
std::string Subject(absl::string_view model) {
  return absl::StrCat("halfspace.snapshots.", Key(model));
}

// The index entry of `model` and its revision; none (revision 0) if none.
// Read from the bucket stream's leader, not with the bucket's direct get:
// a direct get may be answered by a replica that lags, and a follower that
// found its stream trimmed must see the snapshot behind that trim, or it
// would take the trimmed records for another subject's and skip them.
absl::StatusOr<std::pair<std::optional<storage::v1::SnapshotIndex>, uint64_t>>
GetIndex(jsCtx* js, absl::string_view model) {
  const std::string subject =
      absl::StrCat("$KV.", kSnapshotIndex, ".", Key(model));
  const std::string stream = absl::StrCat("KV_", kSnapshotIndex);
  natsMsg* msg = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetLastMsg(&msg, js, stream.c_str(), subject.c_str(),
                                     nullptr, &js_error);
  if (s == NATS_NOT_FOUND) return std::make_pair(std::nullopt, uint64_t{0});
  if (s != NATS_OK) {
    return FromNats(
        absl::StrCat("reading the snapshot index of ", Quoted(model)), s,
        js_error);
  }
  // A deleted or purged key reads as none, as the bucket's own get says.
  const char* operation = nullptr;
  if (natsMsgHeader_Get(msg, "KV-Operation", &operation) == NATS_OK &&
      operation != nullptr) {
    natsMsg_Destroy(msg);
    return std::make_pair(std::nullopt, uint64_t{0});
  }
  storage::v1::SnapshotIndex entry;
  const bool read =
      entry.ParseFromArray(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
  const uint64_t revision = natsMsg_GetSequence(msg);
  natsMsg_Destroy(msg);
  if (!read) {
    return absl::DataLossError(absl::StrCat("the snapshot index entry of ",
                                            Quoted(model), " does not decode"));
  }
  return std::make_pair(std::optional(std::move(entry)), revision);
}

// Publishes one chunk; its stream sequence.
absl::StatusOr<uint64_t> PublishChunk(jsCtx* js, const std::string& subject,
                                      const std::string& tag,
                                      absl::string_view chunk,
                                      const std::string& id) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, chunk.data(),
                                chunk.size());
  if (s == NATS_OK) s = natsMsgHeader_Set(msg, kSnapshotHeader, tag.c_str());
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = id.c_str();
  options.MaxWait = 10000;
  jsPubAck* ack = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  if (s == NATS_OK) s = js_PublishMsg(&ack, js, msg, &options, &js_error);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) return FromNats("storing a snapshot chunk", s, js_error);
  const uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

// Removes the messages of `subject` below `before` (all for 0).
natsStatus Purge(jsCtx* js, const std::string& subject, uint64_t before) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Subject = subject.c_str();
  options.Stream.Purge.Sequence = before;
  return js_PurgeStream(js, kSnapshotStream, &options, nullptr);
}

// How often a reader tries again when the snapshot it read was replaced,
// and its chunks purged, meanwhile.
constexpr int kSnapshotReads = 3;

// The model file `entry` indexes, from its chunks: DATA_LOSS when they are
// not all there (purged by a later snapshot, say) or do not add up.
absl::StatusOr<std::string> ReadChunks(
    jsCtx* js, absl::string_view model,
    const storage::v1::SnapshotIndex& entry) {
  const std::string subject = Subject(model);
  jsStreamInfo* info = nullptr;
  jsErrCode info_error = static_cast<jsErrCode>(0);
  natsStatus got =
      js_GetStreamInfo(&info, js, kSnapshotStream, nullptr, &info_error);
  if (got != NATS_OK) {
    return FromNats("reading the snapshot stream", got, info_error);
  }
  const uint64_t last = info->State.LastSeq;
  jsStreamInfo_Destroy(info);
  std::string file;
  uint32_t found = 0;
  // The chunks in order from the first, among other writers' and models'.
  for (uint64_t seq = entry.first_sequence();
       found < entry.chunks() && seq <= last; ++seq) {
    natsMsg* msg = nullptr;
    jsErrCode js_error = static_cast<jsErrCode>(0);
    const natsStatus s =
        js_GetMsg(&msg, js, kSnapshotStream, seq, nullptr, &js_error);
    if (s == NATS_NOT_FOUND) continue;  // purged
    if (s != NATS_OK) return FromNats("reading a snapshot chunk", s, js_error);
    const char* tag = nullptr;
    natsMsgHeader_Get(msg, kSnapshotHeader, &tag);
    if (subject == natsMsg_GetSubject(msg) && tag != nullptr &&
        entry.tag() == tag) {
      file.append(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
      ++found;
    }
    natsMsg_Destroy(msg);
  }
  if (found != entry.chunks() || file.size() != entry.bytes() ||
      Crc32c(file) != entry.crc32c()) {
    return absl::DataLossError(
        absl::StrCat("the snapshot of ", Quoted(model), " at position ",
                     entry.position(), " is incomplete or damaged (", found,
                     " of ", entry.chunks(), " chunks)"));
  }
  return file;
}

}  // namespace

natsStatus OpenSnapshots(JetStreamLog::Handles& h, int replicas) {
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {kSnapshotSubjects};
  config.Name = kSnapshotStream;
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Replicas = replicas;
  config.Duplicates = absl::ToInt64Nanoseconds(absl::Minutes(2));
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(nullptr, h.js, &config, nullptr, &js_error);
  if (s != NATS_OK && js_error != JSStreamNameExistErr) return s;
  return OpenBucket(h.js, kSnapshotIndex, replicas, &h.snapshot_index);
}

absl::Status JetStreamLog::PutSnapshot(absl::string_view model,
                                       const SnapshotInfo& info,
                                       absl::string_view file,
                                       absl::string_view writer) {
  auto kept = GetIndex(handles_->js, model);
  if (!kept.ok()) return kept.status();
  if (kept->first.has_value() && kept->first->position() >= info.position) {
    return absl::AbortedError(
        absl::StrCat("a snapshot of ", Quoted(model), " at position ",
                     kept->first->position(), " is kept already"));
  }
  const std::string subject = Subject(model);
  storage::v1::SnapshotIndex entry;
  entry.set_position(info.position);
  entry.set_trimmed_below(info.trimmed_below);
  entry.set_bytes(file.size());
  entry.set_crc32c(Crc32c(file));
  entry.set_tag(absl::StrCat(writer, "/", info.position));
  for (size_t offset = 0; offset == 0 || offset < file.size();
       offset += kChunkBytes) {
    absl::StatusOr<uint64_t> sequence = PublishChunk(
        handles_->js, subject, entry.tag(), file.substr(offset, kChunkBytes),
        absl::StrCat(Key(model), "/", entry.tag(), "/", entry.chunks()));
    if (!sequence.ok()) return sequence.status();
    if (entry.chunks() == 0) entry.set_first_sequence(*sequence);
    entry.set_chunks(entry.chunks() + 1);
  }
  const std::string key = Key(model), value = entry.SerializeAsString();
  const natsStatus s =
      kept->second == 0
          ? kvStore_Create(nullptr, handles_->snapshot_index, key.c_str(),
                           value.data(), value.size())
          : kvStore_Update(nullptr, handles_->snapshot_index, key.c_str(),
                           value.data(), value.size(), kept->second);
  if (s != NATS_OK) {
    // Most likely another server's snapshot was kept meanwhile.
    return absl::AbortedError(
        FromNats(absl::StrCat("keeping the snapshot of ", Quoted(model)), s)
            .message());
  }
  // The earlier snapshots' chunks are no longer needed; a failure leaves
  // them for the next snapshot's purge.
  Purge(handles_->js, subject, entry.first_sequence());
  return absl::OkStatus();
}

absl::StatusOr<std::optional<SnapshotInfo>> JetStreamLog::SnapshotOf(
    absl::string_view model) {
  auto kept = GetIndex(handles_->js, model);
  if (!kept.ok()) return kept.status();
  if (!kept->first.has_value()) return std::nullopt;
  return SnapshotInfo{kept->first->position(), kept->first->trimmed_below()};
}

absl::StatusOr<std::pair<SnapshotInfo, std::string>> JetStreamLog::ReadSnapshot(
    absl::string_view model) {
  absl::Status damaged;
  std::string damaged_tag;  // of the snapshot found damaged
  // A snapshot read while another server keeps a later one may find its
  // chunks purged: then the later one is read.
  for (int attempt = 0; attempt < kSnapshotReads; ++attempt) {
    auto kept = GetIndex(handles_->js, model);
    if (!kept.ok()) return kept.status();
    if (!kept->first.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("no snapshot of ", Quoted(model), " is kept"));
    }
    const storage::v1::SnapshotIndex& entry = *kept->first;
    if (!damaged.ok() && entry.tag() == damaged_tag) return damaged;
    absl::StatusOr<std::string> file = ReadChunks(handles_->js, model, entry);
    if (file.ok()) {
      return std::make_pair(
          SnapshotInfo{entry.position(), entry.trimmed_below()},
          *std::move(file));
    }
    if (!absl::IsDataLoss(file.status())) return file.status();
    damaged = file.status();
    damaged_tag = entry.tag();
  }
  return damaged;
}

absl::Status JetStreamLog::DropSnapshot(absl::string_view model) {
  const std::string key = Key(model);
  natsStatus s = kvStore_Delete(handles_->snapshot_index, key.c_str());
  if (s != NATS_OK && s != NATS_NOT_FOUND) {
    return FromNats(absl::StrCat("forgetting the snapshot of ", Quoted(model)),
                    s);
  }
  s = Purge(handles_->js, Subject(model), 0);
  if (s == NATS_OK || s == NATS_NOT_FOUND) return absl::OkStatus();
  return FromNats(absl::StrCat("purging the snapshot of ", Quoted(model)), s);
}

}  // namespace halfspace
