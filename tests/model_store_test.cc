#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/registry/model_registry.h"
#include "core/storage/file_model_store.h"
#include "core/storage/log_record.h"
#include "core/storage/snapshot_codec.h"
#include "core/training/journal.h"
#include "core/training/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/legacy_models.h"
#include "tests/temp_dir.h"

// The store's fsync and rename calls, as this test binary is linked with
// -Wl,--wrap=fsync,--wrap=rename: each is recorded (while recording is on)
// and then made for real.
namespace {
std::mutex syscalls_mu;
bool recording = false;
std::vector<std::string> syscalls;

void Record(std::string call) {
  std::lock_guard lock(syscalls_mu);
  if (recording) syscalls.push_back(std::move(call));
}
}  // namespace

extern "C" {
int __real_fsync(int fd);
int __real_rename(const char* from, const char* to);

int __wrap_fsync(int fd) {
  char target[4096] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  Record("fsync " + std::string(target, n > 0 ? n : 0));
  return __real_fsync(fd);
}
int __wrap_rename(const char* from, const char* to) {
  Record(std::string("rename ") + from + " " + to);
  return __real_rename(from, to);
}
}

namespace halfspace {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

ModelSnapshot SampleSnapshot(const std::string& name) {
  ModelSnapshot s;
  s.name = name;
  s.spec.algorithm = LogisticRegressionParams{0.25, 0.01};
  s.spec.dimension = 3;
  s.weights.w = {1.5, -2.25, 1e-300};
  s.weights.b = -0.125;
  s.counters = {7, 5, 3, 2.5, 14.0};
  s.lsn = 1234;
  s.sources = {{"producer-a", 17}, {"b", 1}};
  return s;
}

// A model file the previous version wrote (tests/data/format_v1/).
std::string LegacyFile(const std::string& name) {
  return std::string(HALFSPACE_SOURCE_DIR) + "/tests/data/format_v1/" + name +
         ".model";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(SnapshotCodecTest, RoundTripsEveryFieldBitForBit) {
  absl::StatusOr<ModelSnapshot> s =
      DecodeSnapshot(EncodeSnapshot(SampleSnapshot("m")));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "m");
  const auto& params = std::get<LogisticRegressionParams>(s->spec.algorithm);
  EXPECT_EQ(s->spec.dimension, 3);
  EXPECT_EQ(params.learning_rate, 0.25);
  EXPECT_EQ(params.l2, 0.01);
  EXPECT_THAT(s->weights.w, ElementsAre(1.5, -2.25, 1e-300));
  EXPECT_EQ(s->weights.b, -0.125);
  EXPECT_EQ(s->counters.examples_seen, 7u);
  EXPECT_EQ(s->counters.updates, 5u);
  EXPECT_EQ(s->counters.mistakes, 3u);
  EXPECT_EQ(s->counters.loss_sum, 2.5);
  EXPECT_EQ(s->counters.max_squared_norm, 14.0);
  EXPECT_EQ(s->lsn, 1234u);
  EXPECT_THAT(s->sources, ElementsAre(Pair("b", 1), Pair("producer-a", 17)));
}

TEST(SnapshotCodecTest, OneStateAlwaysMakesTheSameBytes) {
  // Map fields (sources, parameters) are written in key order, so the pages
  // of one export fit together.
  ModelSnapshot snapshot = SampleSnapshot("m");
  for (int i = 0; i < 200; ++i) snapshot.sources[absl::StrCat("s", i)] = i + 1;
  const std::string first = EncodeSnapshot(snapshot);
  for (int i = 0; i < 5; ++i) {
    ModelSnapshot copy = snapshot;
    EXPECT_EQ(EncodeSnapshot(copy), first);
  }
}

TEST(SnapshotCodecTest, WritesVersion2) {
  const std::string file = EncodeSnapshot(SampleSnapshot("m"));
  uint32_t version = 0;
  std::memcpy(&version, file.data() + 4, sizeof(version));
  EXPECT_EQ(file.substr(0, 4), "HSPM");
  EXPECT_EQ(version, 2u);
}

// Expects `got` to be `want` to 1e-8: binary_sgd learned with the log loss,
// which became scikit-learn's after the files below were written (its
// approximations past |z| = 18 move each step by up to ~1e-9 relative).
void ExpectAlmost(const std::vector<double>& got,
                  const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-8 * std::max(1.0, std::abs(want[i])))
        << what << "[" << i << "]";
  }
}

