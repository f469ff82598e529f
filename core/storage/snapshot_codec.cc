#include "core/storage/snapshot_codec.h"

#include <array>
#include <iterator>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the snapshot format is written with little-endian memcpy");

constexpr absl::string_view kMagic = "HSPM";
constexpr uint32_t kVersion = 1;

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0u);
    table[i] = c;
  }
  return table;
}

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

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

// Every hyperparameter, as a number under a key that never changes meaning.
struct HyperparameterKey {
  uint32_t key;
  double (*get)(const ModelSpec&);
  void (*set)(ModelSpec&, double);
};
constexpr HyperparameterKey kHyperparameterKeys[] = {
    {1, [](const ModelSpec& s) { return s.learning_rate; },
     [](ModelSpec& s, double v) { s.learning_rate = v; }},
    {2, [](const ModelSpec& s) { return s.l2; },
     [](ModelSpec& s, double v) { s.l2 = v; }},
    {3, [](const ModelSpec& s) { return s.margin_threshold; },
     [](ModelSpec& s, double v) { s.margin_threshold = v; }},
    {4, [](const ModelSpec& s) { return double(s.sgd.loss); },
     [](ModelSpec& s, double v) { s.sgd.loss = LossKind(int(v)); }},
    {5, [](const ModelSpec& s) { return double(s.sgd.penalty); },
     [](ModelSpec& s, double v) { s.sgd.penalty = Penalty(int(v)); }},
    {6, [](const ModelSpec& s) { return s.sgd.alpha; },
     [](ModelSpec& s, double v) { s.sgd.alpha = v; }},
    {7, [](const ModelSpec& s) { return s.sgd.l1_ratio; },
     [](ModelSpec& s, double v) { s.sgd.l1_ratio = v; }},
    {8, [](const ModelSpec& s) { return double(s.sgd.schedule); },
     [](ModelSpec& s, double v) { s.sgd.schedule = Schedule(int(v)); }},
    {9, [](const ModelSpec& s) { return s.sgd.power_t; },
     [](ModelSpec& s, double v) { s.sgd.power_t = v; }},
    {10, [](const ModelSpec& s) { return double(s.sgd.average_from); },
     [](ModelSpec& s, double v) { s.sgd.average_from = uint64_t(v); }},
    {11, [](const ModelSpec& s) { return double(s.pa_variant); },
     [](ModelSpec& s, double v) { s.pa_variant = PaVariant(int(v)); }},
    {12, [](const ModelSpec& s) { return s.aggressiveness; },
     [](ModelSpec& s, double v) { s.aggressiveness = v; }},
    {13, [](const ModelSpec& s) { return s.ratchet ? 1.0 : 0.0; },
     [](ModelSpec& s, double v) { s.ratchet = v != 0.0; }},
    {14, [](const ModelSpec& s) { return s.predict_with_pocket ? 1.0 : 0.0; },
     [](ModelSpec& s, double v) { s.predict_with_pocket = v != 0.0; }},
    {15, [](const ModelSpec& s) { return s.one_vs_rest ? 1.0 : 0.0; },
     [](ModelSpec& s, double v) { s.one_vs_rest = v != 0.0; }},
    {16, [](const ModelSpec& s) { return s.standardize ? 1.0 : 0.0; },
     [](ModelSpec& s, double v) { s.standardize = v != 0.0; }},
    {17, [](const ModelSpec& s) { return double(s.hash_bits); },
     [](ModelSpec& s, double v) { s.hash_bits = int(v); }},
};

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt model snapshot: ", what));
}

bool DecodeHyperparameters(Reader& in, ModelSpec& spec) {
  uint32_t n = 0;
  if (!in.Get(n)) return false;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t key = 0;
    double value = 0;
    if (!in.Get(key) || !in.Get(value)) return false;
    for (const HyperparameterKey& k : kHyperparameterKeys) {
      if (k.key == key) k.set(spec, value);
    }
  }
  return true;
}

