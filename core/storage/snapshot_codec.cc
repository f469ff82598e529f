#include "core/storage/snapshot_codec.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/storage/parameter_keys.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace halfspace {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the envelope is written with little-endian memcpy");

constexpr absl::string_view kMagic = "HSPM";
// magic, version, payload size; then the payload and its checksum.
constexpr size_t kHeaderSize = 4 + 4 + 8;
constexpr size_t kTrailerSize = 4;

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T Get(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

void ToProto(const LinearWeights& weights, storage::v1::Weights& out) {
  out.mutable_w()->Assign(weights.w.begin(), weights.w.end());
  out.set_b(weights.b);
}

LinearWeights FromProto(const storage::v1::Weights& weights) {
  LinearWeights out;
  out.w.assign(weights.w().begin(), weights.w().end());
  out.b = weights.b();
  return out;
}

}  // namespace

absl::Status CorruptSnapshot(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt model snapshot: ", what));
}

absl::Status CheckDecodedSpec(const ModelSpec& spec) {
  if (spec.dimension < 0 || spec.dimension > kMaxDimension) {
    return CorruptSnapshot("the dimension is out of range");
  }
  if (spec.hash_bits < 0 || spec.hash_bits > kMaxHashBits) {
    return CorruptSnapshot("hash_bits is out of range");
  }
  if (spec.interactions.size() > kMaxInteractions) {
    return CorruptSnapshot("too many interactions");
  }
  return absl::OkStatus();
}

void ToStored(const PendingExamples::Entry& e,
              storage::v1::PendingExample& out) {
  out.set_id(e.id);
  out.set_features(e.features);
  out.set_deadline_micros(e.deadline_micros);
  if (e.weight != 1) out.set_weight(e.weight);
}

PendingExamples::Entry FromStored(storage::v1::PendingExample& e) {
  const double w = e.weight();
  return {std::move(*e.mutable_id()), std::move(*e.mutable_features()),
          e.deadline_micros(), w > 0 && std::isfinite(w) ? w : 1.0};
}

namespace {

void ToProto(const PendingExamples::Snapshot& s,
             storage::v1::PendingExamples& out) {
  for (const PendingExamples::Entry& e : s.waiting) {
    ToStored(e, *out.add_waiting());
  }
  for (const PendingExamples::Tombstone& t : s.tombstones) {
    storage::v1::Tombstone* tombstone = out.add_tombstones();
    tombstone->set_id(t.id);
    tombstone->set_joined(t.state == PendingExamples::State::kJoined);
  }
  out.set_remembered(s.counters.remembered);
  out.set_joined(s.counters.joined);
  out.set_expired(s.counters.expired);
}

PendingExamples::Snapshot FromProto(storage::v1::PendingExamples p) {
  PendingExamples::Snapshot s;
  for (storage::v1::PendingExample& e : *p.mutable_waiting()) {
    s.waiting.push_back(FromStored(e));
  }
  for (storage::v1::Tombstone& t : *p.mutable_tombstones()) {
    s.tombstones.push_back({std::move(*t.mutable_id()),
                            t.joined() ? PendingExamples::State::kJoined
                                       : PendingExamples::State::kExpired});
  }
  s.counters = {p.remembered(), p.joined(), p.expired()};
  return s;
}

}  // namespace

void ToModelFile(const ModelSnapshot& s, storage::v1::ModelFile& file) {
  file.set_name(s.name);
  file.set_algorithm(static_cast<uint32_t>(AlgorithmOf(s.spec.algorithm)));
  file.set_dimension(s.spec.dimension);
  for (const auto& [key, value] : KeyedParameters(s.spec)) {
    (*file.mutable_parameters())[key] = value;
  }
  for (const Interaction& i : s.spec.interactions) {
    storage::v1::Interaction* out = file.add_interactions();
    out->set_first(i.first);
    out->set_second(i.second);
  }
  if (IsReplicated(s.spec)) {
    ToProto(s.spec.replication, *file.mutable_replication());
  }
  storage::v1::Counters* c = file.mutable_counters();
  c->set_examples_seen(s.counters.examples_seen);
  c->set_updates(s.counters.updates);
  c->set_mistakes(s.counters.mistakes);
  c->set_loss_sum(s.counters.loss_sum);
  c->set_max_squared_norm(s.counters.max_squared_norm);
  if (IsMulticlass(s.spec)) {
    for (size_t k = 0; k < s.classes.size(); ++k) {
      storage::v1::ClassWeights* row = file.add_classes();
      row->set_label(s.classes[k]);
      if (k < s.class_weights.size()) {
        ToProto(s.class_weights[k], *row->mutable_weights());
      }
    }
  } else {
    ToProto(s.weights, *file.mutable_weights());
  }
  file.mutable_state()->Assign(s.state.begin(), s.state.end());
  file.mutable_standardizer()->Assign(s.standardizer.begin(),
                                      s.standardizer.end());
  file.set_lsn(s.lsn);
  for (const auto& [source, sequence] : s.sources) {
    (*file.mutable_sources())[source] = sequence;
  }
  ToProto(s.pending, *file.mutable_pending());
  file.mutable_progress()->Assign(s.progress.begin(), s.progress.end());
  file.mutable_drift()->Assign(s.drift.begin(), s.drift.end());
  file.mutable_reaction()->Assign(s.reaction.begin(), s.reaction.end());
  file.set_incarnation(s.incarnation);
  for (const auto& [peer, counts] : s.paired) {
    storage::v1::PairedCounts& out = (*file.mutable_paired())[peer];
    out.set_examples(counts.examples);
    out.set_both_wrong(counts.both_wrong);
    out.set_only_self_wrong(counts.only_self_wrong);
    out.set_only_peer_wrong(counts.only_peer_wrong);
    out.set_peer_incarnation(counts.peer_incarnation);
  }
}

