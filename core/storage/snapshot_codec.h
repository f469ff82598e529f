// The on-disk encoding of a ModelSnapshot.
//
// Format (version 1), all integers and doubles little-endian:
//
//   "HSPM"  u32 version  u64 payload_size  payload  u32 crc32c(payload)
//
//   payload: u32 name_size, name bytes, u32 algorithm, i64 dimension,
//            u32 n, n × (u32 key, f64 value)   the parameters
//            u32 n, n × (u32 size, group, u32 size, group)   interactions
//            u64 examples_seen, u64 updates, u64 mistakes, f64 loss_sum,
//            f64 max_squared_norm,
//            binary:     f64 bias, f64 weights[width]
//            multiclass: u32 classes, per class u32 label_size, label bytes,
//                        f64 bias, f64 weights[width]
//            (width: the dimension plus 2^hash_bits buckets, if any)
//            u64 state_size, f64 state[state_size]
//            u64 standardizer_size, f64 standardizer[standardizer_size]
//
// Parameters are keyed (see Key in the source), so a
// later version can add one and still read these files: a missing key keeps
// its default.
//
// Decoding checks the magic, version, sizes and checksum, so a truncated or
// corrupted file is reported, never loaded.

#ifndef HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_
#define HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"

namespace halfspace {

// CRC-32C (Castagnoli) of `data`.
uint32_t Crc32c(absl::string_view data);

std::string EncodeSnapshot(const ModelSnapshot& snapshot);

// DATA_LOSS when `bytes` is not a whole, uncorrupted snapshot.
absl::StatusOr<ModelSnapshot> DecodeSnapshot(absl::string_view bytes);

}  // namespace halfspace

#endif  // HALFSPACE_CORE_STORAGE_SNAPSHOT_CODEC_H_