// The model files the previous version (format 1) wrote load, and hold
// what training the same stream today gives (bit for bit, but for what the
// log loss's change moved).
TEST(SnapshotCodecTest, ReadsEveryFileOfThePreviousVersion) {
  for (const testing::LegacyModel& m : testing::LegacyModels()) {
    const std::string bytes = ReadAll(LegacyFile(m.name));
    ASSERT_FALSE(bytes.empty()) << m.name;
    uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 4, sizeof(version));
    ASSERT_EQ(version, 1u);
    absl::StatusOr<ModelSnapshot> loaded = DecodeSnapshot(bytes);
    ASSERT_TRUE(loaded.ok()) << m.name << ": " << loaded.status();

    std::unique_ptr<Model> fresh = *Model::Create(m.name, m.spec, m.classes);
    testing::TrainLegacyStream(*fresh);
    const ModelSnapshot want = fresh->Snapshot();
    EXPECT_EQ(loaded->name, want.name);
    EXPECT_EQ(AlgorithmOf(loaded->spec.algorithm),
              AlgorithmOf(want.spec.algorithm));
    EXPECT_EQ(loaded->spec.hash_bits, want.spec.hash_bits);
    EXPECT_EQ(loaded->spec.standardize, want.spec.standardize);
    EXPECT_EQ(loaded->spec.interactions.size(), want.spec.interactions.size());
    const bool log_loss = m.name == "binary_sgd";
    if (log_loss) {
      ExpectAlmost(loaded->weights.w, want.weights.w, "w");
      ExpectAlmost({loaded->weights.b}, {want.weights.b}, "b");
      ExpectAlmost(loaded->state, want.state, "state");
      ExpectAlmost({loaded->counters.loss_sum}, {want.counters.loss_sum},
                   "loss_sum");
    } else {
      EXPECT_EQ(loaded->weights.w, want.weights.w) << m.name;
      EXPECT_EQ(loaded->weights.b, want.weights.b) << m.name;
      EXPECT_EQ(loaded->state, want.state) << m.name;
      EXPECT_EQ(loaded->counters.loss_sum, want.counters.loss_sum);
    }
    EXPECT_EQ(loaded->classes, want.classes) << m.name;
    ASSERT_EQ(loaded->class_weights.size(), want.class_weights.size());
    for (size_t k = 0; k < want.class_weights.size(); ++k) {
      EXPECT_EQ(loaded->class_weights[k].w, want.class_weights[k].w);
    }
    EXPECT_EQ(loaded->standardizer, want.standardizer) << m.name;
    EXPECT_EQ(loaded->counters.examples_seen, 40u);
    EXPECT_EQ(loaded->lsn, 0u);
    // And it restores into a model that goes on learning like the fresh one.
    EXPECT_TRUE(Model::Restore(*std::move(loaded)).ok()) << m.name;
  }
}

TEST(SnapshotCodecTest, DetectsAnySingleFlippedByte) {
  const std::string good = EncodeSnapshot(SampleSnapshot("m"));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    EXPECT_EQ(DecodeSnapshot(bad).status().code(), absl::StatusCode::kDataLoss)
        << "byte " << i;
  }
}

TEST(SnapshotCodecTest, DetectsTruncationAndTrailingBytes) {
  const std::string good = EncodeSnapshot(SampleSnapshot("m"));
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeSnapshot(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeSnapshot(good + "x").ok());
}

