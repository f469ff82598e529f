// Replicated models against real processes: a three-node NATS JetStream
// cluster (nats-server) and three halfspace servers on loopback. Every
// replica of a model must end equal, bit for bit, to one uninterrupted run
// over its stream's order, while NATS nodes and replicas are killed and
// started again.

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "halfspace/storage/v1/storage.pb.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "tests/drift_streams.h"
#include "tests/http_get.h"
#include "tests/nats_cluster.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"
#include "tests/test_server.h"
#include "tests/vw_socket.h"

namespace halfspace {
namespace {

using ::testing::HasSubstr;
using Stub = v1::HalfspaceService::Stub;

// Three models of three kinds; softmax takes class names.
struct Kind {
  std::string name;
  std::string algorithm;  // as TextAlgorithm reads it
  bool multiclass = false;
};
const Kind kKinds[] = {
    {"perceptron", "perceptron"},
    {"asgd", "sgd { loss: LOSS_LOG average_from: 1 alpha: 0.001 }"},
    {"softmax", "softmax_regression", true},
};

v1::CreateModelRequest CreateRequest(const Kind& kind) {
  v1::CreateModelRequest request;
  request.set_model(kind.name);
  *request.mutable_algorithm() = TextAlgorithm(kind.algorithm);
  request.set_dimension(3);
  return request;
}

// Examples [first, first + n) of the noisy rule, for `kind`.
v1::TrainRequest Batch(const Kind& kind, int first, int n,
                       const std::string& source) {
  v1::TrainRequest request;
  request.set_model(kind.name);
  const auto examples = NoisyExamples(first + n);
  for (int i = first; i < first + n; ++i) {
    v1::Example* e = request.add_examples();
    e->mutable_features()->mutable_dense()->Add(examples[i].first.begin(),
                                                examples[i].first.end());
    if (kind.multiclass) {
      e->set_class_label(examples[i].second > 0 ? "up"
                         : i % 3 == 0           ? "flat"
                                                : "down");
    } else {
      e->set_label(examples[i].second);
    }
  }
  if (!source.empty()) {
    request.set_source(source);
    request.set_sequence(first + 1);
  }
  return request;
}

// A call's status as an absl::Status of the same code and message.
absl::Status StatusOf(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// One Train call of one request; the response, or why not.
absl::StatusOr<v1::TrainResponse> TrainOnce(Stub& stub,
                                            const v1::TrainRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto stream = stub.Train(&context);
  v1::TrainResponse response;
  const bool sent = stream->Write(request);
  const bool read = sent && stream->Read(&response);
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  if (!read || !status.ok()) {
    return absl::UnavailableError(absl::StrCat("Train: ", status.error_code(),
                                               " ", status.error_message()));
  }
  return response;
}

// Creates `kind`'s model, replicated on three NATS servers, through `stub`.
grpc::Status CreateReplicated(Stub& stub, const Kind& kind) {
  v1::CreateModelRequest request = CreateRequest(kind);
  request.mutable_replication()->set_replicas(3);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1::CreateModelResponse response;
  return stub.CreateModel(&context, request, &response);
}

// The halfspace servers, each a replica of every replicated model.
class Replicas {
 public:
  // `flags`: replica i's own flags, if any.
  Replicas(const TempDir& dir, const NatsCluster& nats, int n,
           std::vector<std::vector<std::string>> flags = {})
      : dir_(dir), nats_(nats), flags_(std::move(flags)) {
    flags_.resize(n);
    for (int i = 0; i < n; ++i) {
      ports_.push_back(FreePort());
      servers_.emplace_back();
      Start(i);
    }
  }
  void Start(int i) {
    std::vector<std::string> flags = {absl::StrCat("--nats_url=", nats_.urls()),
                                      absl::StrCat("--replica_name=r", i)};
    flags.insert(flags.end(), flags_[i].begin(), flags_[i].end());
    servers_[i] = std::make_unique<ServerProcess>(
        dir_.File(absl::StrCat("replica", i)),
        dir_.File(absl::StrCat("replica", i, ".log")), flags, ports_[i]);
    ASSERT_TRUE(servers_[i]->WaitUntilReady()) << Log(i);
    stubs_.resize(servers_.size());
    stubs_[i] = v1::HalfspaceService::NewStub(
        FastReconnectingChannel(servers_[i]->target()));
    // Serving once it has recovered and joined the NATS cluster.
    const absl::Time deadline = absl::Now() + absl::Seconds(40);
    grpc::Status status;
    do {
      grpc::ClientContext context;
      v1::ListModelsRequest request;
      v1::ListModelsResponse response;
      status = stubs_[i]->ListModels(&context, request, &response);
      if (!status.ok()) absl::SleepFor(absl::Milliseconds(50));
    } while (!status.ok() && absl::Now() < deadline);
    ASSERT_TRUE(status.ok()) << status.error_message() << Log(i);
  }
  // Starts one more replica, with `flags` of its own; its index.
  int Add(std::vector<std::string> flags) {
    flags_.push_back(std::move(flags));
    ports_.push_back(FreePort());
    servers_.emplace_back();
    Start(servers_.size() - 1);
    return servers_.size() - 1;
  }
  void Kill(int i) { servers_[i].reset(); }
  // Stops replica i with `signal`; its exit status.
  int Stop(int i, int signal) { return servers_[i]->Stop(signal); }
  Stub& stub(int i) { return *stubs_[i]; }
  int size() const { return servers_.size(); }
  std::string Log(int i) const {
    return Tail(dir_.File(absl::StrCat("replica", i, ".log")));
  }
  // The address of replica i, for a client of its own.
  std::string target(int i) const {
    return absl::StrCat("127.0.0.1:", ports_[i]);
  }

 private:
  const TempDir& dir_;
  const NatsCluster& nats_;
  std::vector<std::vector<std::string>> flags_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<std::unique_ptr<Stub>> stubs_;
};

// A JetStream context of the test's own, to publish as a producer and to
// read a stream's state.
class Producer {
 public:
  explicit Producer(const std::string& url) {
    EXPECT_EQ(natsConnection_ConnectTo(&nc_, url.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_JetStream(&js_, nc_, nullptr), NATS_OK);
  }
  ~Producer() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  // Publishes `data` to `subject` with a Halfspace-Format header (none if
  // empty), retrying while the cluster elects a leader; its sequence.
  uint64_t Publish(const std::string& subject, const std::string& data,
                   const std::string& format = "") {
    for (int attempt = 0; attempt < 100; ++attempt) {
      natsMsg* msg = nullptr;
      natsMsg_Create(&msg, subject.c_str(), nullptr, data.data(), data.size());
      if (!format.empty()) {
        natsMsgHeader_Set(msg, "Halfspace-Format", format.c_str());
      }
      jsPubAck* ack = nullptr;
      const natsStatus s = js_PublishMsg(&ack, js_, msg, nullptr, nullptr);
      natsMsg_Destroy(msg);
      if (s == NATS_OK) {
        const uint64_t sequence = ack->Sequence;
        jsPubAck_Destroy(ack);
        return sequence;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "cannot publish to " << subject;
    return 0;
  }
  // The first sequence `stream` still holds (0 if it cannot be read).
  uint64_t FirstSequence(const std::string& stream) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, nullptr) !=
        NATS_OK) {
      return 0;
    }
    const uint64_t first = info->State.FirstSeq;
    jsStreamInfo_Destroy(info);
    return first;
  }
  // Creates `stream` on `subject` in three replicas, taking messages of at
  // most `max_bytes`.
  void AddStream(const std::string& stream, const std::string& subject,
                 int32_t max_bytes) {
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    const char* subjects[] = {subject.c_str()};
    config.Name = stream.c_str();
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    config.Replicas = 3;
    config.MaxMsgSize = max_bytes;
    jsStreamInfo* info = nullptr;
    EXPECT_EQ(js_AddStream(&info, js_, &config, nullptr, nullptr), NATS_OK);
    jsStreamInfo_Destroy(info);
  }
  // The last sequence of `stream` (0 if it cannot be read).
  uint64_t LastSequence(const std::string& stream) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, nullptr) !=
        NATS_OK) {
      return 0;
    }
    const uint64_t last = info->State.LastSeq;
    jsStreamInfo_Destroy(info);
    return last;
  }
  // Claims `model` in the catalog with `claim`, as a server does.
  void Claim(const std::string& model, const storage::v1::Replication& claim) {
    kvStore* catalog = nullptr;
    ASSERT_EQ(js_KeyValue(&catalog, js_, "halfspace_models"), NATS_OK);
    const std::string value = claim.SerializeAsString();
    uint64_t revision = 0;
    EXPECT_EQ(kvStore_Create(&revision, catalog, model.c_str(), value.data(),
                             value.size()),
              NATS_OK);
    kvStore_Destroy(catalog);
  }
  // The name of the node that leads `stream` ("n0", ...; empty if none).
  std::string Leader(const std::string& stream) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, nullptr) !=
        NATS_OK) {
      return "";
    }
    std::string leader;
    if (info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
      leader = info->Cluster->Leader;
    }
    jsStreamInfo_Destroy(info);
    return leader;
  }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

// The model's weights as bits, every class's, to compare exactly.
std::vector<uint64_t> WeightBits(Stub& stub, const std::string& model) {
  grpc::ClientContext context;
  v1::GetWeightsRequest request;
  request.set_model(model);
  v1::GetWeightsResponse response;
  const grpc::Status status = stub.GetWeights(&context, request, &response);
  EXPECT_TRUE(status.ok()) << model << ": " << status.error_message();
  std::vector<uint64_t> bits;
  auto add = [&bits](double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof(b));
    bits.push_back(b);
  };
  for (double v : response.weights()) add(v);
  add(response.bias());
  for (const v1::ClassWeights& c : response.classes()) {
    for (double v : c.weights()) add(v);
    add(c.bias());
  }
  return bits;
}

absl::StatusOr<v1::Model> GetModel(Stub& stub, const std::string& model) {
  grpc::ClientContext context;
  v1::GetModelRequest request;
  request.set_model(model);
  v1::GetModelResponse response;
  const grpc::Status status = stub.GetModel(&context, request, &response);
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  return response.model();
}

absl::Status DeleteModel(Stub& stub, const std::string& model) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::DeleteModelRequest request;
  request.set_model(model);
  v1::DeleteModelResponse response;
  return StatusOf(stub.DeleteModel(&context, request, &response));
}

