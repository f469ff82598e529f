// Reads the payload of model files of format version 1, the hand-written
// encoding halfspace stored before version 2 (a protobuf message). Files of
// version 1 are read, never written.
//
// Payload, all integers and doubles little-endian:
//   u32 name_size, name bytes, u32 algorithm, i64 dimension,
//   u32 n, n × (u32 key, f64 value)   the parameters (parameter_keys.h)
//   u32 n, n × (u32 size, group, u32 size, group)   interactions
//   u64 examples_seen, u64 updates, u64 mistakes, f64 loss_sum,
//   f64 max_squared_norm,
//   binary:     f64 bias, f64 weights[width]
//   multiclass: u32 classes, per class u32 label_size, label bytes,
//               f64 bias, f64 weights[width]
//   (width: the dimension plus 2^hash_bits buckets, if any)
//   u64 state_size, f64 state[state_size]
//   u64 standardizer_size, f64 standardizer[standardizer_size]

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/storage/parameter_keys.h"
#include "core/storage/snapshot_codec.h"

namespace halfspace {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "format version 1 was written with little-endian memcpy");

// Reads fixed-size values from a byte string; any read past the end fails
// the whole decode.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  bool Get(T& value) {
    if (bytes_.size() < sizeof(T)) return false;
    std::memcpy(&value, bytes_.data(), sizeof(T));
    bytes_.remove_prefix(sizeof(T));
    return true;
  }
  bool GetBytes(size_t n, absl::string_view& out) {
    if (bytes_.size() < n) return false;
    out = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return true;
  }
  size_t remaining() const { return bytes_.size(); }

 private:
  absl::string_view bytes_;
};

bool DecodeParameters(Reader& in, KeyedValues& values) {
  uint32_t n = 0;
  if (!in.Get(n)) return false;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t key = 0;
    double value = 0;
    if (!in.Get(key) || !in.Get(value)) return false;
    values.emplace_back(key, value);
  }
  return true;
}

bool DecodeInteractions(Reader& in, std::vector<Interaction>& interactions) {
  uint32_t n = 0;
  if (!in.Get(n) || n > kMaxInteractions) return false;
  for (uint32_t k = 0; k < n; ++k) {
    Interaction& i = interactions.emplace_back();
    for (std::string* group : {&i.first, &i.second}) {
      uint32_t size = 0;
      absl::string_view bytes;
      if (!in.Get(size) || !in.GetBytes(size, bytes)) return false;
      *group = std::string(bytes);
    }
  }
  return true;
}

bool DecodeWeights(Reader& in, int64_t dimension, LinearWeights& weights) {
  if (!in.Get(weights.b) ||
      in.remaining() < static_cast<size_t>(dimension) * sizeof(double)) {
    return false;
  }
  weights.w.resize(dimension);
  for (double& w : weights.w) in.Get(w);
  return true;
}

// u32 classes, then per class: u32 name_size, name, its weights.
bool DecodeClasses(Reader& in, ModelSnapshot& s) {
  uint32_t classes = 0;
  if (!in.Get(classes) || classes > kMaxClasses) return false;
  for (uint32_t k = 0; k < classes; ++k) {
    uint32_t size = 0;
    absl::string_view label;
    LinearWeights& row = s.class_weights.emplace_back();
    if (!in.Get(size) || !in.GetBytes(size, label) ||
        !DecodeWeights(in, FeatureWidth(s.spec), row)) {
      return false;
    }
    s.classes.emplace_back(label);
  }
  return true;
}

bool DecodeDoubles(Reader& in, std::vector<double>& values) {
  uint64_t n = 0;
  if (!in.Get(n) || n > in.remaining() / sizeof(double)) return false;
  values.resize(n);
  for (double& v : values) in.Get(v);
  return true;
}

}  // namespace

absl::StatusOr<ModelSnapshot> DecodeSnapshotV1(absl::string_view payload) {
  Reader in(payload);
  ModelSnapshot s;
  uint32_t name_size = 0, algorithm = 0;
  absl::string_view name;
  KeyedValues parameters;
  ModelCounters& c = s.counters;
  if (!in.Get(name_size) || !in.GetBytes(name_size, name) ||
      !in.Get(algorithm) || !in.Get(s.spec.dimension) ||
      !DecodeParameters(in, parameters) ||
      !DecodeInteractions(in, s.spec.interactions) ||
      !in.Get(c.examples_seen) || !in.Get(c.updates) || !in.Get(c.mistakes) ||
      !in.Get(c.loss_sum) || !in.Get(c.max_squared_norm)) {
    return CorruptSnapshot("header fields are truncated");
  }
  s.name = std::string(name);
  if (!SetParameters(algorithm, parameters, s.spec)) {
    return CorruptSnapshot(absl::StrCat("unknown algorithm ", algorithm));
  }
  if (s.spec.dimension < 0 || s.spec.dimension > kMaxDimension) {
    return CorruptSnapshot("the dimension is out of range");
  }
  if (s.spec.hash_bits < 0 || s.spec.hash_bits > kMaxHashBits) {
    return CorruptSnapshot("hash_bits is out of range");
  }
  if (IsMulticlass(s.spec)) {
    if (!DecodeClasses(in, s))
      return CorruptSnapshot("class rows are truncated");
  } else if (!DecodeWeights(in, FeatureWidth(s.spec), s.weights)) {
    return CorruptSnapshot("weight vector size does not match the dimension");
  }
  if (!DecodeDoubles(in, s.state) || !DecodeDoubles(in, s.standardizer) ||
      in.remaining() != 0) {
    return CorruptSnapshot("state sizes do not match the file");
  }
  return s;
}

}  // namespace halfspace