// The file around `payload`, with a valid checksum: "HSPM", `version`, the
// payload's size, the payload, its CRC-32C.
std::string Wrap(const std::string& payload, uint32_t version = 1) {
  std::string out = "HSPM";
  const uint64_t size = payload.size();
  const uint32_t crc = Crc32c(payload);
  out.append(reinterpret_cast<const char*>(&version), sizeof(version));
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out += payload;
  out.append(reinterpret_cast<const char*>(&crc), sizeof(crc));
  return out;
}

// The payload of an encoded snapshot.
std::string Payload(const std::string& file) {
  return file.substr(16, file.size() - 20);
}

TEST(SnapshotCodecTest, RefusesAChecksummedVersion1PayloadWithTrailingBytes) {
  const std::string payload = Payload(ReadAll(LegacyFile("binary_sgd")));
  ASSERT_TRUE(DecodeSnapshot(Wrap(payload)).ok());
  for (const std::string& tail : {std::string(1, '\0'), std::string(8, '\0')}) {
    absl::Status s = DecodeSnapshot(Wrap(payload + tail)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr("state sizes do not match"));
  }
}

TEST(SnapshotCodecTest, RefusesAChecksummedPayloadWithAnOutOfRangeDimension) {
  std::string v1 = Payload(ReadAll(LegacyFile("binary_sgd")));
  const size_t at = 4 + 10 + 4;  // u32 name size, "binary_sgd", u32 algorithm
  for (int64_t dimension : {int64_t{-1}, kMaxDimension + 1}) {
    std::memcpy(&v1[at], &dimension, sizeof(dimension));
    absl::Status s = DecodeSnapshot(Wrap(v1)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << dimension;
    EXPECT_THAT(s.message(), HasSubstr("dimension is out of range"));

    storage::v1::ModelFile file;
    ToModelFile(SampleSnapshot("m"), file);
    file.set_dimension(dimension);
    s = DecodeSnapshot(Wrap(file.SerializeAsString(), 2)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << dimension;
    EXPECT_THAT(s.message(), HasSubstr("dimension is out of range"));
  }
}

TEST(SnapshotCodecTest, RefusesUnknownVersionsAndAlgorithms) {
  const std::string payload = Payload(EncodeSnapshot(SampleSnapshot("m")));
  EXPECT_THAT(DecodeSnapshot(Wrap(payload, 3)).status().message(),
              HasSubstr("unsupported format version 3"));
  storage::v1::ModelFile file;
  ToModelFile(SampleSnapshot("m"), file);
  file.set_algorithm(99);
  EXPECT_THAT(
      DecodeSnapshot(Wrap(file.SerializeAsString(), 2)).status().message(),
      HasSubstr("unknown algorithm 99"));
}

TEST(SnapshotCodecTest, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cBytewise("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(SnapshotCodecTest, Crc32cAgreesWithTheTableAtEveryLengthAndOffset) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t n = 0; offset + n <= data.size(); n += 7) {
      const absl::string_view part = absl::string_view(data).substr(offset, n);
      EXPECT_EQ(Crc32c(part), Crc32cBytewise(part)) << offset << " " << n;
      const absl::string_view a = part.substr(0, n / 3), b = part.substr(n / 3);
      EXPECT_EQ(Crc32cExtend(Crc32c(a), b), Crc32c(part));
    }
  }
}

TEST(FileModelStoreTest, SavesLoadsAndRemoves) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.File("models"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Save(SampleSnapshot("b")).ok());
  ASSERT_TRUE((*store)->Save(SampleSnapshot("a")).ok());
  EXPECT_TRUE(fs::exists(dir.File("models/a.model")));

  auto loaded = (*store)->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].name, "a");
  EXPECT_EQ((*loaded)[1].name, "b");
  EXPECT_TRUE((*loaded)[1].snapshot.ok());

  ASSERT_TRUE((*store)->Remove("a").ok());
  EXPECT_TRUE((*store)->Remove("never-stored").ok());
  EXPECT_EQ((*store)->LoadAll()->size(), 1u);
}