// u32 n, then n × (u32 size, first group, u32 size, second group).
void EncodeInteractions(const std::vector<Interaction>& interactions,
                        std::string& out) {
  Put(out, static_cast<uint32_t>(interactions.size()));
  for (const Interaction& i : interactions) {
    for (const std::string* group : {&i.first, &i.second}) {
      Put(out, static_cast<uint32_t>(group->size()));
      out.append(*group);
    }
  }
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

// f64 bias, f64 w[width].
void EncodeWeights(const LinearWeights& weights, std::string& out) {
  Put(out, weights.b);
  out.append(reinterpret_cast<const char*>(weights.w.data()),
             weights.w.size() * sizeof(double));
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

// u64 n, f64 values[n].
void EncodeDoubles(const std::vector<double>& values, std::string& out) {
  Put(out, static_cast<uint64_t>(values.size()));
  out.append(reinterpret_cast<const char*>(values.data()),
             values.size() * sizeof(double));
}

bool DecodeDoubles(Reader& in, std::vector<double>& values) {
  uint64_t n = 0;
  if (!in.Get(n) || n > in.remaining() / sizeof(double)) return false;
  values.resize(n);
  for (double& v : values) in.Get(v);
  return true;
}

absl::StatusOr<ModelSnapshot> DecodePayload(absl::string_view payload) {
  Reader in(payload);
  ModelSnapshot s;
  uint32_t name_size = 0, algorithm = 0;
  absl::string_view name;
  ModelCounters& c = s.counters;
  if (!in.Get(name_size) || !in.GetBytes(name_size, name) ||
      !in.Get(algorithm) || !in.Get(s.spec.dimension) ||
      !DecodeHyperparameters(in, s.spec) ||
      !DecodeInteractions(in, s.spec.interactions) ||
      !in.Get(c.examples_seen) ||
      !in.Get(c.updates) || !in.Get(c.mistakes) || !in.Get(c.loss_sum) ||
      !in.Get(c.max_squared_norm)) {
    return Corrupt("header fields are truncated");
  }
  s.name = std::string(name);
  s.spec.algorithm = static_cast<Algorithm>(algorithm);
  if (s.spec.dimension < 0 || s.spec.dimension > kMaxDimension) {
    return Corrupt("the dimension is out of range");
  }
  if (s.spec.hash_bits < 0 || s.spec.hash_bits > kMaxHashBits) {
    return Corrupt("hash_bits is out of range");
  }
  if (IsMulticlass(s.spec)) {
    if (!DecodeClasses(in, s)) return Corrupt("class rows are truncated");
  } else if (!DecodeWeights(in, FeatureWidth(s.spec), s.weights)) {
    return Corrupt("weight vector size does not match the dimension");
  }
  if (!DecodeDoubles(in, s.state) || !DecodeDoubles(in, s.standardizer) ||
      in.remaining() != 0) {
    return Corrupt("state sizes do not match the file");
  }
  return s;
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  uint32_t crc = ~0u;
  for (unsigned char byte : data) crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string EncodeSnapshot(const ModelSnapshot& s) {
  std::string payload;
  payload.reserve(256 + s.name.size() +
                  (s.weights.w.size() + s.state.size()) * sizeof(double));
  Put(payload, static_cast<uint32_t>(s.name.size()));
  payload.append(s.name);
  Put(payload, static_cast<uint32_t>(s.spec.algorithm));
  Put(payload, s.spec.dimension);
  Put(payload, static_cast<uint32_t>(std::size(kHyperparameterKeys)));
  for (const HyperparameterKey& k : kHyperparameterKeys) {
    Put(payload, k.key);
    Put(payload, k.get(s.spec));
  }
  EncodeInteractions(s.spec.interactions, payload);
  const ModelCounters& c = s.counters;
  Put(payload, c.examples_seen);
  Put(payload, c.updates);
  Put(payload, c.mistakes);
  Put(payload, c.loss_sum);
  Put(payload, c.max_squared_norm);
  if (IsMulticlass(s.spec)) {
    Put(payload, static_cast<uint32_t>(s.classes.size()));
    for (size_t k = 0; k < s.classes.size(); ++k) {
      Put(payload, static_cast<uint32_t>(s.classes[k].size()));
      payload.append(s.classes[k]);
      EncodeWeights(s.class_weights[k], payload);
    }
  } else {
    EncodeWeights(s.weights, payload);
  }
  EncodeDoubles(s.state, payload);
  EncodeDoubles(s.standardizer, payload);

  std::string out(kMagic);
  Put(out, kVersion);
  Put(out, static_cast<uint64_t>(payload.size()));
  out.append(payload);
  Put(out, Crc32c(payload));
  return out;
}

absl::StatusOr<ModelSnapshot> DecodeSnapshot(absl::string_view bytes) {
  Reader in(bytes);
  absl::string_view magic, payload;
  uint32_t version = 0, crc = 0;
  uint64_t payload_size = 0;
  if (!in.GetBytes(kMagic.size(), magic) || magic != kMagic) {
    return Corrupt("not a halfspace model file (bad magic)");
  }
  if (!in.Get(version) || version != kVersion) {
    return Corrupt(absl::StrCat("unsupported format version ", version));
  }
  if (!in.Get(payload_size) || payload_size > in.remaining() ||
      !in.GetBytes(payload_size, payload) || !in.Get(crc) ||
      in.remaining() != 0) {
    return Corrupt("file is truncated or has trailing bytes");
  }
  if (Crc32c(payload) != crc) return Corrupt("checksum mismatch");
  return DecodePayload(payload);
}

}  // namespace halfspace
