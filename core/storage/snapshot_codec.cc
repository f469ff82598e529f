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

// Every parameter, as a number under a key that never changes meaning.
enum Key : uint32_t {
  kLearningRate = 1,
  kL2 = 2,
  kMarginThreshold = 3,
  kLoss = 4,
  kPenalty = 5,
  kAlpha = 6,
  kL1Ratio = 7,
  kSchedule = 8,
  kPowerT = 9,
  kAverageFrom = 10,
  kPaVariant = 11,
  kAggressiveness = 12,
  kRatchet = 13,
  kPredictWithPocket = 14,
  kOneVsRest = 15,
  kStandardize = 16,
  kHashBits = 17,
};

using KeyedValues = std::vector<std::pair<uint32_t, double>>;

// The algorithm's parameters and the feature options, keyed.
KeyedValues KeyedParameters(const ModelSpec& spec) {
  KeyedValues out = {{kOneVsRest, spec.one_vs_rest ? 1.0 : 0.0},
                     {kStandardize, spec.standardize ? 1.0 : 0.0},
                     {kHashBits, double(spec.hash_bits)}};
  auto add = [&out](std::initializer_list<std::pair<uint32_t, double>> kv) {
    out.insert(out.end(), kv);
  };
  std::visit(
      Overloaded{
          [&](const PerceptronParams& p) {
            add({{kLearningRate, p.learning_rate},
                 {kMarginThreshold, p.margin_threshold}});
          },
          [&](const LogisticRegressionParams& p) {
            add({{kLearningRate, p.learning_rate}, {kL2, p.l2}});
          },
          [&](const AveragedPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate}});
          },
          [&](const PassiveAggressiveParams& p) {
            add({{kPaVariant, double(p.variant)},
                 {kAggressiveness, p.aggressiveness}});
          },
          [&](const SgdParams& p) {
            const SgdOptions& o = p.options;
            add({{kLearningRate, p.learning_rate},
                 {kLoss, double(o.loss)},
                 {kPenalty, double(o.penalty)},
                 {kAlpha, o.alpha},
                 {kL1Ratio, o.l1_ratio},
                 {kSchedule, double(o.schedule)},
                 {kPowerT, o.power_t},
                 {kAverageFrom, double(o.average_from)}});
          },
          [&](const PocketPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate},
                 {kRatchet, p.ratchet ? 1.0 : 0.0},
                 {kPredictWithPocket, p.predict_with_pocket ? 1.0 : 0.0}});
          },
          [&](const MulticlassPerceptronParams& p) {
            add({{kLearningRate, p.learning_rate}});
          },
          [&](const SoftmaxRegressionParams& p) {
            add({{kLearningRate, p.learning_rate}, {kL2, p.l2}});
          },
      },
      spec.algorithm);
  return out;
}

// Sets the spec's algorithm `id` and options from keyed values; a missing
// key keeps its default, an unknown key is ignored. False for an unknown
// algorithm.
bool SetParameters(uint32_t id, const KeyedValues& values, ModelSpec& spec) {
  auto get = [&](Key key, auto fallback) {
    for (const auto& [k, v] : values) {
      if (k == key) return static_cast<decltype(fallback)>(v);
    }
    return fallback;
  };
  spec.one_vs_rest = get(kOneVsRest, 0.0) != 0.0;
  spec.standardize = get(kStandardize, 0.0) != 0.0;
  spec.hash_bits = get(kHashBits, 0);
  switch (static_cast<Algorithm>(id)) {
    case Algorithm::kPerceptron: {
      PerceptronParams p;
      spec.algorithm = PerceptronParams{
          get(kLearningRate, p.learning_rate),
          get(kMarginThreshold, p.margin_threshold)};
      return true;
    }
    case Algorithm::kLogisticRegression: {
      LogisticRegressionParams p;
      spec.algorithm = LogisticRegressionParams{
          get(kLearningRate, p.learning_rate), get(kL2, p.l2)};
      return true;
    }
    case Algorithm::kAveragedPerceptron:
      spec.algorithm = AveragedPerceptronParams{get(kLearningRate, 1.0)};
      return true;
    case Algorithm::kPassiveAggressive: {
      PassiveAggressiveParams p;
      spec.algorithm = PassiveAggressiveParams{
          PaVariant(get(kPaVariant, int(p.variant))),
          get(kAggressiveness, p.aggressiveness)};
      return true;
    }
    case Algorithm::kSgd: {
      SgdParams p;
      SgdOptions& o = p.options;
      p.learning_rate = get(kLearningRate, p.learning_rate);
      o.loss = LossKind(get(kLoss, int(o.loss)));
      o.penalty = Penalty(get(kPenalty, int(o.penalty)));
      o.alpha = get(kAlpha, o.alpha);
      o.l1_ratio = get(kL1Ratio, o.l1_ratio);
      o.schedule = Schedule(get(kSchedule, int(o.schedule)));
      o.power_t = get(kPowerT, o.power_t);
      o.average_from = get(kAverageFrom, o.average_from);
      spec.algorithm = p;
      return true;
    }
    case Algorithm::kPocketPerceptron: {
      PocketPerceptronParams p;
      p.learning_rate = get(kLearningRate, p.learning_rate);
      p.ratchet = get(kRatchet, 1.0) != 0.0;
      p.predict_with_pocket = get(kPredictWithPocket, 1.0) != 0.0;
      spec.algorithm = p;
      return true;
    }
    case Algorithm::kMulticlassPerceptron:
      spec.algorithm = MulticlassPerceptronParams{get(kLearningRate, 1.0)};
      return true;
    case Algorithm::kSoftmaxRegression: {
      SoftmaxRegressionParams p;
      spec.algorithm = SoftmaxRegressionParams{
          get(kLearningRate, p.learning_rate), get(kL2, p.l2)};
      return true;
    }
  }
  return false;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt model snapshot: ", what));
}

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
  KeyedValues parameters;
  ModelCounters& c = s.counters;
  if (!in.Get(name_size) || !in.GetBytes(name_size, name) ||
      !in.Get(algorithm) || !in.Get(s.spec.dimension) ||
      !DecodeParameters(in, parameters) ||
      !DecodeInteractions(in, s.spec.interactions) ||
      !in.Get(c.examples_seen) ||
      !in.Get(c.updates) || !in.Get(c.mistakes) || !in.Get(c.loss_sum) ||
      !in.Get(c.max_squared_norm)) {
    return Corrupt("header fields are truncated");
  }
  s.name = std::string(name);
  if (!SetParameters(algorithm, parameters, s.spec)) {
    return Corrupt(absl::StrCat("unknown algorithm ", algorithm));
  }
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
  Put(payload, static_cast<uint32_t>(AlgorithmOf(s.spec.algorithm)));
  Put(payload, s.spec.dimension);
  const KeyedValues parameters = KeyedParameters(s.spec);
  Put(payload, static_cast<uint32_t>(parameters.size()));
  for (const auto& [key, value] : parameters) {
    Put(payload, key);
    Put(payload, value);
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