// Waits until replica `stub` of `model` has applied its stream up to
// `position` with no lag; whether it did within 30 s.
testing::AssertionResult CaughtUp(Stub& stub, const std::string& model,
                                  uint64_t position) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<v1::Model> m;
  while (absl::Now() < deadline) {
    m = GetModel(stub, model);
    if (m.ok() && m->replica().position() >= position &&
        m->replica().lag_records() == 0 && m->replica().stalled().empty()) {
      return testing::AssertionSuccess();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (!m.ok()) return testing::AssertionFailure() << m.status();
  return testing::AssertionFailure()
         << model << " at position " << m->replica().position() << ", lag "
         << m->replica().lag_records() << ", stalled '"
         << m->replica().stalled() << "', not caught up with " << position;
}

// Creates `kind` replicated through the first of `replicas` and, on that
// server, its local twin NAME_local, which a test gives the same calls to
// compare with; holds once every replica holds the replicated one.
testing::AssertionResult CreateWithLocalTwin(Replicas& replicas,
                                             const Kind& kind) {
  if (grpc::Status s = CreateReplicated(replicas.stub(0), kind); !s.ok()) {
    return testing::AssertionFailure() << s.error_message() << replicas.Log(0);
  }
  v1::CreateModelRequest local = CreateRequest(kind);
  local.set_model(kind.name + "_local");
  grpc::ClientContext context;
  v1::CreateModelResponse response;
  if (grpc::Status s = replicas.stub(0).CreateModel(&context, local, &response);
      !s.ok()) {
    return testing::AssertionFailure() << s.error_message();
  }
  for (int i = 1; i < replicas.size(); ++i) {
    if (testing::AssertionResult held =
            CaughtUp(replicas.stub(i), kind.name, 1);
        !held) {
      return held << " (replica " << i << ")";
    }
  }
  return testing::AssertionSuccess();
}

TEST(ReplicationTest, EveryReplicaEqualsOneUninterruptedRunThroughKills) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  // Snapshots shared every 5 records, and the streams trimmed below them.
  const std::vector<std::string> snapshots = {"--replica_snapshot_records=5"};
  Replicas replicas(dir, nats, 3, {snapshots, snapshots, snapshots});
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    const grpc::Status status =
        CreateReplicated(replicas.stub(k % 3), kKinds[k]);
    ASSERT_TRUE(status.ok()) << status.error_message() << replicas.Log(k % 3);
  }

  // A client predicting through every replica, trying the next on failure.
  std::atomic<bool> done{false};
  std::atomic<int> failed_calls{0};
  std::atomic<int> predictions{0};
  std::thread predictor_thread([&] {
    std::vector<std::unique_ptr<Stub>> stubs;
    for (int i = 0; i < replicas.size(); ++i) {
      stubs.push_back(v1::HalfspaceService::NewStub(
          FastReconnectingChannel(replicas.target(i))));
    }
    for (int call = 0; !done.load(); ++call) {
      v1::PredictRequest request;
      request.set_model(kKinds[call % 3].name);
      v1::FeatureVector* x = request.add_instances();
      for (double v : {0.1, -0.2, 0.3}) x->mutable_dense()->Add(v);
      bool answered = false;
      // The retry budget: every replica, twice, 100 ms apart.
      for (int attempt = 0; attempt < 6 && !answered; ++attempt) {
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
        v1::PredictResponse response;
        answered = stubs[(call + attempt) % stubs.size()]
                       ->Predict(&context, request, &response)
                       .ok();
        if (!answered) absl::SleepFor(absl::Milliseconds(100));
      }
      if (!answered) failed_calls.fetch_add(1);
      predictions.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  struct Joined {  // the predictor ends with the test, failed or not
    std::atomic<bool>& done;
    std::thread& thread;
    ~Joined() {
      done.store(true);
      if (thread.joinable()) thread.join();
    }
  } predictor{done, predictor_thread};

  // Training: tagged batches of 20 through the replicas in turn (a failed
  // call is retried on the next replica with the same sequence), and
  // untagged TrainRequests a producer publishes straight to the subjects.
  // The streams are trimmed as they grow, so their order is kept here:
  // each request at the position its acknowledgement gave. Late on, a
  // fourth server joins from the shared snapshots.
  Producer producer(nats.url(0));
  constexpr int kBatches = 30;
  constexpr int kBatch = 20;
  int produced[std::size(kKinds)] = {};  // examples, by model
  std::map<uint64_t, v1::TrainRequest> order[std::size(kKinds)];
  for (int b = 0; b < kBatches; ++b) {
    if (b == 8) nats.Kill(1);
    if (b == 14) nats.Start(1);
    if (b == 18) replicas.Kill(2);
    if (b == 24) replicas.Start(2);
    if (b == 27) replicas.Add(snapshots);
    for (size_t k = 0; k < std::size(kKinds); ++k) {
      const v1::TrainRequest request =
          Batch(kKinds[k], b * kBatch, kBatch, "pipeline");
      bool acknowledged = false;
      for (int attempt = 0; attempt < 20 && !acknowledged; ++attempt) {
        const int r = (b + k + attempt) % 3;
        if (b >= 18 && b < 24 && r == 2) continue;  // down
        absl::StatusOr<v1::TrainResponse> trained =
            TrainOnce(replicas.stub(r), request);
        acknowledged = trained.ok();
        if (acknowledged) order[k][trained->position()] = request;
        if (!acknowledged) absl::SleepFor(absl::Milliseconds(100));
      }
      ASSERT_TRUE(acknowledged)
          << "batch " << b << " of " << kKinds[k].name << "\n"
          << replicas.Log(0);
      if (b % 5 == 0) {
        const v1::TrainRequest published =
            Batch(kKinds[k], 10000 + b * 7, 7, "");
        order[k]
             [producer.Publish(absl::StrCat("halfspace.train.", kKinds[k].name),
                               published.SerializeAsString())] = published;
        produced[k] += 7;
      }
    }
  }
  done.store(true);
  predictor_thread.join();
  EXPECT_EQ(failed_calls.load(), 0) << "of " << predictions.load();

  // A stream is trimmed once a second snapshot is shared past the first
  // (a share that failed while a NATS node was down waits before its next
  // try): the producer goes on publishing until every stream is.
  const absl::Time trimmed_by = absl::Now() + absl::Seconds(120);
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    const std::string stream = absl::StrCat("halfspace_", kKinds[k].name);
    for (int extra = 0;
         producer.FirstSequence(stream) <= 1 && absl::Now() < trimmed_by;
         ++extra) {
      const v1::TrainRequest published =
          Batch(kKinds[k], 20000 + extra * 7, 7, "");
      order[k]
           [producer.Publish(absl::StrCat("halfspace.train.", kKinds[k].name),
                             published.SerializeAsString())] = published;
      produced[k] += 7;
      absl::SleepFor(absl::Milliseconds(500));
    }
    EXPECT_GT(producer.FirstSequence(stream), 1u) << "not trimmed";
  }

  // The uninterrupted run: each model's stream order, on a local model.
  TestServer reference;
  Client reference_client = reference.NewClient();
  std::unique_ptr<Stub> reference_stub = reference.NewStub();
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    const Kind& kind = kKinds[k];
    ASSERT_TRUE(reference_client.CreateModel(CreateRequest(kind)).ok());
    const std::string stream = absl::StrCat("halfspace_", kind.name);
    uint64_t examples = 0;
    for (const auto& [position, request] : order[k]) {
      ASSERT_TRUE(TrainOnce(*reference_stub, request).ok());
    }
    absl::StatusOr<v1::Model> expected = GetModel(*reference_stub, kind.name);
    ASSERT_TRUE(expected.ok());
    examples = expected->stats().examples_seen();
    // Every acknowledged example exactly once, and every produced one.
    EXPECT_EQ(examples, uint64_t{kBatches * kBatch} + produced[k]) << kind.name;
    const std::vector<uint64_t> bits = WeightBits(*reference_stub, kind.name);
    absl::StatusOr<v1::Model> leader = GetModel(replicas.stub(0), kind.name);
    ASSERT_TRUE(leader.ok());
    const uint64_t last = producer.LastSequence(stream);
    for (int i = 0; i < replicas.size(); ++i) {
      ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, last))
          << "replica " << i << replicas.Log(i);
      absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->stats().examples_seen(), examples)
          << kind.name << " on replica " << i << replicas.Log(i);
      EXPECT_EQ(WeightBits(replicas.stub(i), kind.name), bits)
          << kind.name << " on replica " << i;
      EXPECT_EQ(m->replica().lag_records(), 0u);
      EXPECT_EQ(m->replica().position(), leader->replica().position());
    }
  }
  // The fourth started from the shared snapshots, not the streams' starts.
  EXPECT_THAT(Tail(dir.File("replica3.log"), 1 << 30),
              HasSubstr("starts from the shared snapshot at stream position"));
}

// A producer that keeps up to a thousand requests in flight on one stream,
// through the kill of the model's stream leader: the records published
// while no leader answers fail, the stream ends at the first of them after
// answering every request before it, in order, and the producer resumes
// from its last answer on the other replica. A record that follows a lost
// one is not learned (it was published, but its predecessor was not), nor
// is one stored before the record it follows (NATS can store them out of
// order while it elects the leader): its answer, ABORTED, ends the stream.
// So every example is learned once, in the producer's order.
TEST(ReplicationTest, APipelinedStreamResumesExactlyOnceThroughALeaderKill) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind& kind = kKinds[1];
  ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok());
  Producer admin(nats.url(2));

  constexpr int kRequests = 400;
  constexpr int kBatch = 10;
  int acknowledged = 0;  // requests, in order
  int streams = 0;
  int killed = -1;
  uint64_t last_position = 0;
  // A new leader is elected in seconds, more on a loaded machine.
  const absl::Time give_up = absl::Now() + absl::Seconds(90);
  while (acknowledged < kRequests && absl::Now() < give_up) {
    Stub& stub = replicas.stub(streams++ % 2);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    auto stream = stub.Train(&context);
    const int from = acknowledged;
    std::thread writer([&stream, &kind, from] {
      for (int r = from; r < kRequests; ++r) {
        if (!stream->Write(Batch(kind, r * kBatch, kBatch, "pipeline"))) break;
      }
      stream->WritesDone();
    });
    v1::TrainResponse response;
    while (stream->Read(&response)) {
      ASSERT_EQ(response.results_size(), kBatch);
      for (const v1::ExampleResult& r : response.results()) {
        EXPECT_FALSE(r.has_error()) << r.error().message();
      }
      EXPECT_GT(response.position(), last_position)
          << "request " << acknowledged;
      last_position = response.position();
      if (++acknowledged == 100 && killed < 0) {
        const std::string leader =
            admin.Leader(absl::StrCat("halfspace_", kind.name));
        ASSERT_THAT(leader, testing::StartsWith("n"));
        killed = leader[1] - '0';
        nats.Kill(killed);
      }
    }
    writer.join();
    const grpc::Status status = stream->Finish();
    if (!status.ok()) absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_EQ(acknowledged, kRequests) << replicas.Log(0);
  EXPECT_GT(streams, 1) << "the leader's kill ended no stream";
  nats.Start(killed);

  TestServer reference;
  Client reference_client = reference.NewClient();
  std::unique_ptr<Stub> reference_stub = reference.NewStub();
  ASSERT_TRUE(reference_client.CreateModel(CreateRequest(kind)).ok());
  for (int r = 0; r < kRequests; ++r) {
    ASSERT_TRUE(
        TrainOnce(*reference_stub, Batch(kind, r * kBatch, kBatch, "pipeline"))
            .ok());
  }
  const std::vector<uint64_t> bits = WeightBits(*reference_stub, kind.name);
  for (int i = 0; i < replicas.size(); ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, last_position))
        << replicas.Log(i);
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), uint64_t{kRequests * kBatch});
    EXPECT_EQ(WeightBits(replicas.stub(i), kind.name), bits) << "replica " << i;
  }
}