TEST(FileModelStoreTest, SaveReplacesAtomicallyAndLeavesNoTemporaryFile) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ModelSnapshot s = SampleSnapshot("m");
  ASSERT_TRUE((*store)->Save(s).ok());
  s.weights.b = 42;
  ASSERT_TRUE((*store)->Save(s).ok());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_THAT(files, ElementsAre("m.model", "m.model.prev"));
  EXPECT_EQ((*store)->LoadAll()->at(0).snapshot->weights.b, 42);
  // The state it replaced is the previous snapshot.
  EXPECT_EQ((*store)->LoadPrevious("m")->weights.b, -0.125);
  ASSERT_TRUE((*store)->SetAside("m").ok());
  EXPECT_TRUE((*store)->LoadAll()->empty());
  EXPECT_EQ((*store)->LoadPrevious("m")->weights.b, -0.125);
  ASSERT_TRUE((*store)->Remove("m").ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->LoadPrevious("m").status()));
}

TEST(FileModelStoreTest, SyncsATemporaryFileRenamesItThenSyncsTheDirectory) {
  TempDir dir;
  const std::string models = fs::canonical(dir.path()).string();
  auto store = FileModelStore::Open(models);
  {
    std::lock_guard lock(syscalls_mu);
    recording = true;
  }
  ASSERT_TRUE((*store)->Save(SampleSnapshot("m")).ok());
  std::lock_guard lock(syscalls_mu);
  recording = false;
  const std::string temp = models + "/.m.model.tmp";
  EXPECT_THAT(
      syscalls,
      ElementsAre("fsync " + temp, "rename " + temp + " " + models + "/m.model",
                  "fsync " + models));
  syscalls.clear();
}

TEST(FileModelStoreTest, OpenRemovesTemporaryFilesLeftByACrash) {
  TempDir dir;
  WriteAll(dir.File(".m.model.tmp"), "half-written");
  auto store = FileModelStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE(fs::exists(dir.File(".m.model.tmp")));
  EXPECT_TRUE((*store)->LoadAll()->empty());
}

TEST(FileModelStoreTest, ReportsACorruptFileAndLoadsTheOthers) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ASSERT_TRUE((*store)->Save(SampleSnapshot("m")).ok());
  ASSERT_TRUE((*store)->Save(SampleSnapshot("n")).ok());
  std::string bytes = ReadAll(dir.File("m.model"));
  bytes[bytes.size() / 2] ^= 1;
  WriteAll(dir.File("m.model"), bytes);
  absl::StatusOr<std::vector<StoredModel>> loaded = (*store)->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 2u);
  const absl::Status s = (*loaded)[0].snapshot.status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("m.model"));
  EXPECT_TRUE((*loaded)[1].snapshot.ok());
}

TEST(FileModelStoreTest, RefusesAFileNamedAfterAnotherModel) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ASSERT_TRUE((*store)->Save(SampleSnapshot("m")).ok());
  fs::rename(dir.File("m.model"), dir.File("other.model"));
  EXPECT_THAT((*store)->LoadAll()->at(0).snapshot.status().message(),
              HasSubstr("holds model 'm'"));
}