absl::StatusOr<ModelSnapshot> FromModelFile(storage::v1::ModelFile file) {
  ModelSnapshot s;
  s.name = std::move(*file.mutable_name());
  const KeyedValues parameters(file.parameters().begin(),
                               file.parameters().end());
  if (!SetParameters(file.algorithm(), parameters, s.spec)) {
    return CorruptSnapshot(
        absl::StrCat("unknown algorithm ", file.algorithm()));
  }
  s.spec.dimension = file.dimension();
  for (const storage::v1::Interaction& i : file.interactions()) {
    s.spec.interactions.push_back({i.first(), i.second()});
  }
  if (file.has_replication()) {
    s.spec.replication = ReplicationOf(file.replication());
  }
  if (absl::Status st = CheckDecodedSpec(s.spec); !st.ok()) return st;
  const storage::v1::Counters& c = file.counters();
  s.counters = {c.examples_seen(), c.updates(), c.mistakes(), c.loss_sum(),
                c.max_squared_norm()};
  const bool multiclass = IsMulticlass(s.spec);
  if (multiclass ? file.has_weights() : file.classes_size() > 0) {
    return CorruptSnapshot(multiclass ? "a multiclass model with one row"
                                      : "a binary model with class rows");
  }
  if (file.classes_size() > kMaxClasses) {
    return CorruptSnapshot("too many classes");
  }
  for (const storage::v1::ClassWeights& row : file.classes()) {
    s.classes.push_back(row.label());
    s.class_weights.push_back(FromProto(row.weights()));
  }
  s.weights = FromProto(file.weights());
  s.state.assign(file.state().begin(), file.state().end());
  s.standardizer.assign(file.standardizer().begin(), file.standardizer().end());
  s.lsn = file.lsn();
  s.sources.insert(file.sources().begin(), file.sources().end());
  s.pending = FromProto(std::move(*file.mutable_pending()));
  s.progress.assign(file.progress().begin(), file.progress().end());
  s.drift.assign(file.drift().begin(), file.drift().end());
  s.reaction.assign(file.reaction().begin(), file.reaction().end());
  s.incarnation = file.incarnation();
  for (const auto& [peer, counts] : file.paired()) {
    s.paired[peer] = {counts.examples(), counts.both_wrong(),
                      counts.only_self_wrong(), counts.only_peer_wrong(),
                      counts.peer_incarnation()};
  }
  return s;
}

std::string EncodeSnapshot(const ModelSnapshot& snapshot) {
  storage::v1::ModelFile file;
  ToModelFile(snapshot, file);
  // Deterministic: one state always makes the same bytes (map fields are
  // written in key order), so pages of one export fit together.
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    file.SerializeToCodedStream(&coded);
  }
  std::string out(kMagic);
  out.reserve(kHeaderSize + payload.size() + kTrailerSize);
  Put(out, kModelFileVersion);
  Put(out, static_cast<uint64_t>(payload.size()));
  out.append(payload);
  Put(out, Crc32c(payload));
  return out;
}

absl::StatusOr<ModelSnapshot> DecodeSnapshot(absl::string_view bytes) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, 4) != kMagic) {
    return CorruptSnapshot("not a halfspace model file (bad magic)");
  }
  if (bytes.size() < kHeaderSize + kTrailerSize) {
    return CorruptSnapshot("file is truncated or has trailing bytes");
  }
  const uint32_t version = Get<uint32_t>(bytes.data() + 4);
  const uint64_t payload_size = Get<uint64_t>(bytes.data() + 8);
  if (version != 1 && version != kModelFileVersion) {
    return CorruptSnapshot(absl::StrCat("unsupported format version ", version,
                                        " (this build reads 1 and 2)"));
  }
  if (payload_size != bytes.size() - kHeaderSize - kTrailerSize) {
    return CorruptSnapshot("file is truncated or has trailing bytes");
  }
  const absl::string_view payload = bytes.substr(kHeaderSize, payload_size);
  if (Crc32c(payload) !=
      Get<uint32_t>(bytes.data() + kHeaderSize + payload_size)) {
    return CorruptSnapshot("checksum mismatch");
  }
  if (version == 1) return DecodeSnapshotV1(payload);
  storage::v1::ModelFile file;
  if (!file.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return CorruptSnapshot("the payload is not a ModelFile message");
  }
  return FromModelFile(std::move(file));
}

void ToProto(const Replication& replication, storage::v1::Replication& out) {
  out.set_stream(replication.stream);
  out.set_subject(replication.subject);
  out.set_replicas(replication.replicas);
  out.set_creation(replication.creation);
  const ReplicaLimits& limits = replication.limits;
  if (limits.max_model_bytes != 0 || limits.max_classes != 0 ||
      limits.max_named_features != 0 || limits.max_interaction_products != 0) {
    storage::v1::ReplicaLimits* kept = out.mutable_limits();
    kept->set_max_model_bytes(limits.max_model_bytes);
    kept->set_max_classes(limits.max_classes);
    kept->set_max_named_features(limits.max_named_features);
    kept->set_max_interaction_products(limits.max_interaction_products);
  }
}

Replication ReplicationOf(const storage::v1::Replication& r) {
  const storage::v1::ReplicaLimits& l = r.limits();
  return Replication{r.stream(),
                     r.subject(),
                     r.replicas(),
                     r.creation(),
                     {l.max_model_bytes(), l.max_classes(),
                      l.max_named_features(), l.max_interaction_products()}};
}

}  // namespace halfspace