// A request the stream refuses (larger than its max_msg_size) ends a
// pipelined Train stream after the answers before it; the requests sent
// behind it may be stored, but no replica learns them, so that the
// producer resumes from its last answer and every example is learned
// once, in its order.
TEST(ReplicationTest,
     ARefusedRequestEndsThePipelineAndNothingBehindItIsLearned) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind& kind = kKinds[0];
  const std::string stream_name = absl::StrCat("halfspace_", kind.name);
  Producer admin(nats.url(0));
  admin.AddStream(stream_name, absl::StrCat("halfspace.train.", kind.name),
                  2048);
  ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok());
  const uint64_t created = admin.LastSequence(stream_name);

  // Ten requests of 5 examples, but the sixth of 100: too big.
  std::vector<v1::TrainRequest> requests;
  int first = 0;
  for (int r = 0; r < 10; ++r) {
    const int n = r == 5 ? 100 : 5;
    requests.push_back(Batch(kind, first, n, "pipeline"));
    first += n;
  }
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto stream = replicas.stub(0).Train(&context);
    for (const v1::TrainRequest& request : requests) stream->Write(request);
    stream->WritesDone();
    v1::TrainResponse response;
    int answered = 0;
    while (stream->Read(&response)) ++answered;
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(answered, 5);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(), HasSubstr("max_msg_size"));
  }
  const uint64_t stored = admin.LastSequence(stream_name) - created;
  EXPECT_GE(stored, 5u);
  for (int i = 0; i < replicas.size(); ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, created + stored))
        << "created " << created << " stored " << stored << replicas.Log(i);
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), 25u)
        << stored << " requests stored; replica " << i;
  }

  // Resumed from the last answer, the big one in small parts.
  std::vector<v1::TrainRequest> resumed;
  for (int part = 0; part < 20; ++part) {
    resumed.push_back(Batch(kind, 25 + part * 5, 5, "pipeline"));
  }
  resumed.insert(resumed.end(), requests.begin() + 6, requests.end());
  for (const v1::TrainRequest& request : resumed) {
    ASSERT_TRUE(TrainOnce(replicas.stub(1), request).ok());
  }
  TestServer reference;
  Client reference_client = reference.NewClient();
  std::unique_ptr<Stub> reference_stub = reference.NewStub();
  ASSERT_TRUE(reference_client.CreateModel(CreateRequest(kind)).ok());
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(TrainOnce(*reference_stub, requests[r]).ok());
  }
  for (const v1::TrainRequest& request : resumed) {
    ASSERT_TRUE(TrainOnce(*reference_stub, request).ok());
  }
  const std::vector<uint64_t> bits = WeightBits(*reference_stub, kind.name);
  for (int i = 0; i < replicas.size(); ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, 0));
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), 145u) << "replica " << i;
    EXPECT_EQ(WeightBits(replicas.stub(i), kind.name), bits) << "replica " << i;
  }
}

TEST(ReplicationTest, ReplicasJoinFromASharedSnapshotOnceTheStreamIsTrimmed) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  const std::vector<std::string> every = {"--replica_snapshot_records=8"};
  Replicas replicas(dir, nats, 2, {every, every});
  const Kind kinds[] = {kKinds[1], kKinds[2]};  // averaged SGD, softmax
  TestServer reference;
  std::unique_ptr<Stub> reference_stub = reference.NewStub();
  for (const Kind& kind : kinds) {
    ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok())
        << replicas.Log(0);
    v1::CreateModelResponse response;
    grpc::ClientContext local;
    ASSERT_TRUE(
        reference_stub->CreateModel(&local, CreateRequest(kind), &response)
            .ok());
  }
  // Replica 1 stops (keeping its replicas at position 1) while the streams
  // grow, snapshots are shared and the streams trimmed below the creation
  // records.
  for (const Kind& kind : kinds) {
    ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1));
  }
  ASSERT_EQ(replicas.Stop(1, SIGTERM), 0) << replicas.Log(1);
  Producer producer(nats.url(0));
  int first = 0;
  uint64_t position = 0;
  auto train = [&](int batches) {
    for (int b = 0; b < batches; ++b, first += 4) {
      for (const Kind& kind : kinds) {
        absl::StatusOr<v1::TrainResponse> trained =
            TrainOnce(replicas.stub(0), Batch(kind, first, 4, ""));
        ASSERT_TRUE(trained.ok()) << trained.status() << replicas.Log(0);
        position = trained->position();
        ASSERT_TRUE(TrainOnce(*reference_stub, Batch(kind, first, 4, "")).ok());
      }
    }
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  auto trimmed = [&] {
    for (const Kind& kind : kinds) {
      if (producer.FirstSequence(absl::StrCat("halfspace_", kind.name)) <= 1) {
        return false;
      }
    }
    return true;
  };
  while (!trimmed() && absl::Now() < deadline) {
    train(10);
    absl::SleepFor(absl::Milliseconds(1500));  // a snapshot a second
  }
  ASSERT_TRUE(trimmed()) << replicas.Log(0);

  // Replica 1 comes back behind the trimmed start; a new replica joins.
  replicas.Start(1);
  const int joined = replicas.Add(every);
  train(3);
  for (const Kind& kind : kinds) {
    const std::vector<uint64_t> bits = WeightBits(*reference_stub, kind.name);
    absl::StatusOr<v1::Model> expected = GetModel(*reference_stub, kind.name);
    ASSERT_TRUE(expected.ok());
    for (int i = 0; i < replicas.size(); ++i) {
      ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, position))
          << replicas.Log(i);
      absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->stats().examples_seen(), expected->stats().examples_seen())
          << kind.name << " on replica " << i << replicas.Log(i);
      EXPECT_EQ(WeightBits(replicas.stub(i), kind.name), bits)
          << kind.name << " on replica " << i;
    }
  }
  // Replica 1 came back with its own snapshots, from behind the trim.
  EXPECT_THAT(Tail(dir.File("replica1.log"), 1 << 30),
              HasSubstr("recovered 2 model(s)"));
  for (int i : {1, joined}) {
    EXPECT_THAT(Tail(dir.File(absl::StrCat("replica", i, ".log")), 1 << 30),
                HasSubstr("starts from the shared snapshot at stream position"))
        << "replica " << i;
  }
}

// A prediction for one instance of the three features (or, `sparse`, of
// feature 7 alone).
absl::StatusOr<v1::PredictResponse> Predict(
    Stub& stub, const std::string& model, uint64_t min_position,
    absl::Duration timeout = absl::Seconds(10), bool sparse = false) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::PredictRequest request;
  request.set_model(model);
  request.set_min_position(min_position);
  v1::FeatureVector* x = request.add_instances();
  if (sparse) {
    x->mutable_sparse()->add_indices(7);
    x->mutable_sparse()->add_values(1.0);
  } else {
    for (double v : {0.4, -0.1, 0.25}) x->mutable_dense()->Add(v);
  }
  v1::PredictResponse response;
  const grpc::Status status = stub.Predict(&context, request, &response);
  if (!status.ok()) {
    return StatusOf(status);
  }
  return response;
}

// A replica says it is caught up (nothing stalls it, no lag) only once it
// has applied the stream: not after a restart while it cannot read it yet
// (its stream kept by one NATS node, down). While the whole NATS cluster is
// down, every replica says it is stalled, its lag's seconds grow, and it
// goes on predicting; once NATS is back it catches up.
std::string Cli(const std::string& target, const std::string& args);

TEST(ReplicationTest, AReplicaIsCaughtUpOnlyOnceItIsAndStalledWhileNatsIsDown) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  const int metrics_port = FreePort();
  Replicas replicas(
      dir, nats, 2,
      {{absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)}});
  const Kind& kind = kKinds[0];
  {
    v1::CreateModelRequest request = CreateRequest(kind);
    request.mutable_replication()->set_replicas(1);
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    ASSERT_TRUE(replicas.stub(0).CreateModel(&context, request, &response).ok())
        << replicas.Log(0);
  }
  ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1)) << replicas.Log(1);

  // Replica 1 is away while a producer publishes, then its stream's node.
  ASSERT_EQ(replicas.Stop(1, SIGTERM), 0) << replicas.Log(1);
  const std::string stream = absl::StrCat("halfspace_", kind.name);
  const std::string subject = absl::StrCat("halfspace.train.", kind.name);
  uint64_t last = 0;
  int holder = -1;
  {
    Producer producer(nats.url(0));
    for (int r = 0; r < 200; ++r) {
      last =
          producer.Publish(subject, Batch(kind, r, 1, "").SerializeAsString());
    }
    const std::string leader = producer.Leader(stream);
    ASSERT_THAT(leader, testing::StartsWith("n"));
    holder = leader[1] - '0';
  }
  ASSERT_GT(last, 200u);
  nats.Kill(holder);
  replicas.Start(1);
  for (int poll = 0; poll < 30; ++poll) {
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(1), kind.name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->replica().stalled().empty())
        << "at position " << m->replica().position() << " of " << last
        << ", lag " << m->replica().lag_records();
    absl::SleepFor(absl::Milliseconds(100));
  }
  nats.Start(holder);
  ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, last)) << replicas.Log(1);
  ASSERT_TRUE(CaughtUp(replicas.stub(0), kind.name, last)) << replicas.Log(0);
  const std::string line =
      absl::StrCat("halfspace_replica_stalled{model=\"", kind.name, "\"} ");
  EXPECT_THAT(HttpGet(metrics_port, "/metrics"), HasSubstr(line + "0"));

  // The whole cluster down: stalled, predicting, the seconds growing.
  for (int node = 0; node < 3; ++node) nats.Kill(node);
  absl::StatusOr<v1::Model> down;
  const absl::Time noticed_by = absl::Now() + absl::Seconds(15);
  do {
    absl::SleepFor(absl::Milliseconds(100));
    down = GetModel(replicas.stub(0), kind.name);
    ASSERT_TRUE(down.ok()) << down.status();
  } while (down->replica().stalled().empty() && absl::Now() < noticed_by);
  EXPECT_THAT(down->replica().stalled(), HasSubstr("NATS"));
  EXPECT_THAT(HttpGet(metrics_port, "/metrics"), HasSubstr(line + "1"));
  absl::SleepFor(absl::Seconds(2));
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->replica().stalled().empty()) << "replica " << i;
    EXPECT_GE(m->replica().lag_seconds(), 1.5) << "replica " << i;
    EXPECT_TRUE(Predict(replicas.stub(i), kind.name, 0).ok())
        << "replica " << i;
    EXPECT_THAT(Cli(replicas.target(i), "get " + kind.name),
                HasSubstr("  stalled: "))
        << "replica " << i;
  }
  // A Train is refused UNAVAILABLE, saying when to send it again. (Tagged:
  // the client may have handed the record to NATS, to be stored once the
  // cluster is back, and it is sent again below.)
  const v1::TrainRequest again = Batch(kind, 200, 4, "retried");
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto train = replicas.stub(0).Train(&context);
    train->Write(again);
    train->WritesDone();
    v1::TrainResponse response;
    EXPECT_FALSE(train->Read(&response));
    const grpc::Status status = train->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << status.error_message();
    const auto& trailers = context.GetServerTrailingMetadata();
    auto pushback = trailers.find("grpc-retry-pushback-ms");
    ASSERT_NE(pushback, trailers.end()) << status.error_message();
    EXPECT_EQ(std::string(pushback->second.data(), pushback->second.size()),
              "1000");
  }

  // Back: a Train goes through once a leader is elected; all catch up.
  for (int node = 0; node < 3; ++node) nats.Start(node);
  absl::StatusOr<v1::TrainResponse> trained;
  const absl::Time back_by = absl::Now() + absl::Seconds(60);
  do {
    trained = TrainOnce(replicas.stub(0), again);
    if (!trained.ok()) absl::SleepFor(absl::Milliseconds(500));
  } while (!trained.ok() && absl::Now() < back_by);
  ASSERT_TRUE(trained.ok()) << trained.status() << replicas.Log(0);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, trained->position()))
        << replicas.Log(i);
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), 204u) << "replica " << i;
  }
  EXPECT_THAT(HttpGet(metrics_port, "/metrics"), HasSubstr(line + "0"));
}