TEST(FileModelStoreTest, ReportsAnUnwritableDirectory) {
  TempDir dir;
  WriteAll(dir.File("file"), "not a directory");
  EXPECT_EQ(FileModelStore::Open(dir.File("file/models")).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

ModelSpec Spec() {
  ModelSpec spec;
  spec.dimension = 2;
  return spec;
}

TEST(ModelRegistryTest, CreateGetListDeleteWithCanonicalErrors) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ModelRegistry registry(store->get());
  ASSERT_TRUE(registry.Create("b", Spec()).ok());
  ASSERT_TRUE(registry.Create("a", Spec()).ok());
  EXPECT_EQ(registry.Create("a", Spec()).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Create("bad name", Spec()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Get("zzz").status().code(), absl::StatusCode::kNotFound);
  std::vector<std::string> names;
  for (const auto& m : registry.List()) names.push_back(m->name());
  EXPECT_THAT(names, ElementsAre("a", "b"));

  EXPECT_TRUE(fs::exists(dir.File("a.model")));
  ASSERT_TRUE(registry.Delete("a").ok());
  EXPECT_FALSE(fs::exists(dir.File("a.model")));
  EXPECT_EQ(registry.Delete("a").code(), absl::StatusCode::kNotFound);
}

TEST(ModelRegistryTest, DeletedModelHeldByAStreamStopsLearning) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ModelRegistry registry(store->get());
  std::shared_ptr<Model> model = *registry.Create("m", Spec());
  ASSERT_TRUE(registry.Delete("m").ok());
  const std::vector<double> x = {1, 1};
  std::vector<ExampleOutcome> out(1);
  EXPECT_EQ(model->Learn({Example{x, 1}}, absl::MakeSpan(out)).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(registry.SaveChanged().ok());
  EXPECT_FALSE(fs::exists(dir.File("m.model")));
}

// A real FileModelStore that counts the saves of each model and fails the
// next `failures` saves, as a full disk would.
class CountingStore final : public ModelStore {
 public:
  explicit CountingStore(const std::string& dir)
      : store_(*FileModelStore::Open(dir)) {}

  absl::Status Save(const ModelSnapshot& snapshot) override {
    if (failures > 0) {
      --failures;
      return absl::ResourceExhaustedError("no space left on device");
    }
    ++saves[snapshot.name];
    return store_->Save(snapshot);
  }
  absl::Status Remove(absl::string_view name) override {
    return store_->Remove(name);
  }
  absl::StatusOr<ModelSnapshot> LoadPrevious(absl::string_view name) override {
    return store_->LoadPrevious(name);
  }
  absl::Status SetAside(absl::string_view name) override {
    return store_->SetAside(name);
  }
  absl::StatusOr<std::vector<StoredModel>> LoadAll() override {
    return store_->LoadAll();
  }
  absl::Status SaveAliases(const AliasMap& aliases) override {
    return store_->SaveAliases(aliases);
  }
  absl::StatusOr<AliasMap> LoadAliases() override {
    return store_->LoadAliases();
  }

  std::map<std::string, int> saves;
  int failures = 0;

 private:
  std::unique_ptr<FileModelStore> store_;
};

TEST(ModelRegistryTest, SaveChangedStoresOnlyChangedModelsAndLoadRestores) {
  TempDir dir;
  CountingStore store(dir.path());
  {
    ModelRegistry registry(&store);
    std::shared_ptr<Model> changed = *registry.Create("changed", Spec());
    ASSERT_TRUE(registry.Create("same", Spec()).ok());
    EXPECT_THAT(store.saves, ElementsAre(Pair("changed", 1), Pair("same", 1)));
    const std::vector<double> x = {1, 2};
    std::vector<ExampleOutcome> out(1);
    ASSERT_TRUE(changed->Learn({Example{x, 1}}, absl::MakeSpan(out)).ok());
    ASSERT_TRUE(registry.SaveChanged().ok());
    EXPECT_THAT(store.saves, ElementsAre(Pair("changed", 2), Pair("same", 1)));
    ASSERT_TRUE(registry.SaveChanged().ok());  // nothing changed since
    EXPECT_THAT(store.saves, ElementsAre(Pair("changed", 2), Pair("same", 1)));
  }
  ModelRegistry restored(&store);
  ASSERT_TRUE(restored.Load().ok());
  ModelSnapshot s = (*restored.Get("changed"))->Snapshot();
  EXPECT_THAT(s.weights.w, ElementsAre(1, 2));
  EXPECT_EQ(s.counters.examples_seen, 1u);
  EXPECT_EQ(restored.List().size(), 2u);
}

TEST(ModelRegistryTest, AFailedSaveIsRetriedByTheNextSaveChanged) {
  TempDir dir;
  CountingStore store(dir.path());
  ModelRegistry registry(&store);
  std::shared_ptr<Model> model = *registry.Create("m", Spec());
  const std::vector<double> x = {1, 2};
  std::vector<ExampleOutcome> out(1);
  ASSERT_TRUE(model->Learn({Example{x, 1}}, absl::MakeSpan(out)).ok());
  store.failures = 1;
  EXPECT_EQ(registry.SaveChanged().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.saves["m"], 1);
  ASSERT_TRUE(registry.SaveChanged().ok());
  EXPECT_EQ(store.saves["m"], 2);
  EXPECT_EQ((*store.LoadAll())[0].snapshot->counters.examples_seen, 1u);
}

// A journal in memory: hands out LSNs and records what the registry asks.
class RecordingJournal final : public RecordJournal {
 public:
  using RecordJournal::Append;
  absl::StatusOr<uint64_t> Append(absl::string_view model,
                                  absl::string_view) override {
    events.push_back(absl::StrCat("append ", model));
    return ++last;
  }
  void WhenDurable(uint64_t, absl::AnyInvocable<void() &&> done) override {
    std::move(done)();
  }
  void WaitDurable(uint64_t lsn) override {
    events.push_back(absl::StrCat("wait ", lsn));
  }
  uint64_t last = 0;
  std::vector<std::string> events;
};

TEST(ModelRegistryTest, ChangesAreLoggedAndSnapshotsWaitForTheirRecords) {
  TempDir dir;
  CountingStore store(dir.path());
  RecordingJournal journal;
  ModelRegistry registry(&store, &journal);
  uint64_t lsn = 0;
  std::shared_ptr<Model> model = *registry.Create("m", Spec(), {}, &lsn);
  EXPECT_EQ(lsn, 1u);
  EXPECT_TRUE(store.saves.empty());  // the log holds it; no snapshot yet
  ASSERT_TRUE(registry.SetWeights("m", "", {1, 2}, 0, &lsn).ok());
  EXPECT_EQ(lsn, 2u);
  EXPECT_EQ(model->lsn(), 2u);
  EXPECT_EQ(registry.DroppableLog(2), 0u);  // m's state is only in the log
  ASSERT_TRUE(registry.SaveChanged().ok());
  EXPECT_EQ(store.saves["m"], 1);
  EXPECT_THAT(journal.events, ElementsAre("append m", "append m", "wait 2"));
  EXPECT_EQ(registry.DroppableLog(2), 2u);
  EXPECT_EQ(store.LoadAll()->at(0).snapshot->lsn, 2u);

  // A snapshot that fails keeps the model's records in the log.
  ASSERT_TRUE(registry.SetWeights("m", "", {3, 4}, 0, &lsn).ok());
  store.failures = 1;
  EXPECT_FALSE(registry.SaveChanged().ok());
  EXPECT_EQ(registry.DroppableLog(3), 2u);
  ASSERT_TRUE(registry.SaveChanged().ok());
  // The log keeps what a fall-back to the previous snapshot (at 2) replays.
  EXPECT_EQ(registry.DroppableLog(3), 2u);

  ASSERT_TRUE(registry.Delete("m", &lsn).ok());
  EXPECT_EQ(lsn, 4u);
  EXPECT_TRUE(store.LoadAll()->empty());
}

// A journal whose appends wait until the test lets them through.
class GatedJournal final : public RecordJournal {
 public:
  using RecordJournal::Append;
  absl::StatusOr<uint64_t> Append(absl::string_view,
                                  absl::string_view) override {
    std::unique_lock lock(mu_);
    appending_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    return ++last_;
  }
  void WhenDurable(uint64_t, absl::AnyInvocable<void() &&> done) override {
    std::move(done)();
  }
  void WaitDurable(uint64_t) override {}
  void WaitUntilAppending() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return appending_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool appending_ = false;
  bool open_ = false;
  uint64_t last_ = 0;
};

// A snapshot taken while a change is being logged waits for it, so that
// the log is never trimmed past a change no snapshot holds.
TEST(ModelRegistryTest, ASnapshotDuringALoggedChangeIncludesIt) {
  TempDir dir;
  CountingStore store(dir.path());
  GatedJournal journal;
  ModelRegistry registry(&store);  // created unlogged: the gate stays shut
  std::shared_ptr<Model> model = *registry.Create("m", Spec());
  registry.set_journal(&journal);
  std::thread learner([&] {
    const std::vector<double> x = {1, 2};
    std::vector<ExampleOutcome> out(1);
    PreparedExample prepared;
    model->Prepare(Example{x, 1}, prepared);
    TrainBatch batch;
    ASSERT_TRUE(Trainer(&journal)
                    .Train(*model, batch, absl::MakeConstSpan(&prepared, 1),
                           absl::MakeSpan(out))
                    .ok());
  });
  journal.WaitUntilAppending();  // the learner holds the model's lock
  std::thread snapshot([&] { ASSERT_TRUE(registry.SaveChanged().ok()); });
  absl::SleepFor(absl::Milliseconds(100));
  journal.Open();
  learner.join();
  snapshot.join();
  EXPECT_EQ(store.LoadAll()->at(0).snapshot->counters.examples_seen, 1u);
}

// A tagged batch that follows one its source has not reached (that one
// was lost on its way, or comes after it) is refused ABORTED as a whole:
// it learns nothing and writes nothing down; once the lost one arrives, it
// is learned, and the refused one sent again is too.
TEST(ModelRegistryTest, ATaggedBatchThatFollowsALostOneLearnsNothing) {
  TempDir dir;
  CountingStore store(dir.path());
  RecordingJournal journal;
  ModelRegistry registry(&store, &journal);
  std::shared_ptr<Model> model = *registry.Create("m", Spec());
  // Examples first..first+1 of source "p", sent after those up to follows.
  std::vector<ExampleOutcome> out(2);
  auto train = [&](uint64_t first, uint64_t follows) {
    const std::vector<double> x = {1, -2};
    std::vector<PreparedExample> prepared(2);
    for (PreparedExample& p : prepared) model->Prepare(Example{x, 1}, p);
    out.assign(2, ExampleOutcome());
    TrainBatch batch;
    batch.source = "p";
    batch.first_sequence = first;
    batch.follows = follows;
    return Trainer(&journal)
        .Train(*model, batch, prepared, absl::MakeSpan(out))
        .status();
  };
  ASSERT_TRUE(train(1, 0).ok());
  const uint64_t appended = journal.last;
  const absl::Status refused = train(4, 3);  // 3 was lost
  EXPECT_EQ(refused.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(refused.message(), HasSubstr("source 'p' up to sequence 3"));
  EXPECT_EQ(journal.last, appended);
  EXPECT_EQ(model->Stats().counters.examples_seen, 2u);
  EXPECT_EQ(model->LastSequence("p"), 2u);
  for (const auto& [first, follows] : {std::pair{3, 2}, std::pair{5, 4}}) {
    ASSERT_TRUE(train(first, follows).ok());
    for (const ExampleOutcome& outcome : out) {
      EXPECT_TRUE(outcome.error.ok());
      EXPECT_FALSE(outcome.duplicate);
    }
  }
  EXPECT_EQ(model->Stats().counters.examples_seen, 6u);
  EXPECT_EQ(model->LastSequence("p"), 6u);
}

// A replica applies the creation of the model it follows, not another
// model's of the name that an earlier life of the name left in the stream,
// and installs no snapshot of that other model.
TEST(ModelRegistryTest, AReplicaAppliesOnlyItsOwnModelsCreation) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ModelRegistry registry(store->get());
  auto replicated = [](const std::string& creation) {
    ModelSpec spec = Spec();
    spec.replication = {"s", "halfspace.train.m", 1, creation, {}};
    return spec;
  };
  const auto train = [](Model&, TrainBatch&, const Trainer&) {
    return absl::InternalError("no training here");
  };
  const std::string earlier =
      *registry.CreationRecord("m", replicated("a"), {});
  const std::string later = *registry.CreationRecord("m", replicated("b"), {});
  ASSERT_TRUE(registry.ApplyReplicated(1, "m", "b", earlier, train).ok());
  EXPECT_EQ(registry.Get("m").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(registry.ApplyReplicated(2, "m", "b", later, train).ok());
  absl::StatusOr<std::shared_ptr<Model>> model = registry.Get("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->spec().replication.creation, "b");
  EXPECT_EQ((*model)->lsn(), 2u);

  absl::StatusOr<std::pair<uint64_t, std::string>> file =
      registry.ReplicaFile("m");
  ASSERT_TRUE(file.ok()) << file.status();
  const absl::Status other = registry.InstallReplica(
      7, "m", file->second, replicated("c").replication);
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition) << other;
  EXPECT_EQ((*registry.Get("m"))->lsn(), 2u);
  ASSERT_TRUE(
      registry.InstallReplica(7, "m", file->second, replicated("b").replication)
          .ok());
  EXPECT_EQ((*registry.Get("m"))->lsn(), 7u);
}

TEST(ModelRegistryTest, SetWeightsThatFailsChangesNothing) {
  TempDir dir;
  CountingStore store(dir.path());
  ModelRegistry registry(&store);
  std::shared_ptr<Model> model = *registry.Create("m", Spec());
  EXPECT_EQ(registry.SetWeights("m", "", {1, 2, 3}, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.SetWeights("m", "cat", {1, 2}, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.SetWeights("other", "", {1, 2}, 0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(model->Snapshot().weights.w, ElementsAre(0, 0));
  ASSERT_TRUE(registry.SetWeights("m", "", {1, 2}, 3).ok());
  EXPECT_THAT(model->Snapshot().weights.w, ElementsAre(1, 2));
}

}  // namespace
}  // namespace halfspace

namespace halfspace {
namespace {

// Creates, deletes, saves and trains from several threads at once: every
// model that ends up registered is stored, and no deleted model is.
TEST(ModelRegistryTest, ConcurrentCreateDeleteSaveAndLearnStayConsistent) {
  TempDir dir;
  auto store = FileModelStore::Open(dir.path());
  ModelRegistry registry(store->get());
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<double> x = {1, -1};
      std::vector<ExampleOutcome> out(1);
      for (int i = 0; i < 40; ++i) {
        const std::string name = absl::StrCat("m", (t * 7 + i) % 10);
        (void)registry.Create(name, Spec());
        if (auto model = registry.Get(name); model.ok()) {
          (void)(*model)->Learn({Example{x, i % 2 ? 1 : -1}},
                                absl::MakeSpan(out));
        }
        if (i % 3 == 0) (void)registry.Delete(name);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(registry.SaveChanged().ok());
  });
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(registry.SaveChanged().ok());

  std::vector<std::string> registered, stored;
  for (const auto& m : registry.List()) registered.push_back(m->name());
  absl::StatusOr<std::vector<StoredModel>> snapshots = (*store)->LoadAll();
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  for (const StoredModel& s : *snapshots) stored.push_back(s.name);
  EXPECT_EQ(registered, stored);
}

}  // namespace
}  // namespace halfspace
