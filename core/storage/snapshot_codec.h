// The model file: one model's whole state, checksummed and versioned.
//
// Envelope, integers little-endian:
//
//   "HSPM"  u32 version  u64 payload_size  payload  u32 crc32c(payload)
//
// Version 2 (written today): the payload is a halfspace.storage.v1.ModelFile
// message (proto/halfspace/storage/v1/storage.proto). Version 1 (read only):
// the hand-written payload of snapshot_codec_v1.cc.
//
// Decoding checks the magic, version, sizes and checksum, and the decoded
// spec's ranges, so a truncated or corrupted file is reported, never loaded.

#ifndef HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_
#define HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model_state.h"
#include "core/storage/crc32c.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {

inline constexpr uint32_t kModelFileVersion = 2;

// A model file of the current version.
std::string EncodeSnapshot(const ModelSnapshot& snapshot);

// DATA_LOSS when `bytes` is not a whole, uncorrupted model file of a
// version this build reads.
absl::StatusOr<ModelSnapshot> DecodeSnapshot(absl::string_view bytes);

// The message form of a snapshot (the version 2 payload), and back.
// FromModelFile fails with DATA_LOSS like DecodeSnapshot.
void ToModelFile(const ModelSnapshot& snapshot, storage::v1::ModelFile& file);
absl::StatusOr<ModelSnapshot> FromModelFile(storage::v1::ModelFile file);

// Version 1's payload (snapshot_codec_v1.cc).
absl::StatusOr<ModelSnapshot> DecodeSnapshotV1(absl::string_view payload);

// DATA_LOSS "corrupt model snapshot: <what>".
absl::Status CorruptSnapshot(absl::string_view what);

// DATA_LOSS unless the decoded spec's dimension and hash bits are in range.
absl::Status CheckDecodedSpec(const ModelSpec& spec);

// A replicated model's stream as files, records and the catalog keep it.
void ToProto(const Replication& replication, storage::v1::Replication& out);

// A remembered example in snapshots and log records, and back (a weight
// not stored, or not positive and finite, is 1).
void ToStored(const PendingExamples::Entry& e,
              storage::v1::PendingExample& out);
PendingExamples::Entry FromStored(storage::v1::PendingExample& e);
Replication ReplicationOf(const storage::v1::Replication& r);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_