// A server that dies while it creates a model leaves the name claimed
// with no creation stored. Once the claim's creator has given up (and a
// while after), a creation takes the name over; a claim whose model
// exists is never taken over.
TEST(ReplicationTest, AClaimWhoseCreatorGaveUpIsTakenOver) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind ghost{"ghost", "perceptron"};
  Producer producer(nats.url(0));
  producer.AddStream("halfspace_ghost", "halfspace.train.ghost", 1 << 20);
  storage::v1::Replication claim;
  claim.set_stream("halfspace_ghost");
  claim.set_subject("halfspace.train.ghost");
  claim.set_replicas(3);
  claim.set_creation("a-server-that-died");
  const absl::Time gave_up = absl::Now() + absl::Seconds(2);
  claim.set_creating_until_micros(absl::ToUnixMicros(gave_up));
  producer.Claim(ghost.name, claim);
  // Listed, held by no server: a reader is told to retry (the model may be
  // on its way); a deletion finds nothing to delete.
  {
    grpc::ClientContext context;
    v1::GetModelRequest request;
    request.set_model(ghost.name);
    v1::GetModelResponse response;
    const grpc::Status got =
        replicas.stub(1).GetModel(&context, request, &response);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(got.error_message(), HasSubstr("does not hold it yet"));
    EXPECT_TRUE(absl::IsNotFound(DeleteModel(replicas.stub(1), ghost.name)));
  }
  // So are the streams' callers: in-band where a stream goes on, else as
  // the stream's end.
  {
    grpc::ClientContext context;
    auto stream = replicas.stub(1).PredictStream(&context);
    v1::PredictStreamRequest request;
    request.set_model(ghost.name);
    request.add_instances()->add_dense(1);
    ASSERT_TRUE(stream->Write(request));
    v1::PredictStreamResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.error().code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(response.error().message(), HasSubstr("does not hold it yet"));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  {
    grpc::ClientContext context;
    auto stream = replicas.stub(1).FeedbackStream(&context);
    v1::FeedbackStreamRequest request;
    request.set_model(ghost.name);
    v1::ExampleFeedback* label = request.add_feedback();
    label->set_example_id("p1");
    label->set_label(1);
    ASSERT_TRUE(stream->Write(request));
    v1::FeedbackStreamResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.error().code(), grpc::StatusCode::UNAVAILABLE);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  {
    grpc::ClientContext context;
    v1::EvaluateResponse response;
    auto stream = replicas.stub(1).Evaluate(&context, &response);
    v1::EvaluateRequest request;
    request.set_model(ghost.name);
    v1::Example* e = request.add_examples();
    e->mutable_features()->add_dense(1);
    e->set_label(1);
    stream->Write(request);  // the server may have ended the stream already
    stream->WritesDone();
    const grpc::Status got = stream->Finish();
    EXPECT_EQ(got.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(got.error_message(), HasSubstr("does not hold it yet"));
  }

  // Taken while its creator may still be at work, and a while after.
  auto create = [&](int replica) {
    v1::CreateModelRequest request = CreateRequest(ghost);
    request.mutable_replication()->set_replicas(3);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::CreateModelResponse response;
    return replicas.stub(replica).CreateModel(&context, request, &response);
  };
  grpc::Status created = create(0);
  EXPECT_EQ(created.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!created.ok() && absl::Now() < give_up) {
    ASSERT_EQ(created.error_code(), grpc::StatusCode::ALREADY_EXISTS)
        << created.error_message() << replicas.Log(0);
    absl::SleepFor(absl::Milliseconds(500));
    created = create(0);
  }
  const absl::Time taken_over = absl::Now();
  ASSERT_TRUE(created.ok()) << created.error_message() << replicas.Log(0);
  EXPECT_GE(taken_over, gave_up + absl::Seconds(10));
  EXPECT_THAT(Tail(dir.File("replica0.log"), 1 << 30),
              HasSubstr("takes over the name's abandoned claim"));

  absl::StatusOr<v1::TrainResponse> trained;
  const absl::Time held_by = absl::Now() + absl::Seconds(10);
  do {
    trained = TrainOnce(replicas.stub(1), Batch(ghost, 0, 4, ""));
  } while (!trained.ok() && absl::Now() < held_by);
  ASSERT_TRUE(trained.ok()) << trained.status() << replicas.Log(1);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), ghost.name, trained->position()))
        << "replica " << i << replicas.Log(i);
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), ghost.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), 4u) << "replica " << i;
  }
  // Long after this creation's own time is up, the model holds its name.
  absl::SleepFor(taken_over + absl::Seconds(5 + 12) - absl::Now());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(create(i).error_code(), grpc::StatusCode::ALREADY_EXISTS)
        << "replica " << i;
  }
  absl::StatusOr<v1::Model> kept = GetModel(replicas.stub(0), ghost.name);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->stats().examples_seen(), 4u);
}

TEST(ReplicationTest, BadMessagesAreSkippedAlikeAndReadsSeeTheirWrites) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  const int metrics_port = FreePort();
  Replicas replicas(
      dir, nats, 2,
      {{absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)}});
  const Kind& kind = kKinds[0];
  ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok()) << replicas.Log(0);
  // The name is taken on every server, by a replicated model or a local one.
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    EXPECT_EQ(replicas.stub(i)
                  .CreateModel(&context, CreateRequest(kind), &response)
                  .error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  const std::string subject = absl::StrCat("halfspace.train.", kind.name);
  Producer producer(nats.url(2));
  producer.Publish(subject, std::string(12, '\xff'));  // no TrainRequest
  producer.Publish(subject, Batch(kind, 0, 5, "").SerializeAsString(), "avro");
  v1::TrainRequest unnumbered = Batch(kind, 0, 5, "p");
  unnumbered.set_sequence(0);  // a source's examples are numbered from 1
  producer.Publish(subject, unnumbered.SerializeAsString());
  v1::TrainRequest wrong = Batch(kind, 0, 4, "");
  wrong.mutable_examples(1)->mutable_features()->mutable_dense()->Add(1.0);
  producer.Publish(subject, wrong.SerializeAsString(), "protobuf");
  // Text lines: the good ones are learned (3 and 2), a bad label and a bad
  // value left out alike on every replica.
  producer.Publish(subject,
                   "label,x1,x2,x3\n1,0.5,0.2,-1\n# c\n\n2.5,1,1,1\n"
                   "-1,0.3,x,0.1\n-1,0.3,-0.2,0.1\n+1,1,1,1",
                   "csv");
  producer.Publish(subject, "+1 1:0.5 3:1\n-1 2:0.25 # c", "libsvm");

  // A write on replica 0, read on replica 1 at its position.
  absl::StatusOr<v1::TrainResponse> trained =
      TrainOnce(replicas.stub(0), Batch(kind, 100, 30, "writer"));
  ASSERT_TRUE(trained.ok()) << trained.status();
  ASSERT_GT(trained->position(), 4u);
  ASSERT_EQ(trained->results_size(), 30);
  absl::StatusOr<v1::PredictResponse> read =
      Predict(replicas.stub(1), kind.name, trained->position());
  ASSERT_TRUE(read.ok()) << read.status();
  absl::StatusOr<v1::PredictResponse> at_writer =
      Predict(replicas.stub(0), kind.name, 0);
  ASSERT_TRUE(at_writer.ok());
  EXPECT_EQ(read->predictions(0).score(), at_writer->predictions(0).score());
  // A position the stream has not reached: the deadline passes.
  EXPECT_EQ(Predict(replicas.stub(1), kind.name, trained->position() + 1000,
                    absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);

  // Both replicas skipped the three messages that are no batch, learned the
  // one with a bad example in-band (3 examples and an error) and the lines
  // that parse (5), and agree.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, trained->position()));
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(m->unavailable_reason().empty()) << m->unavailable_reason();
    EXPECT_EQ(m->stats().examples_seen(), 38u) << "replica " << i;
    EXPECT_EQ(m->replica().position(), trained->position());
  }
  EXPECT_EQ(WeightBits(replicas.stub(0), kind.name),
            WeightBits(replicas.stub(1), kind.name));
  // Replica 0's place and its reports, scraped: 3 messages skipped and 2
  // lines left out.
  const std::string metrics = HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat(
                           "halfspace_replica_position{model=\"perceptron\"} ",
                           trained->position(), "\n")));
  EXPECT_THAT(
      metrics,
      HasSubstr("halfspace_replica_lag_records{model=\"perceptron\"} 0\n"));
  EXPECT_THAT(
      metrics,
      HasSubstr("halfspace_replica_skipped_total{model=\"perceptron\"} 5\n"));

  // A fan-out stream that would train it beside a model of one server,
  // whose records are not in any stream, is refused.
  {
    v1::CreateModelRequest another = CreateRequest(kind);
    another.set_model("another");
    grpc::ClientContext context;
    v1::CreateModelResponse created;
    ASSERT_TRUE(replicas.stub(0).CreateModel(&context, another, &created).ok());
    v1::TrainRequest fan_out = Batch(kind, 0, 2, "");
    fan_out.clear_model();
    fan_out.add_models(kind.name);
    fan_out.add_models("another");
    absl::StatusOr<v1::TrainResponse> refused =
        TrainOnce(replicas.stub(0), fan_out);
    EXPECT_THAT(refused.status().message(),
                HasSubstr("a fan-out stream trains replicated models or "
                          "models of this server, not both"));
  }

  // Deleted through replica 1: gone from both; the name can be used again.
  {
    grpc::ClientContext context;
    v1::DeleteModelRequest request;
    request.set_model(kind.name);
    v1::DeleteModelResponse response;
    ASSERT_TRUE(
        replicas.stub(1).DeleteModel(&context, request, &response).ok());
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (GetModel(replicas.stub(0), kind.name).ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_FALSE(GetModel(replicas.stub(0), kind.name).ok());
  ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok());
  // The other server holds the new model once it has read the catalog,
  // and never the earlier one, whose records the stream may still hold
  // when it starts following the new one.
  const absl::Time created = absl::Now() + absl::Seconds(30);
  absl::StatusOr<v1::Model> fresh;
  while (!(fresh = GetModel(replicas.stub(1), kind.name)).ok() &&
         absl::Now() < created) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(fresh.ok()) << fresh.status() << replicas.Log(1);
  EXPECT_EQ(fresh->stats().examples_seen(), 0u);
  absl::StatusOr<v1::TrainResponse> again =
      TrainOnce(replicas.stub(1), Batch(kind, 0, 10, "writer"));
  ASSERT_TRUE(again.ok()) << again.status() << replicas.Log(1);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, again->position()));
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->stats().examples_seen(), 10u) << "replica " << i;
  }

  // Stopped cleanly, a server stores each replica at its position and
  // reads the stream on from there when it starts again.
  EXPECT_EQ(replicas.Stop(1, SIGTERM), 0) << replicas.Log(1);
  absl::StatusOr<v1::TrainResponse> meanwhile =
      TrainOnce(replicas.stub(0), Batch(kind, 10, 5, "writer"));
  ASSERT_TRUE(meanwhile.ok()) << meanwhile.status();
  replicas.Start(1);
  ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, meanwhile->position()));
  absl::StatusOr<v1::Model> resumed = GetModel(replicas.stub(1), kind.name);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->stats().examples_seen(), 15u);
  EXPECT_EQ(WeightBits(replicas.stub(0), kind.name),
            WeightBits(replicas.stub(1), kind.name));
  EXPECT_NE(replicas.Log(1).find("recovered 1 model(s)"), std::string::npos)
      << replicas.Log(1);
}

TEST(ReplicationTest, AReplicaThatCannotApplyARecordIsUnavailableUntilRebuilt) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  // Replica 1 has room for one model of 100000 weights, not two.
  Replicas replicas(
      dir, nats, 2,
      {{}, {"--max_total_model_bytes=1200000", "--max_model_bytes=1200000"}});
  auto create = [&](const std::string& name) {
    v1::CreateModelRequest request;
    request.set_model(name);
    *request.mutable_algorithm() = TextAlgorithm("perceptron");
    request.set_dimension(100000);
    request.mutable_replication()->set_replicas(3);
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    return replicas.stub(0).CreateModel(&context, request, &response);
  };
  ASSERT_TRUE(create("big").ok());
  ASSERT_TRUE(create("second").ok());
  v1::TrainRequest batch;
  batch.set_model("second");
  v1::Example* e = batch.add_examples();
  e->mutable_features()->mutable_sparse()->add_indices(7);
  e->mutable_features()->mutable_sparse()->add_values(1.5);
  e->set_label(1);
  absl::StatusOr<v1::TrainResponse> trained =
      TrainOnce(replicas.stub(0), batch);
  ASSERT_TRUE(trained.ok()) << trained.status();

  // Replica 1 could not create it: unavailable, with the limit that refused.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<v1::Model> second = GetModel(replicas.stub(1), "second");
  while ((!second.ok() || second->unavailable_reason().empty()) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    second = GetModel(replicas.stub(1), "second");
  }
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->unavailable_reason().find("max_total_model_bytes"),
            std::string::npos)
      << second->unavailable_reason();
  EXPECT_EQ(Predict(replicas.stub(1), "second", 0, absl::Seconds(10), true)
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  // The other replica, and the other model, go on.
  EXPECT_TRUE(
      Predict(replicas.stub(0), "second", 0, absl::Seconds(10), true).ok());
  EXPECT_TRUE(
      Predict(replicas.stub(1), "big", 0, absl::Seconds(10), true).ok());

  // Once there is room (the other model deleted), a rebuild brings it back
  // equal to its other replica.
  {
    grpc::ClientContext context;
    v1::DeleteModelRequest request;
    request.set_model("big");
    v1::DeleteModelResponse response;
    ASSERT_TRUE(
        replicas.stub(0).DeleteModel(&context, request, &response).ok());
  }
  const absl::Time freed = absl::Now() + absl::Seconds(10);
  while (GetModel(replicas.stub(1), "big").ok() && absl::Now() < freed) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  v1::RestoreModelRequest restore;
  restore.set_model("second");
  v1::RestoreModelResponse restored;
  const grpc::Status status =
      replicas.stub(1).RestoreModel(&context, restore, &restored);
  ASSERT_TRUE(status.ok()) << status.error_message() << replicas.Log(1);
  ASSERT_TRUE(CaughtUp(replicas.stub(1), "second", trained->position()));
  EXPECT_EQ(WeightBits(replicas.stub(0), "second"),
            WeightBits(replicas.stub(1), "second"));
  EXPECT_TRUE(
      Predict(replicas.stub(1), "second", 0, absl::Seconds(10), true).ok());
}

// Remembers instances [first, first + n) of the noisy rule on `model`
// through `stub`, under ids "<prefix><i>" (none: the server makes them);
// the ids the predictions name, or the call's error.
absl::StatusOr<std::vector<std::string>> Remember(Stub& stub,
                                                  const std::string& model,
                                                  int first, int n,
                                                  const std::string& prefix) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::PredictRequest request;
  request.set_model(model);
  request.set_remember(true);
  const auto examples = NoisyExamples(first + n);
  for (int i = first; i < first + n; ++i) {
    request.add_instances()->mutable_dense()->Add(examples[i].first.begin(),
                                                  examples[i].first.end());
    if (!prefix.empty()) request.add_example_ids(absl::StrCat(prefix, i));
  }
  v1::PredictResponse response;
  const grpc::Status status = stub.Predict(&context, request, &response);
  if (!status.ok()) {
    return StatusOf(status);
  }
  std::vector<std::string> ids;
  for (const v1::Prediction& p : response.predictions()) {
    ids.push_back(p.example_id());
  }
  return ids;
}

// Feedback for `ids`, the labels of noisy-rule examples from `first` on
// (class labels as Batch gives them for a multiclass `kind`), on the model
// `model` names.
absl::StatusOr<v1::FeedbackResponse> Feedback(
    Stub& stub, const Kind& kind, const std::string& model,
    const std::vector<std::string>& ids, int first) {
  const v1::TrainRequest labels = Batch(kind, first, ids.size(), "");
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::FeedbackRequest request;
  request.set_model(model);
  for (size_t i = 0; i < ids.size(); ++i) {
    v1::ExampleFeedback* f = request.add_feedback();
    f->set_example_id(ids[i]);
    f->set_label(labels.examples(i).label());
    f->set_class_label(labels.examples(i).class_label());
  }
  v1::FeedbackResponse response;
  const grpc::Status status = stub.Feedback(&context, request, &response);
  if (!status.ok()) {
    return StatusOf(status);
  }
  return response;
}

grpc::Status SetWeights(Stub& stub, const std::string& model,
                        const std::string& class_label, std::vector<double> w,
                        double b) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::SetWeightsRequest request;
  request.set_model(model);
  request.set_class_label(class_label);
  request.mutable_weights()->Add(w.begin(), w.end());
  request.set_bias(b);
  v1::SetWeightsResponse response;
  return stub.SetWeights(&context, request, &response);
}

// Delayed labels and new weights on a replicated model go through its
// stream: predictions remembered on one replica are labelled on another,
// and every replica ends equal, bit for bit, to a local model that got the
// same calls; a refused change (an id in use, weights of the wrong width)
// is refused alike and leaves every replica available.
TEST(ReplicationTest, DelayedFeedbackAndNewWeightsReachEveryReplica) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind kinds[] = {kKinds[1], kKinds[2]};
  for (const Kind& kind : kinds) {
    ASSERT_TRUE(CreateWithLocalTwin(replicas, kind));
  }
  for (const Kind& kind : kinds) {
    const std::string local = kind.name + "_local";
    SCOPED_TRACE(kind.name);
    // Some training first, then 20 predictions remembered on replica 0 and
    // 12 of them labelled on replica 1.
    ASSERT_TRUE(TrainOnce(replicas.stub(0), Batch(kind, 0, 30, "")).ok());
    v1::TrainRequest local_batch = Batch(kind, 0, 30, "");
    local_batch.set_model(local);
    ASSERT_TRUE(TrainOnce(replicas.stub(0), local_batch).ok());
    for (const std::string& model : {kind.name, local}) {
      absl::StatusOr<std::vector<std::string>> ids =
          Remember(replicas.stub(0), model, 100, 20, "e");
      ASSERT_TRUE(ids.ok()) << ids.status();
      EXPECT_EQ(ids->front(), "e100");
    }
    std::vector<std::string> first_ids;
    for (int i = 100; i < 112; ++i) first_ids.push_back(absl::StrCat("e", i));
    absl::StatusOr<v1::FeedbackResponse> replicated =
        Feedback(replicas.stub(1), kind, kind.name, first_ids, 100);
    ASSERT_TRUE(replicated.ok()) << replicated.status() << replicas.Log(1);
    absl::StatusOr<v1::FeedbackResponse> alone =
        Feedback(replicas.stub(0), kind, local, first_ids, 100);
    ASSERT_TRUE(alone.ok()) << alone.status();
    ASSERT_EQ(replicated->results_size(), 12);
    for (int i = 0; i < 12; ++i) {
      EXPECT_FALSE(replicated->results(i).has_error())
          << replicated->results(i).error().message();
      // What the example did before it was learned, as on the local model.
      EXPECT_EQ(replicated->results(i).score(), alone->results(i).score());
      EXPECT_EQ(replicated->results(i).updated(), alone->results(i).updated());
    }
    // An id remembered nowhere: refused in-band on every replica alike.
    absl::StatusOr<v1::FeedbackResponse> unknown =
        Feedback(replicas.stub(1), kind, kind.name, {"nowhere"}, 100);
    ASSERT_TRUE(unknown.ok()) << unknown.status();
    EXPECT_EQ(unknown->results(0).error().code(), grpc::StatusCode::NOT_FOUND);
    // Labelled again: a duplicate; an id never remembered: not found.
    absl::StatusOr<v1::FeedbackResponse> again =
        Feedback(replicas.stub(0), kind, kind.name, {"e100", "nowhere"}, 100);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->results(0).duplicate());
    EXPECT_EQ(again->results(1).error().code(), grpc::StatusCode::NOT_FOUND);
    // Ids in use with a new one, remembered on the other replica: refused,
    // and none of the request remembered.
    EXPECT_EQ(
        Remember(replicas.stub(1), kind.name, 119, 2, "e").status().code(),
        absl::StatusCode::kAlreadyExists);
    absl::StatusOr<v1::FeedbackResponse> unseen =
        Feedback(replicas.stub(0), kind, kind.name, {"e120"}, 120);
    ASSERT_TRUE(unseen.ok()) << unseen.status();
    EXPECT_EQ(unseen->results(0).error().code(), grpc::StatusCode::NOT_FOUND);

    // Ids the server makes, on replica 1, labelled on replica 0.
    absl::StatusOr<std::vector<std::string>> made =
        Remember(replicas.stub(1), kind.name, 300, 5, "");
    ASSERT_TRUE(made.ok()) << made.status();
    absl::StatusOr<std::vector<std::string>> made_alone =
        Remember(replicas.stub(0), local, 300, 5, "");
    ASSERT_TRUE(made_alone.ok()) << made_alone.status();
    ASSERT_TRUE(Feedback(replicas.stub(0), kind, kind.name, *made, 300).ok());
    ASSERT_TRUE(Feedback(replicas.stub(0), kind, local, *made_alone, 300).ok());

    // New weights: of the wrong width, refused alike; else every replica's.
    const std::string label = kind.multiclass ? "up" : "";
    EXPECT_EQ(
        SetWeights(replicas.stub(1), kind.name, label, {1, 2}, 0).error_code(),
        grpc::StatusCode::INVALID_ARGUMENT);
    for (const std::string& model : {kind.name, local}) {
      // The local model is replica 0's alone.
      Stub& stub = replicas.stub(model == local ? 0 : 1);
      const grpc::Status set =
          SetWeights(stub, model, label, {0.5, -0.25, 0.125}, 0.1);
      ASSERT_TRUE(set.ok()) << model << ": " << set.error_message();
    }
  }

  // Replica 1 restarts after a kill: what it remembered is still there,
  // and it learns the rest of the labels, once it holds the model again.
  replicas.Kill(1);
  replicas.Start(1);
  for (const Kind& kind : kinds) {
    ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1));
    const std::string local = kind.name + "_local";
    std::vector<std::string> rest;
    for (int i = 112; i < 120; ++i) rest.push_back(absl::StrCat("e", i));
    absl::StatusOr<v1::FeedbackResponse> learned =
        Feedback(replicas.stub(1), kind, kind.name, rest, 112);
    ASSERT_TRUE(learned.ok()) << learned.status() << replicas.Log(1);
    for (const v1::ExampleResult& r : learned->results()) {
      EXPECT_FALSE(r.has_error()) << kind.name << ": " << r.error().message();
    }
    ASSERT_TRUE(Feedback(replicas.stub(0), kind, local, rest, 112).ok());
  }

  for (const Kind& kind : kinds) {
    SCOPED_TRACE(kind.name);
    absl::StatusOr<v1::Model> writer = GetModel(replicas.stub(0), kind.name);
    ASSERT_TRUE(writer.ok());
    absl::StatusOr<v1::Model> local =
        GetModel(replicas.stub(0), kind.name + "_local");
    ASSERT_TRUE(local.ok());
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(
          CaughtUp(replicas.stub(i), kind.name, writer->replica().position()));
      absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
      ASSERT_TRUE(m.ok());
      EXPECT_TRUE(m->unavailable_reason().empty()) << m->unavailable_reason();
      // 30 trained, 12 + 5 + 8 labelled.
      EXPECT_EQ(m->stats().examples_seen(), 55u) << "replica " << i;
      EXPECT_EQ(m->stats().examples_seen(), local->stats().examples_seen());
      EXPECT_EQ(WeightBits(replicas.stub(i), kind.name),
                WeightBits(replicas.stub(0), kind.name + "_local"))
          << "replica " << i;
    }
  }
}

// A replicated model with a drift reaction, and its local twin, learn a
// concept reversal through different servers, one of them killed and
// restarted on the way: every replica starts its challenger and switches
// at the same examples as the twin, with the same weights bit for bit;
// a roll-back through either server reaches every replica, once.
TEST(ReplicationTest, ADriftReactionSwitchesAndRollsBackAlikeOnEveryReplica) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind kind{"react", "averaged_perceptron"};
  v1::CreateModelRequest request = CreateRequest(kind);
  request.set_dimension(4);
  request.mutable_drift()->mutable_adwin();
  request.mutable_drift()->mutable_challenge();
  v1::CreateModelRequest local = request;
  local.set_model("react_local");
  request.mutable_replication()->set_replicas(3);
  for (const v1::CreateModelRequest& r : {request, local}) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::CreateModelResponse response;
    const grpc::Status s = replicas.stub(0).CreateModel(&context, r, &response);
    ASSERT_TRUE(s.ok()) << s.error_message() << replicas.Log(0);
  }
  ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1));
  // 4 features; y = −y from example 3000 on.
  const std::vector<LabeledPoint> points =
      Reversed(Stationary(6000, 4, 0.05, 11), 3000);
  std::vector<int> events[2];
  for (size_t first = 0; first < points.size(); first += 250) {
    if (first == 3000) {  // while the challenger runs
      replicas.Kill(1);
      replicas.Start(1);
    }
    for (int twin = 0; twin < 2; ++twin) {
      v1::TrainRequest batch;
      batch.set_model(twin == 0 ? kind.name : "react_local");
      for (size_t i = first; i < first + 250; ++i) {
        AddExample(batch, points[i].x, points[i].y);
      }
      // The replicated model through replica 1 before the kill, 0 after.
      Stub& stub = replicas.stub(twin == 0 && first < 3000 ? 1 : 0);
      absl::StatusOr<v1::TrainResponse> response = TrainOnce(stub, batch);
      ASSERT_TRUE(response.ok()) << response.status();
      for (const v1::ExampleResult& r : response->results()) {
        events[twin].push_back(r.reaction());
      }
    }
  }
  EXPECT_EQ(events[0], events[1]);
  EXPECT_NE(std::find(events[0].begin(), events[0].end(),
                      v1::DriftState::Reaction::EVENT_SWITCHED),
            events[0].end());

  // Every replica as the twin: the reaction's state and the weights.
  const auto untimed = [](v1::DriftState::Reaction r) {
    r.clear_started_time();
    r.clear_last_switch_time();
    return r.SerializeAsString();
  };
  const auto same_as_twin = [&](const char* when) {
    absl::StatusOr<v1::Model> twin = GetModel(replicas.stub(0), "react_local");
    absl::StatusOr<v1::Model> writer = GetModel(replicas.stub(0), kind.name);
    ASSERT_TRUE(twin.ok() && writer.ok());
    for (int i = 0; i < 2; ++i) {
      SCOPED_TRACE(absl::StrCat(when, ", replica ", i));
      ASSERT_TRUE(
          CaughtUp(replicas.stub(i), kind.name, writer->replica().position()));
      absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(untimed(m->stats().drift().reaction()),
                untimed(twin->stats().drift().reaction()));
      EXPECT_EQ(WeightBits(replicas.stub(i), kind.name),
                WeightBits(replicas.stub(0), "react_local"));
    }
  };
  same_as_twin("after the switch");
  {
    v1::RollBackModelRequest roll;
    v1::RollBackModelResponse response;
    for (int twin = 0; twin < 2; ++twin) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      roll.set_model(twin == 0 ? kind.name : "react_local");
      const grpc::Status s = replicas.stub(twin == 0 ? 1 : 0)
                                 .RollBackModel(&context, roll, &response);
      ASSERT_TRUE(s.ok()) << s.error_message() << replicas.Log(1);
      EXPECT_FALSE(response.model().stats().drift().reaction().can_roll_back());
    }
    grpc::ClientContext context;
    roll.set_model(kind.name);
    EXPECT_EQ(
        replicas.stub(0).RollBackModel(&context, roll, &response).error_code(),
        grpc::StatusCode::FAILED_PRECONDITION);
  }
  same_as_twin("after the roll-back");

  // Every replica tells its watchers of the events the twin had, at the
  // same positions, from the first switch on, the roll-back last.
  const auto events_from = [](Stub& stub, const std::string& model,
                              uint64_t from, size_t count) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::WatchModelRequest watch;
    watch.set_model(model);
    watch.set_from_position(from);
    std::unique_ptr<grpc::ClientReader<v1::WatchModelResponse>> reader =
        stub.WatchModel(&context, watch);
    v1::WatchModelResponse response;
    std::vector<std::string> seen;
    EXPECT_TRUE(reader->Read(&response));
    EXPECT_TRUE(response.complete());
    while (seen.size() < count && reader->Read(&response)) {
      const v1::ModelEvent& e = response.event();
      seen.push_back(
          absl::StrCat(v1::ModelEvent::Kind_Name(e.kind()), "@", e.position()));
    }
    context.TryCancel();
    reader->Finish();
    return seen;
  };
  const size_t first_switch =
      std::find(events[1].begin(), events[1].end(),
                v1::DriftState::Reaction::EVENT_SWITCHED) -
      events[1].begin() + 1;
  grpc::ClientContext context;
  v1::WatchModelRequest watch;
  watch.set_model("react_local");
  watch.set_from_position(first_switch);
  std::unique_ptr<grpc::ClientReader<v1::WatchModelResponse>> reader =
      replicas.stub(0).WatchModel(&context, watch);
  // The twin's events: read until its roll-back.
  std::vector<std::string> expected;
  v1::WatchModelResponse response;
  ASSERT_TRUE(reader->Read(&response));
  while (reader->Read(&response)) {
    const v1::ModelEvent& e = response.event();
    expected.push_back(
        absl::StrCat(v1::ModelEvent::Kind_Name(e.kind()), "@", e.position()));
    if (e.kind() == v1::ModelEvent::KIND_ROLLED_BACK) break;
  }
  context.TryCancel();
  reader->Finish();
  ASSERT_GE(expected.size(), 2u);
  EXPECT_EQ(expected.front(), absl::StrCat("KIND_SWITCHED@", first_switch));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(
        events_from(replicas.stub(i), kind.name, first_switch, expected.size()),
        expected)
        << "replica " << i;
  }

  // New drift settings through one replica reach both, and detect alike.
  for (int twin = 0; twin < 2; ++twin) {
    grpc::ClientContext set_context;
    set_context.set_deadline(
        absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::SetDriftDetectionRequest set;
    set.set_model(twin == 0 ? kind.name : "react_local");
    set.mutable_drift()->mutable_ddm()->set_warm_start(50);
    v1::SetDriftDetectionResponse set_response;
    const grpc::Status s =
        replicas.stub(twin == 0 ? 1 : 0)
            .SetDriftDetection(&set_context, set, &set_response);
    ASSERT_TRUE(s.ok()) << s.error_message() << replicas.Log(1);
    EXPECT_EQ(set_response.model().drift().ddm().warm_start(), 50u);
    EXPECT_FALSE(set_response.model().drift().has_challenge());
    // One concept, then the other: the second makes the mistakes rise.
    v1::TrainRequest batch;
    batch.set_model(set.model());
    for (size_t i : {size_t{0}, size_t{3000}}) {
      for (size_t j = i; j < i + 500; ++j) {
        AddExample(batch, points[j].x, points[j].y);
      }
    }
    absl::StatusOr<v1::TrainResponse> trained =
        TrainOnce(replicas.stub(0), batch);
    ASSERT_TRUE(trained.ok()) << trained.status();
  }
  absl::StatusOr<v1::Model> twin = GetModel(replicas.stub(0), "react_local");
  absl::StatusOr<v1::Model> writer = GetModel(replicas.stub(0), kind.name);
  ASSERT_TRUE(twin.ok() && writer.ok());
  EXPECT_GT(twin->stats().drift().warnings() + twin->stats().drift().drifts(),
            0u);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(absl::StrCat("new settings, replica ", i));
    ASSERT_TRUE(
        CaughtUp(replicas.stub(i), kind.name, writer->replica().position()));
    absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->drift().SerializeAsString(),
              twin->drift().SerializeAsString());
    v1::DriftState state = m->stats().drift();
    v1::DriftState expected_state = twin->stats().drift();
    for (v1::DriftState* d : {&state, &expected_state}) {
      d->clear_last_warning_time();
      d->clear_last_drift_time();
    }
    EXPECT_EQ(state.SerializeAsString(), expected_state.SerializeAsString());
    EXPECT_EQ(WeightBits(replicas.stub(i), kind.name),
              WeightBits(replicas.stub(0), "react_local"));
  }
}

// What the command-line tool prints for `args` against `target`, its
// standard error too.
std::string Cli(const std::string& target, const std::string& args) {
  const std::string command = absl::StrCat(
      HALFSPACE_CLI_BINARY, " --server=", target, " ", args, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    out.append(buffer, n);
  pclose(pipe);
  return out;
}

TEST(ReplicationTest, TheCliCreatesAReplicatedModelAndReadsAtAPosition) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const std::string created = Cli(
      replicas.target(0), "create m --dimension=2 --replicate --replicas=3");
  EXPECT_NE(created.find("replica of stream halfspace_m (subject "
                         "halfspace.train.m): position=1"),
            std::string::npos)
      << created;
  v1::TrainRequest request;
  request.set_model("m");
  v1::Example* e = request.add_examples();
  e->mutable_features()->mutable_dense()->Add(1.0);
  e->mutable_features()->mutable_dense()->Add(-1.0);
  e->set_label(1);
  absl::StatusOr<v1::TrainResponse> trained =
      TrainOnce(replicas.stub(0), request);
  ASSERT_TRUE(trained.ok()) << trained.status();
  // Read on the other server at the position the write returned.
  const std::string predicted =
      Cli(replicas.target(1),
          absl::StrCat("predict m 1,-1 --min_position=", trained->position()));
  EXPECT_NE(predicted.find("label=1  score=3"), std::string::npos) << predicted;
  const std::string got = Cli(replicas.target(1), "get m");
  EXPECT_NE(got.find(absl::StrCat("position=", trained->position(),
                                  "  lag=0 records")),
            std::string::npos)
      << got;

  // A file's lines published straight to the model's subject, 3 a message;
  // a bad line stops the publishing after the lines before it.
  const std::string nats_url = absl::StrCat(" --nats_url=", nats.url(1));
  const std::string good = dir.File("good.csv");
  std::ofstream(good) << "label,x1,x2\n1,1,-1\n-1,-1,1\n\n1,2,0\n-1,0,2\n";
  EXPECT_THAT(
      Cli(replicas.target(0),
          absl::StrCat("publish m ", good, " --batch_size=3", nats_url)),
      HasSubstr("published=4  messages=2  positions=3..4"));
  const std::string bad = dir.File("bad.csv");
  std::ofstream(bad) << "1,0.5,0.5\n1,x,1\n-1,1,1\n";
  const std::string stopped =
      Cli(replicas.target(0), absl::StrCat("publish m ", bad, nats_url));
  EXPECT_THAT(stopped, HasSubstr("published=1  messages=1  positions=5..5"));
  EXPECT_THAT(stopped, HasSubstr(absl::StrCat(bad, ":2: 'x' is not a number")));
  EXPECT_THAT(Cli(replicas.target(1), "predict m 1,-1 --min_position=5"),
              HasSubstr("label=1"));
  EXPECT_THAT(Cli(replicas.target(1), "get m"), HasSubstr("examples_seen=6"));
  // A model of one server has no subject to publish to.
  Cli(replicas.target(1), "create local --dimension=2");
  EXPECT_THAT(Cli(replicas.target(1), absl::StrCat("publish local ", good)),
              HasSubstr("model 'local' is not replicated"));
}

// SetAlias of `alias` to `model` through `stub`, with `expected` when
// given; the model it pointed to before, or why not.
absl::StatusOr<std::string> SetAlias(
    Stub& stub, const std::string& alias, const std::string& model,
    const std::optional<std::string>& expected = std::nullopt) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::SetAliasRequest request;
  request.set_alias(alias);
  request.set_model(model);
  if (expected.has_value()) request.set_expected_model(*expected);
  v1::SetAliasResponse response;
  const grpc::Status status = stub.SetAlias(&context, request, &response);
  if (!status.ok()) return StatusOf(status);
  return response.previous_model();
}

absl::StatusOr<std::string> DeleteAlias(Stub& stub, const std::string& alias) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::DeleteAliasRequest request;
  request.set_alias(alias);
  v1::DeleteAliasResponse response;
  const grpc::Status status = stub.DeleteAlias(&context, request, &response);
  if (!status.ok()) return StatusOf(status);
  return response.model();
}

// The model `name` names on `stub` (itself, or an alias's), or why none.
absl::StatusOr<std::string> Named(Stub& stub, const std::string& name) {
  grpc::ClientContext context;
  v1::GetModelRequest request;
  request.set_model(name);
  v1::GetModelResponse response;
  const grpc::Status status = stub.GetModel(&context, request, &response);
  if (!status.ok()) return StatusOf(status);
  return response.model().name();
}

// Waits up to 10 s until alias `alias` names `model` on `stub` (for "",
// until it names nothing).
testing::AssertionResult AliasSeen(Stub& stub, const std::string& alias,
                                   const std::string& model) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<std::string> named;
  do {
    named = Named(stub, alias);
    if (model.empty() ? absl::IsNotFound(named.status())
                      : named.ok() && *named == model) {
      return testing::AssertionSuccess();
    }
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  return testing::AssertionFailure()
         << "alias " << alias << " names "
         << (named.ok() ? *named : named.status().ToString()) << ", not '"
         << model << "'";
}

// An alias of a replicated model is every server's: set, moved and
// deleted on one replica, it is seen on the others and on a replica that
// restarts; its compare-and-set holds across servers; a name is a model's
// or an alias's on every server, and a model an alias points to is not
// deleted.
TEST(ReplicationTest, AnAliasOfAReplicatedModelIsEveryServers) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  for (const Kind& kind : {kKinds[0], kKinds[1]}) {
    ASSERT_TRUE(CreateReplicated(replicas.stub(0), kind).ok())
        << replicas.Log(0);
    ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1));
  }
  v1::CreateModelRequest local = CreateRequest(kKinds[0]);
  local.set_model("local");
  {
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    ASSERT_TRUE(replicas.stub(1).CreateModel(&context, local, &response).ok());
  }

  // Set on replica 0, which holds it once the call returns; replica 1
  // holds it soon after.
  absl::StatusOr<std::string> set =
      SetAlias(replicas.stub(0), "prod", "perceptron");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(*set, "");
  EXPECT_EQ(Named(replicas.stub(0), "prod").value_or(""), "perceptron");
  EXPECT_TRUE(AliasSeen(replicas.stub(1), "prod", "perceptron"));
  {
    grpc::ClientContext context;
    v1::PredictRequest request;
    request.set_model("prod");
    auto* dense = request.add_instances()->mutable_dense();
    for (double x : {1.0, 2.0, 3.0}) dense->Add(x);
    v1::PredictResponse response;
    EXPECT_TRUE(replicas.stub(1).Predict(&context, request, &response).ok());
  }

  // Moved on replica 1 if it points to perceptron; the same move on
  // replica 0 then no longer holds, whatever replica 0 has read.
  set = SetAlias(replicas.stub(1), "prod", "asgd", "perceptron");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(*set, "perceptron");
  EXPECT_EQ(
      SetAlias(replicas.stub(0), "prod", "asgd", "perceptron").status().code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(SetAlias(replicas.stub(0), "canary", "asgd", "perceptron")
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(AliasSeen(replicas.stub(0), "prod", "asgd"));

  // One name, one thing: on every server.
  EXPECT_EQ(SetAlias(replicas.stub(0), "perceptron", "asgd").status().code(),
            absl::StatusCode::kAlreadyExists);
  Kind named_prod = kKinds[0];
  named_prod.name = "prod";
  EXPECT_EQ(CreateReplicated(replicas.stub(1), named_prod).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  local.set_model("prod");
  {
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    EXPECT_EQ(
        replicas.stub(0).CreateModel(&context, local, &response).error_code(),
        grpc::StatusCode::ALREADY_EXISTS);
  }
  // Every server's alias never points to one server's model.
  absl::StatusOr<std::string> to_local =
      SetAlias(replicas.stub(1), "prod", "local");
  EXPECT_EQ(to_local.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(to_local.status().message(), HasSubstr("shared by every server"));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(DeleteModel(replicas.stub(i), "asgd").code(),
              absl::StatusCode::kFailedPrecondition);
  }

  // A replica that restarts reads its aliases from the catalog again.
  replicas.Kill(1);
  replicas.Start(1);
  EXPECT_TRUE(AliasSeen(replicas.stub(1), "prod", "asgd"));
  // It holds each model once it has caught up with that model's stream;
  // until then a call naming it answers UNAVAILABLE.
  for (const Kind& kind : {kKinds[0], kKinds[1]}) {
    ASSERT_TRUE(CaughtUp(replicas.stub(1), kind.name, 1));
  }
  {
    grpc::ClientContext context;
    v1::ListAliasesResponse response;
    ASSERT_TRUE(replicas.stub(1)
                    .ListAliases(&context, v1::ListAliasesRequest(), &response)
                    .ok());
    ASSERT_EQ(response.aliases_size(), 1);
    EXPECT_EQ(response.aliases(0).model(), "asgd");
  }

  // Deleted on replica 1: gone there when the call returns, soon on 0.
  absl::StatusOr<std::string> deleted = DeleteAlias(replicas.stub(1), "prod");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, "asgd");
  EXPECT_TRUE(absl::IsNotFound(Named(replicas.stub(1), "prod").status()));
  EXPECT_TRUE(AliasSeen(replicas.stub(0), "prod", ""));
  EXPECT_TRUE(absl::IsNotFound(DeleteAlias(replicas.stub(0), "prod").status()));
  // A model is no alias to delete.
  EXPECT_TRUE(
      absl::IsNotFound(DeleteAlias(replicas.stub(0), "perceptron").status()));
  EXPECT_TRUE(DeleteModel(replicas.stub(0), "asgd").ok());
  // The name is free again, on every server.
  set = SetAlias(replicas.stub(1), "prod", "perceptron", "");
  EXPECT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(AliasSeen(replicas.stub(0), "prod", "perceptron"));
}

// Requests `requests` on one fan-out stream through `stub`, all written
// before the first response is read; the responses, or why not.
absl::StatusOr<std::vector<v1::TrainResponse>> FanOut(
    Stub& stub, const std::vector<v1::TrainRequest>& requests) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  auto stream = stub.Train(&context);
  for (const v1::TrainRequest& request : requests) {
    if (!stream->Write(request)) break;
  }
  stream->WritesDone();
  std::vector<v1::TrainResponse> responses;
  v1::TrainResponse response;
  while (stream->Read(&response)) responses.push_back(response);
  const grpc::Status status = stream->Finish();
  if (!status.ok()) return StatusOf(status);
  return responses;
}

// CompareModels of `models` on `stub`: each model's test against the
// first, serialized.
absl::StatusOr<std::vector<std::string>> Compared(
    Stub& stub, const std::vector<std::string>& models) {
  grpc::ClientContext context;
  v1::CompareModelsRequest request;
  for (const std::string& m : models) request.add_models(m);
  v1::CompareModelsResponse response;
  const grpc::Status status = stub.CompareModels(&context, request, &response);
  if (!status.ok()) return StatusOf(status);
  std::vector<std::string> tests;
  for (const v1::ModelComparison& c : response.models()) {
    tests.push_back(c.versus_first().SerializeAsString());
  }
  return tests;
}

// A fan-out stream on replicated models publishes each request to every
// model's stream, each with what the models before it did: every replica
// then counts the paired mistakes a local fan-out stream counts, bit for
// bit, through streams on either replica and a kill of one.
TEST(ReplicationTest, AFanOutStreamCountsPairedMistakesAlikeOnEveryReplica) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2);
  const Kind kinds[] = {kKinds[0], kKinds[1]};
  for (const Kind& kind : kinds) {
    ASSERT_TRUE(CreateWithLocalTwin(replicas, kind));
  }
  // The same requests to the replicated models and to the local ones.
  auto requests = [&](int first, int n, bool local) {
    std::vector<v1::TrainRequest> out;
    for (int r = 0; r < n; ++r) {
      v1::TrainRequest request = Batch(kinds[0], first + 25 * r, 25, "fan");
      request.clear_model();
      for (const Kind& kind : kinds) {
        request.add_models(local ? kind.name + "_local" : kind.name);
      }
      out.push_back(std::move(request));
    }
    return out;
  };
  std::vector<uint64_t> positions(2, 0);
  for (int part = 0; part < 2; ++part) {
    SCOPED_TRACE(absl::StrCat("part ", part));
    // Part 0 through replica 1, part 1 through replica 0.
    absl::StatusOr<std::vector<v1::TrainResponse>> replicated =
        FanOut(replicas.stub(1 - part), requests(200 * part, 8, false));
    ASSERT_TRUE(replicated.ok()) << replicated.status() << replicas.Log(1);
    absl::StatusOr<std::vector<v1::TrainResponse>> local =
        FanOut(replicas.stub(0), requests(200 * part, 8, true));
    ASSERT_TRUE(local.ok()) << local.status();
    ASSERT_EQ(replicated->size(), 8u);
    ASSERT_EQ(local->size(), 8u);
    for (size_t r = 0; r < 8; ++r) {
      const v1::TrainResponse& a = (*replicated)[r];
      const v1::TrainResponse& b = (*local)[r];
      ASSERT_EQ(a.fan_out_results_size(), 25);
      for (int i = 0; i < 25; ++i) {
        EXPECT_EQ(a.fan_out_results(i).SerializeAsString(),
                  b.fan_out_results(i).SerializeAsString())
            << "request " << r << ", example " << i;
      }
      ASSERT_EQ(a.model_positions_size(), 2);
      EXPECT_EQ(b.model_positions_size(), 0);
      for (int k = 0; k < 2; ++k) {
        EXPECT_GT(a.model_positions(k), positions[k]);
        positions[k] = a.model_positions(k);
      }
    }
  }
  // Replica 1, killed, comes back with what it counted.
  replicas.Kill(1);
  replicas.Start(1);
  const absl::StatusOr<std::vector<std::string>> expected =
      Compared(replicas.stub(0), {"asgd_local", "perceptron_local"});
  ASSERT_TRUE(expected.ok()) << expected.status();
  v1::PairedTest paired;
  ASSERT_TRUE(paired.ParseFromString((*expected)[1]));
  EXPECT_EQ(paired.examples(), 400u);
  EXPECT_GT(paired.only_first_wrong() + paired.only_this_wrong(), 0u);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(absl::StrCat("replica ", i));
    for (size_t k = 0; k < 2; ++k) {
      ASSERT_TRUE(CaughtUp(replicas.stub(i), kinds[k].name, positions[k]));
      EXPECT_EQ(WeightBits(replicas.stub(i), kinds[k].name),
                WeightBits(replicas.stub(0), kinds[k].name + "_local"));
    }
    EXPECT_EQ(Compared(replicas.stub(i), {"asgd", "perceptron"})
                  .value_or(std::vector<std::string>{}),
              *expected);
  }
}

// A replicated model's per-model limits are its creating server's, kept
// in its creation record: every replica decides by them, whatever its own
// flags, so that none learns what another refuses.
TEST(ReplicationTest, EveryReplicaDecidesByTheLimitsItsModelWasCreatedWith) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  Replicas replicas(dir, nats, 2, {{}, {"--max_classes=2"}});
  Kind wide = kKinds[2], narrow = kKinds[2];  // softmax: up, flat, down
  wide.name = "wide";
  narrow.name = "narrow";
  ASSERT_TRUE(CreateReplicated(replicas.stub(0), wide).ok()) << replicas.Log(0);
  ASSERT_TRUE(CreateReplicated(replicas.stub(1), narrow).ok())
      << replicas.Log(1);
  for (const Kind& kind : {wide, narrow}) {
    SCOPED_TRACE(kind.name);
    // Trained through the replica whose flags differ from the creator's.
    Stub& through = replicas.stub(kind.name == "wide" ? 1 : 0);
    ASSERT_TRUE(CaughtUp(through, kind.name, 1));
    absl::StatusOr<v1::TrainResponse> trained =
        TrainOnce(through, Batch(kind, 0, 30, ""));
    ASSERT_TRUE(trained.ok()) << trained.status();
    int refused = 0;
    for (const v1::ExampleResult& r : trained->results()) {
      if (!r.has_error()) continue;
      ++refused;
      EXPECT_EQ(r.error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      EXPECT_THAT(r.error().message(), HasSubstr("max_classes"));
    }
    // Three classes: all learned by the wide model; the narrow one refuses
    // those of its third.
    if (kind.name == "wide") {
      EXPECT_EQ(refused, 0);
    } else {
      EXPECT_GT(refused, 0);
    }
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(CaughtUp(replicas.stub(i), kind.name, trained->position()));
      absl::StatusOr<v1::Model> m = GetModel(replicas.stub(i), kind.name);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->stats().examples_seen(), 30u - refused) << "replica " << i;
      EXPECT_EQ(m->classes_size(), kind.name == "wide" ? 3 : 2)
          << "replica " << i;
    }
    EXPECT_EQ(WeightBits(replicas.stub(0), kind.name),
              WeightBits(replicas.stub(1), kind.name));
  }
}

TEST(ReplicationTest, TheVwListenerLearnsAReplicatedModelAsItsStream) {
  TempDir dir;
  NatsCluster nats(dir, 3);
  const int vw_port = FreePort();
  Replicas replicas(dir, nats, 2,
                    {{absl::StrCat("--vw_listen=127.0.0.1:", vw_port)}});
  v1::CreateModelRequest create;
  create.set_model("vwrep");
  *create.mutable_algorithm() = TextAlgorithm("perceptron");
  create.set_hash_bits(10);
  create.mutable_replication()->set_replicas(3);
  {
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    ASSERT_TRUE(replicas.stub(0).CreateModel(&context, create, &response).ok())
        << replicas.Log(0);
    create.set_model("vwrep_local");
    create.clear_replication();
    grpc::ClientContext local_context;
    ASSERT_TRUE(
        replicas.stub(0).CreateModel(&local_context, create, &response).ok());
  }
  ASSERT_TRUE(CaughtUp(replicas.stub(1), "vwrep", 1));

  // The same lines to the replicated model and to its local twin (each
  // line's tag names its model), labelled lines with predictions among
  // them, which see what the lines before them taught.
  std::string lines;
  for (int i = 0; i < 40; ++i) {
    absl::StrAppend(&lines, i % 3 == 0 ? "1" : "-1", " 'MODEL |f a", i % 5,
                    " b", i % 3, "\n");
    if (i % 8 == 7) absl::StrAppend(&lines, "'MODEL |f a1 b1\n");
  }
  VwSocket vw(vw_port);
  ASSERT_TRUE(vw.connected());
  for (const char* model : {"vwrep", "vwrep_local"}) {
    vw.Send(absl::StrReplaceAll(lines, {{"MODEL", model}}));
  }
  const std::vector<std::string> answers = vw.Lines(90);
  ASSERT_EQ(answers.size(), 90u);
  for (int i = 0; i < 45; ++i) {
    EXPECT_EQ(absl::StrReplaceAll(answers[i], {{" vwrep", ""}}),
              absl::StrReplaceAll(answers[45 + i], {{" vwrep_local", ""}}))
        << i;
  }
  absl::StatusOr<v1::Model> replicated = GetModel(replicas.stub(0), "vwrep");
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(replicated->stats().examples_seen(), 40u);
  ASSERT_TRUE(
      CaughtUp(replicas.stub(1), "vwrep", replicated->replica().position()));
  const std::vector<uint64_t> local =
      WeightBits(replicas.stub(0), "vwrep_local");
  EXPECT_EQ(WeightBits(replicas.stub(0), "vwrep"), local);
  EXPECT_EQ(WeightBits(replicas.stub(1), "vwrep"), local);
}

TEST(ReplicationTest, AServerWithoutNatsRefusesAReplicatedModel) {
  TestServer server;
  Client client = server.NewClient();
  v1::CreateModelRequest request = CreateRequest(kKinds[0]);
  request.mutable_replication();
  EXPECT_EQ(client.CreateModel(request).status().code(),
            absl::StatusCode::kFailedPrecondition);
  request.mutable_replication()->set_stream("bad.stream");
  EXPECT_EQ(client.CreateModel(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request.mutable_replication()->set_stream("");
  request.mutable_replication()->set_subject("a.*");
  EXPECT_EQ(client.CreateModel(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request.mutable_replication()->set_subject("");
  request.mutable_replication()->set_replicas(6);
  EXPECT_EQ(client.CreateModel(request).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace halfspace
