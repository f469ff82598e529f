// halfspace_load: drives a halfspace server with synthetic data and prints
// what each path does next to what gRPC itself does with no work at all.
//
//   build/tests/halfspace_load [--target=HOST:PORT] [--dimension=20]
//       [--examples=200000] [--batch=1000] [--clients=8] [--calls=5000]
//       [--durability=sync] [--transport=tcp|unix] [--rounds=3]
//       [--json=FILE]
//       [--sweep=batch|dimension|streams|models|export|text|vw|http|
//                replication]
//       [--vw=PATH]
//
// Without --target it starts the server binary (next to this one's build)
// as a child on a temporary data directory with --durability, listening on
// TCP loopback or a Unix socket (--transport). The floors come from a no-op
// gRPC service (noop.proto) that this binary runs as a child process too,
// on the same transport, with the same client code: a unary call, a stream
// round trip, a pipelined stream, and concurrent clients. The same service
// is also measured on gRPC's asynchronous API (completion queues, each
// polled by its own thread, which does the work of what it takes from it)
// and over the other transport, as ratios to the floors. Each round measures
// the floors and then every halfspace path; each row reports the median over
// rounds, and its ratio to its floor is the median of the ratios within each
// round, so the ratios hold on a shared, noisy machine where the absolute
// numbers do not. Nothing is asserted: this prints numbers.
//
// --sweep measures training throughput against one parameter instead (batch
// size, dimension dense and sparse, concurrent streams), predictions and
// the server's memory against the number of models, or the time to export a
// model in pages against its size, the CLI reading CSV and Vowpal Wabbit
// text against requests encoded beforehand (text; with --vw, Vowpal Wabbit
// itself on the same text file), one VW text line's round trip through
// the server's --vw_listen against a raw echo socket's and gRPC's Predict
// (vw; with --vw, Vowpal Wabbit's own daemon too), predictions and training
// as JSON over HTTP/1.1 (--http_listen) against the same over gRPC (http),
// or (replication, which
// starts three
// nats-server processes and the server with --nats_url) a replicated model
// against a local one on the same server; tests/bench/plot.py
// draws the JSON of the batch and dimension sweeps.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/example_text.h"
#include "client/halfspace_client.h"
#include "core/features/feature_hash.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "halfspace/bench/noop.grpc.pb.h"
#include "server/pipelined_stream.h"
#include "server/raw_message.h"
#include "tests/temp_dir.h"

ABSL_FLAG(std::string, target, "",
          "a running server; empty: start the server binary as a child");
ABSL_FLAG(std::string, durability, "sync",
          "--durability of the server this starts");
ABSL_FLAG(int, dimension, 20, "features per example");
ABSL_FLAG(int, examples, 200000, "examples per training measurement");
ABSL_FLAG(int, batch, 1000, "examples per message, batched training");
ABSL_FLAG(int, clients, 8, "concurrent clients, for the concurrent rows");
ABSL_FLAG(int, calls, 5000, "calls per latency measurement");
ABSL_FLAG(int, rounds, 3, "rounds of every measurement; medians reported");
ABSL_FLAG(std::string, sweep, "",
          "instead of the paths: throughput against batch, dimension, "
          "streams or models (models also reports the server's memory; it "
          "runs one round), ExportModel's paging against the model's "
          "size (export), VW text through the CLI (text), a VW line's round "
          "trip through --vw_listen (vw), or a replicated model against a "
          "local one on a three-node NATS cluster started here "
          "(replication)");
ABSL_FLAG(std::string, json, "", "also write the results to this file");
ABSL_FLAG(std::string, vw, "",
          "--sweep=text: a Vowpal Wabbit binary to time on the same text");
ABSL_FLAG(std::string, transport, "tcp",
          "tcp (loopback) or unix (Unix-domain sockets) between the clients "
          "and the servers this starts");
ABSL_FLAG(int, serve_echo, 0, "internal: echo what connections send, here");
ABSL_FLAG(std::vector<std::string>, serve_noop, {},
          "internal: serve the no-op service on these addresses");
ABSL_FLAG(std::vector<std::string>, serve_noop_async, {},
          "internal: serve it on completion queues on these addresses");

namespace halfspace {
namespace {

// --- The no-op service -------------------------------------------------------

class NoopStream final : public PipelinedStream {
 public:
  NoopStream() : PipelinedStream(/*log=*/nullptr, /*gate=*/nullptr) {
    Start(absl::OkStatus());
  }

 private:
  absl::Status Handle(grpc::ByteBuffer& request, grpc::ByteBuffer& response,
                      Reply&) override {
    if (absl::Status s = DecodeMessage(request, request_); !s.ok()) return s;
    EncodeMessage(bench::Vector(), response);
    return absl::OkStatus();
  }
  grpc::Status End(const absl::Status&) override { return grpc::Status::OK; }

  bench::Vector request_;
};

class NoopService final
    : public bench::Noop::WithRawCallbackMethod_Bidi<
          bench::Noop::WithCallbackMethod_Unary<bench::Noop::Service>> {
 public:
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context,
                                  const bench::Vector*,
                                  bench::Vector*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Bidi(
      grpc::CallbackServerContext*) override {
    return new NoopStream();
  }
};

// --- The no-op service on completion queues ---------------------------------
//
// The same service on gRPC's asynchronous API: each thread polls its own
// completion queue and does the work of the events it takes there, with no
// hand-off to another thread. A stream answers each message before reading
// the next.

class AsyncCall {
 public:
  virtual ~AsyncCall() = default;
  virtual void Proceed(bool ok) = 0;
};

class AsyncUnary final : public AsyncCall {
 public:
  AsyncUnary(bench::Noop::AsyncService* service,
             grpc::ServerCompletionQueue* queue)
      : service_(service), queue_(queue), responder_(&context_) {
    service_->RequestUnary(&context_, &request_, &responder_, queue_, queue_,
                           this);
  }
  void Proceed(bool ok) override {
    if (!ok || answered_) {
      delete this;
      return;
    }
    new AsyncUnary(service_, queue_);  // waits for the next call
    answered_ = true;
    responder_.Finish(bench::Vector(), grpc::Status::OK, this);
  }

 private:
  bench::Noop::AsyncService* const service_;
  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  bench::Vector request_;
  grpc::ServerAsyncResponseWriter<bench::Vector> responder_;
  bool answered_ = false;
};

class AsyncBidi final : public AsyncCall {
 public:
  AsyncBidi(bench::Noop::AsyncService* service,
            grpc::ServerCompletionQueue* queue)
      : service_(service), queue_(queue), stream_(&context_) {
    service_->RequestBidi(&context_, &stream_, queue_, queue_, this);
  }
  void Proceed(bool ok) override {
    switch (state_) {
      case State::kWaiting:
        if (!ok) break;
        new AsyncBidi(service_, queue_);
        Read();
        return;
      case State::kReading:
        if (!ok) return Finish();  // the client is done writing
        state_ = State::kWriting;
        stream_.Write(reply_, this);
        return;
      case State::kWriting:
        if (!ok) return Finish();
        Read();
        return;
      case State::kFinishing:
        break;
    }
    delete this;
  }

 private:
  enum class State { kWaiting, kReading, kWriting, kFinishing };
  void Read() {
    state_ = State::kReading;
    stream_.Read(&request_, this);
  }
  void Finish() {
    state_ = State::kFinishing;
    stream_.Finish(grpc::Status::OK, this);
  }

  bench::Noop::AsyncService* const service_;
  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<bench::Vector, bench::Vector> stream_;
  bench::Vector request_, reply_;
  State state_ = State::kWaiting;
};

// Serves the no-op service on the `callback` API's addresses and on
// completion queues on the `async` ones, one queue per core.
int ServeNoop(const std::vector<std::string>& callback,
              const std::vector<std::string>& async) {
  NoopService service;
  grpc::ServerBuilder builder;
  for (const std::string& address : callback) {
    builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();

  bench::Noop::AsyncService async_service;
  grpc::ServerBuilder async_builder;
  for (const std::string& address : async) {
    async_builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  }
  async_builder.RegisterService(&async_service);
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency());
       ++i) {
    queues.push_back(async_builder.AddCompletionQueue());
  }
  std::unique_ptr<grpc::Server> async_server = async_builder.BuildAndStart();
  if (server == nullptr || async_server == nullptr) return 1;
  std::vector<std::thread> pollers;
  for (auto& queue : queues) {
    pollers.emplace_back([&async_service, q = queue.get()] {
      new AsyncUnary(&async_service, q);
      new AsyncBidi(&async_service, q);
      void* tag;
      bool ok;
      while (q->Next(&tag, &ok)) static_cast<AsyncCall*>(tag)->Proceed(ok);
    });
  }
  server->Wait();
  return 0;
}

// --- Child processes ---------------------------------------------------------

// A loopback port that was free a moment ago.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("cannot find a free port");
    std::exit(1);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// Starts `argv` as a child process, its output appended to `log`.
pid_t Spawn(std::vector<std::string> argv, const std::string& log) {
  std::fflush(stdout);  // or the child writes what is buffered again
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (freopen(log.c_str(), "a", stdout) == nullptr ||
        freopen(log.c_str(), "a", stderr) == nullptr) {
      _exit(126);
    }
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

class Child {
 public:
  Child(std::vector<std::string> argv, const std::string& log)
      : pid_(Spawn(std::move(argv), log)) {}
  ~Child() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// The resident memory of process `pid`, in bytes (0 if unknown).
double ResidentBytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return 1024.0 * std::strtod(line.c_str() + 6, nullptr);
    }
  }
  return 0;
}

std::shared_ptr<grpc::Channel> Connect(const std::string& target, int index) {
  grpc::ChannelArguments args;
  args.SetInt("halfspace.bench.channel", index);  // its own connection
  auto channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Seconds(30)))) {
    std::fprintf(stderr, "cannot reach %s\n", target.c_str());
    std::exit(1);
  }
  return channel;
}

// --- Data and measurement ----------------------------------------------------

struct Data {
  int dimension;
  std::vector<std::vector<double>> x;
  std::vector<int> y;
};

// Gaussian features, labels from a fixed hyperplane with noise: a stream
// that keeps the perceptron updating.
Data MakeData(int n, int d) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  Data data{d, std::vector<std::vector<double>>(n, std::vector<double>(d)),
            std::vector<int>(n)};
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < d; ++j) {
      data.x[i][j] = normal(rng);
      s += data.x[i][j] * (j % 3 - 1);
    }
    data.y[i] = s + 0.3 * normal(rng) >= 0 ? 1 : -1;
  }
  return data;
}

struct Latency {
  double p50 = 0, p99 = 0;  // microseconds
};

// Times `calls` calls of `call` (after a warm-up).
Latency TimeCalls(int calls, const std::function<void(int)>& call) {
  for (int i = 0; i < std::min(calls / 10, 500); ++i) call(i);
  std::vector<double> micros(calls);
  for (int i = 0; i < calls; ++i) {
    const absl::Time start = absl::Now();
    call(i);
    micros[i] = absl::ToDoubleMicroseconds(absl::Now() - start);
  }
  std::sort(micros.begin(), micros.end());
  return {micros[calls / 2], micros[calls * 99 / 100]};
}

// Times `calls` calls of each of `paths`, taking turns call by call (after
// a warm-up), so that each sees the machine as the others do.
std::vector<Latency> TimeInTurns(
    int calls, const std::vector<std::function<void(int)>>& paths) {
  for (int i = 0; i < std::min(calls / 10, 500); ++i) {
    for (const auto& path : paths) path(i);
  }
  std::vector<std::vector<double>> micros(paths.size(),
                                          std::vector<double>(calls));
  for (int i = 0; i < calls; ++i) {
    for (size_t k = 0; k < paths.size(); ++k) {
      const absl::Time start = absl::Now();
      paths[k](i);
      micros[k][i] = absl::ToDoubleMicroseconds(absl::Now() - start);
    }
  }
  std::vector<Latency> latencies;
  for (std::vector<double>& m : micros) {
    std::sort(m.begin(), m.end());
    latencies.push_back({m[calls / 2], m[calls * 99 / 100]});
  }
  return latencies;
}

// Writes `requests` on `stream` from one thread while this one reads as
// many responses; returns messages per second.
template <typename Request, typename Response>
double Pipelined(grpc::ClientReaderWriter<Request, Response>& stream,
                 const std::vector<Request>& requests) {
  const absl::Time start = absl::Now();
  std::thread writer([&] {
    for (const Request& r : requests) {
      if (!stream.Write(r)) break;
    }
    stream.WritesDone();
  });
  Response response;
  size_t read = 0;
  while (stream.Read(&response)) ++read;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  writer.join();
  grpc::Status status = stream.Finish();
  if (!status.ok() || read != requests.size()) {
    std::fprintf(stderr, "stream ended after %zu of %zu: %s\n", read,
                 requests.size(), status.error_message().c_str());
  }
  return requests.size() / seconds;
}

// Sends `request` and reads its answer `calls` times, one in flight, then
// closes the stream.
template <typename Response, typename Stream, typename Request>
void RoundTrips(Stream& stream, const Request& request, int calls) {
  Response response;
  for (int i = 0; i < calls; ++i) {
    stream.Write(request);
    stream.Read(&response);
  }
  stream.WritesDone();
  stream.Finish();
}

// Runs `clients` threads of `call` round trips each on its own connection
// for `calls` calls each; returns calls per second over all.
double Concurrent(int clients, int calls, const std::function<void(int)>& run) {
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int c = 0; c < clients; ++c) threads.emplace_back(run, c);
  for (std::thread& t : threads) t.join();
  return double(clients) * calls / absl::ToDoubleSeconds(absl::Now() - start);
}

// --- The report --------------------------------------------------------------

struct Row {
  std::string name;
  std::string unit;  // "µs" (p50, p99) or "/s"
  double value = 0;  // p50 for latencies
  double p99 = 0;
  double floor = 0;  // the same measure of the no-op service; 0: none
};

// Rows measured in several rounds, reported as the median of each: of the
// value, of its floor, and of the ratio within each round.
class Report {
 public:
  void Add(Row row) {
    auto it = std::find_if(rows_.begin(), rows_.end(),
                           [&](const Rows& r) { return r.name == row.name; });
    if (it == rows_.end()) {
      it = rows_.insert(rows_.end(), Rows{row.name, row.unit, {}});
    }
    it->samples.push_back(row);
  }

  void Print() const {
    std::printf("| %-52s | %13s | %13s | %5s |\n|---|---:|---:|---:|\n", "path",
                "result", "floor", "ratio");
    for (const Rows& r : rows_) {
      const Row m = Median(r);
      const bool rate = r.unit == "/s";
      std::string value = rate ? Rate(m.value)
                          : r.unit == "µs"
                              ? absl::StrFormat("%.0f/%.0f µs", m.value, m.p99)
                              : absl::StrFormat("%.3g %s", m.value, r.unit);
      std::string floor = m.floor == 0 ? ""
                          : rate       ? Rate(m.floor)
                                       : absl::StrFormat("%.0f µs", m.floor);
      std::string ratio = m.floor == 0 ? "" : absl::StrFormat("%.2f", Ratio(r));
      std::printf("| %-52s | %13s | %13s | %5s |\n", r.name.c_str(),
                  value.c_str(), floor.c_str(), ratio.c_str());
    }
  }

  void WriteJson(const std::string& path, const std::string& setup) const {
    std::ofstream out(path);
    out << "{\"setup\": \"" << setup << "\", \"rows\": [\n";
    for (size_t i = 0; i < rows_.size(); ++i) {
      const Row m = Median(rows_[i]);
      out << absl::StrFormat(
          "  {\"name\": \"%s\", \"unit\": \"%s\", \"value\": %.6g, "
          "\"p99\": %.6g, \"floor\": %.6g, \"ratio\": %.6g}%s\n",
          m.name, m.unit == "/s" ? "per_second" : "microseconds", m.value,
          m.p99, m.floor, m.floor == 0 ? 0 : Ratio(rows_[i]),
          i + 1 < rows_.size() ? "," : "");
    }
    out << "]}\n";
  }

 private:
  struct Rows {
    std::string name, unit;
    std::vector<Row> samples;  // one per round
  };

  static double MedianOf(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  static Row Median(const Rows& r) {
    std::vector<double> value, p99, floor;
    for (const Row& s : r.samples) {
      value.push_back(s.value);
      p99.push_back(s.p99);
      floor.push_back(s.floor);
    }
    return {r.name, r.unit, MedianOf(value), MedianOf(p99), MedianOf(floor)};
  }
  static double Ratio(const Rows& r) {
    std::vector<double> ratios;
    for (const Row& s : r.samples) ratios.push_back(s.value / s.floor);
    return MedianOf(ratios);
  }
  static std::string Rate(double per_second) {
    return per_second >= 1e6 ? absl::StrFormat("%.2fM/s", per_second / 1e6)
                             : absl::StrFormat("%.1fk/s", per_second / 1e3);
  }

  std::vector<Rows> rows_;
};

// --- The measurements --------------------------------------------------------

using Stub = v1::HalfspaceService::Stub;

bench::Vector NoopVector(int d) {
  bench::Vector v;
  for (int j = 0; j < d; ++j) v.add_values(0.5 * j);
  return v;
}

struct Floors {
  Latency unary, round_trip;
  double pipelined = 0, concurrent = 0;
};

Floors MeasureFloors(const std::string& target, int d, int calls, int messages,
                     int clients) {
  Floors f;
  auto stub = bench::Noop::NewStub(Connect(target, 0));
  const bench::Vector v = NoopVector(d);
  f.unary = TimeCalls(calls, [&](int) {
    grpc::ClientContext context;
    bench::Vector out;
    stub->Unary(&context, v, &out);
  });
  {
    grpc::ClientContext context;
    auto stream = stub->Bidi(&context);
    bench::Vector out;
    f.round_trip = TimeCalls(calls, [&](int) {
      stream->Write(v);
      stream->Read(&out);
    });
    stream->WritesDone();
    stream->Finish();
  }
  {
    grpc::ClientContext context;
    auto stream = stub->Bidi(&context);
    f.pipelined = Pipelined(*stream, std::vector<bench::Vector>(messages, v));
  }
  f.concurrent = Concurrent(clients, calls, [&](int c) {
    auto own = bench::Noop::NewStub(Connect(target, c + 1));
    grpc::ClientContext context;
    RoundTrips<bench::Vector>(*own->Bidi(&context), v, calls);
  });
  return f;
}

void AddDense(const std::vector<double>& x, v1::FeatureVector* out) {
  out->mutable_dense()->Add(x.begin(), x.end());
}

std::vector<v1::TrainRequest> TrainRequests(
    const Data& data, size_t n, size_t batch, const std::string& model,
    v1::TrainResults results = v1::TRAIN_RESULTS_PER_EXAMPLE) {
  std::vector<v1::TrainRequest> requests;
  for (size_t first = 0; first < n; first += batch) {
    v1::TrainRequest& r = requests.emplace_back();
    if (first == 0) r.set_model(model);
    r.set_results(results);
    for (size_t i = first; i < std::min(first + batch, n); ++i) {
      v1::Example* e = r.add_examples();
      AddDense(data.x[i % data.x.size()], e->mutable_features());
      e->set_label(data.y[i % data.y.size()]);
    }
  }
  return requests;
}

// Examples per second into a new perceptron, `batch` per message; with
// fan_out > 1, into that many new perceptrons on one fan-out stream.
double Train(Stub& stub, Client& client, const Data& data, size_t n,
             size_t batch, const std::string& model,
             v1::TrainResults results = v1::TRAIN_RESULTS_PER_EXAMPLE,
             int fan_out = 1) {
  std::vector<std::string> models = {model};
  for (int k = 1; k < fan_out; ++k) models.push_back(absl::StrCat(model, k));
  for (const std::string& m : models) {
    (void)client.DeleteModel(m);
    (void)client.CreateModel(m, *ParseAlgorithm("perceptron"), data.dimension);
  }
  std::vector<v1::TrainRequest> requests =
      TrainRequests(data, n, batch, model, results);
  if (fan_out > 1) {
    requests.front().clear_model();
    requests.front().mutable_models()->Assign(models.begin(), models.end());
  }
  grpc::ClientContext context;
  auto stream = stub.Train(&context);
  const double messages = Pipelined(*stream, requests);
  for (const std::string& m : models) (void)client.DeleteModel(m);
  return messages * static_cast<double>(n) / requests.size();
}

// One round of every measurement, floors first.
// `alternatives`: labelled addresses of the no-op service on the other
// server API and transport.
void Round(const std::string& target, const std::string& noop_target,
           const std::vector<std::pair<std::string, std::string>>& alternatives,
           const Data& data, Report& report) {
  const int d = data.dimension;
  const int n = absl::GetFlag(FLAGS_examples);
  const int calls = absl::GetFlag(FLAGS_calls);
  const int clients = absl::GetFlag(FLAGS_clients);
  const size_t batch = absl::GetFlag(FLAGS_batch);
  const Floors floors = MeasureFloors(noop_target, d, calls, n / 4, clients);
  report.Add({"no-op gRPC: unary call (p50/p99)", "µs", floors.unary.p50,
              floors.unary.p99});
  report.Add({"no-op gRPC: stream round trip (p50/p99)", "µs",
              floors.round_trip.p50, floors.round_trip.p99});
  report.Add(
      {"no-op gRPC: pipelined stream, messages", "/s", floors.pipelined});
  report.Add({absl::StrCat("no-op gRPC: ", clients, " clients, round trips"),
              "/s", floors.concurrent});
  // The same on gRPC's other server API and over the other transport, with
  // ratios to the floors above.
  for (const auto& [label, alternative] : alternatives) {
    const Floors f = MeasureFloors(alternative, d, calls, n / 4, clients);
    const std::string name = absl::StrCat("no-op gRPC, ", label);
    report.Add({absl::StrCat(name, ": unary call (p50/p99)"), "µs", f.unary.p50,
                f.unary.p99, floors.unary.p50});
    report.Add({absl::StrCat(name, ": stream round trip (p50/p99)"), "µs",
                f.round_trip.p50, f.round_trip.p99, floors.round_trip.p50});
    report.Add({absl::StrCat(name, ": pipelined stream, messages"), "/s",
                f.pipelined, 0, floors.pipelined});
    report.Add({absl::StrCat(name, ": ", clients, " clients, round trips"),
                "/s", f.concurrent, 0, floors.concurrent});
  }

  auto channel = Connect(target, 0);
  auto stub = v1::HalfspaceService::NewStub(channel);
  Client client(channel);

  // Predictions from a trained model.
  const std::string predict_model = "load-predict";
  (void)client.DeleteModel(predict_model);
  (void)client.CreateModel(predict_model, *ParseAlgorithm("perceptron"), d);
  {
    grpc::ClientContext context;
    auto stream = stub->Train(&context);
    Pipelined(*stream,
              TrainRequests(data, std::min(n, 10000), 1000, predict_model));
  }
  v1::PredictRequest predict;
  predict.set_model(predict_model);
  AddDense(data.x[0], predict.add_instances());
  const Latency unary = TimeCalls(calls, [&](int i) {
    predict.mutable_instances(0)->mutable_dense()->Assign(
        data.x[i % data.x.size()].begin(), data.x[i % data.x.size()].end());
    grpc::ClientContext context;
    v1::PredictResponse out;
    stub->Predict(&context, predict, &out);
  });
  report.Add({"Predict, unary (p50/p99)", "µs", unary.p50, unary.p99,
              floors.unary.p50});
  v1::PredictStreamRequest streamed;
  streamed.set_model(predict_model);
  AddDense(data.x[0], streamed.add_instances());
  {
    grpc::ClientContext context;
    auto stream = stub->PredictStream(&context);
    v1::PredictStreamResponse out;
    const Latency round_trip = TimeCalls(calls, [&](int i) {
      streamed.mutable_instances(0)->mutable_dense()->Assign(
          data.x[i % data.x.size()].begin(), data.x[i % data.x.size()].end());
      stream->Write(streamed);
      stream->Read(&out);
    });
    stream->WritesDone();
    stream->Finish();
    report.Add({"PredictStream round trip (p50/p99)", "µs", round_trip.p50,
                round_trip.p99, floors.round_trip.p50});
  }
  const double concurrent = Concurrent(clients, calls, [&](int c) {
    auto own = v1::HalfspaceService::NewStub(Connect(target, c + 1));
    grpc::ClientContext context;
    RoundTrips<v1::PredictStreamResponse>(*own->PredictStream(&context),
                                          streamed, calls);
  });
  report.Add({absl::StrCat("PredictStream, ", clients, " clients, predictions"),
              "/s", concurrent, 0, floors.concurrent});
  (void)client.DeleteModel(predict_model);

  // Training: the pipelined stream, one example per message and batched.
  report.Add({"Train stream, 1 example per message", "/s",
              Train(*stub, client, data, n / 4, 1, "load-single"), 0,
              floors.pipelined});
  const double batched =
      Train(*stub, client, data, n * 5, batch, "load-batched");
  report.Add(
      {absl::StrCat("Train stream, ", batch, " examples per message, examples"),
       "/s", batched});
  // Fan-out: the floor is the single-model stream of this round, so the
  // ratio is what each model added costs (1/3 if learning were all).
  report.Add({absl::StrCat("Train stream, ", batch,
                           " examples per message, fan-out to 3, examples"),
              "/s",
              Train(*stub, client, data, n * 5, batch, "load-fan-out",
                    v1::TRAIN_RESULTS_PER_EXAMPLE, 3),
              0, batched});
  report.Add({absl::StrCat("Train stream, ", batch,
                           " examples per message, summaries, examples"),
              "/s",
              Train(*stub, client, data, n * 5, batch, "load-summary",
                    v1::TRAIN_RESULTS_SUMMARY)});
  const double streams = Concurrent(clients, 1, [&](int c) {
    auto own = v1::HalfspaceService::NewStub(Connect(target, c + 1));
    Client own_client(Connect(target, c + 1));
    Train(*own, own_client, data, n / 4 / clients, 1,
          absl::StrCat("load-stream-", c));
  });
  report.Add({absl::StrCat(clients, " Train streams, 1 example per message"),
              "/s", streams * (n / 4 / clients), 0, floors.pipelined});
}

// --- Sweeps: throughput against one parameter --------------------------------

// `n` examples of `nonzeros` features each, dense (of d = nonzeros) or
// sparse (ascending indices spread over d), in requests of `batch`.
std::vector<v1::TrainRequest> ShapedRequests(int64_t d, int nonzeros,
                                             bool sparse, size_t n,
                                             size_t batch,
                                             const std::string& model) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::vector<v1::TrainRequest> requests;
  for (size_t first = 0; first < n; first += batch) {
    v1::TrainRequest& r = requests.emplace_back();
    if (first == 0) r.set_model(model);
    for (size_t i = first; i < std::min(first + batch, n); ++i) {
      v1::Example* e = r.add_examples();
      double s = 0;
      for (int k = 0; k < nonzeros; ++k) {
        const double v = normal(rng);
        const int64_t j =
            sparse ? (d / nonzeros) * k + int64_t(rng() % (d / nonzeros)) : k;
        if (sparse) {
          e->mutable_features()->mutable_sparse()->add_indices(j);
          e->mutable_features()->mutable_sparse()->add_values(v);
        } else {
          e->mutable_features()->add_dense(v);
        }
        s += v * (j % 3 - 1);
      }
      e->set_label(s + 0.3 * normal(rng) >= 0 ? 1 : -1);
    }
  }
  return requests;
}

// Examples per second of `requests` (n examples) into a new perceptron of
// dimension d.
double TrainShaped(const std::string& target, int64_t d,
                   std::vector<v1::TrainRequest> requests, size_t n,
                   const std::string& model, int connection = 0) {
  auto channel = Connect(target, connection);
  Client client(channel);
  (void)client.DeleteModel(model);
  (void)client.CreateModel(model, *ParseAlgorithm("perceptron"), d);
  auto stub = v1::HalfspaceService::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Train(&context);
  const double messages = Pipelined(*stream, requests);
  (void)client.DeleteModel(model);
  return messages * static_cast<double>(n) / requests.size();
}

void SweepBatch(const std::string& target, Report& report) {
  for (size_t batch : {1, 4, 16, 64, 256, 1024, 4096}) {
    const size_t n = std::clamp<size_t>(batch * 2000, 20000, 400000);
    for (const auto results :
         {v1::TRAIN_RESULTS_PER_EXAMPLE, v1::TRAIN_RESULTS_SUMMARY}) {
      std::vector<v1::TrainRequest> requests =
          ShapedRequests(20, 20, false, n, batch, "sweep");
      for (v1::TrainRequest& r : requests) r.set_results(results);
      report.Add({absl::StrCat(results == v1::TRAIN_RESULTS_SUMMARY
                                   ? "summaries"
                                   : "per-example results",
                               ", batch=", batch),
                  "/s",
                  TrainShaped(target, 20, std::move(requests), n, "sweep")});
    }
  }
}

void SweepDimension(const std::string& target, Report& report) {
  for (int64_t d : {10, 100, 1000, 10000, 100000}) {
    // Messages of about 4 MB at most, and about 0.4 GB of features.
    const size_t batch = std::clamp<int64_t>((4 << 20) / (9 * d), 1, 1000);
    const size_t n = std::clamp<int64_t>(50000000 / d, 400, 200000);
    report.Add(
        {absl::StrCat("dense, d=", d), "/s",
         TrainShaped(target, d, ShapedRequests(d, d, false, n, batch, "sweep"),
                     n, "sweep")});
    if (d >= 100) {
      report.Add(
          {absl::StrCat("sparse (20 nonzeros), d=", d), "/s",
           TrainShaped(target, d,
                       ShapedRequests(d, 20, true, 200000, 1000, "sweep"),
                       200000, "sweep")});
    }
  }
}

void SweepStreams(const std::string& target, Report& report) {
  constexpr size_t kTotal = 400000, kBatch = 100;
  for (int streams : {1, 2, 4, 8, 16, 32, 64}) {
    const size_t each = kTotal / streams;
    std::vector<std::vector<v1::TrainRequest>> requests;
    for (int k = 0; k < streams; ++k) {
      requests.push_back(ShapedRequests(20, 20, false, each, kBatch,
                                        absl::StrCat("stream-", k)));
    }
    const double rate = Concurrent(streams, 1, [&](int k) {
      TrainShaped(target, 20, std::move(requests[k]), each,
                  absl::StrCat("stream-", k), k + 1);
    });
    report.Add(
        {absl::StrCat("batches of 100, streams=", streams), "/s", rate * each});
  }
}

// Predictions spread over `models` models of d = 100 (PredictStream, one
// vector per request, each to a random model), and the server's resident
// memory with them, per model and against their raw weight bytes.
void SweepModels(const std::string& target, pid_t server, Report& report) {
  auto channel = Connect(target, 0);
  Client client(channel);
  auto stub = v1::HalfspaceService::NewStub(channel);
  constexpr int kDimension = 100;
  // The connection and the server's first call are not the models': made
  // before the baseline.
  (void)client.ListModels();
  const double before = ResidentBytes(server);
  int created = 0;
  double resident_at_1000 = 0;
  for (int models : {1, 10, 100, 1000, 10000}) {
    for (; created < models; ++created) {
      (void)client.CreateModel(absl::StrCat("m", created),
                               *ParseAlgorithm("perceptron"), kDimension);
    }
    const double resident = ResidentBytes(server) - before;
    if (models == 1000) resident_at_1000 = resident;
    if (models == 10000) {
      // What one more model costs, without the server's first-call costs
      // spread over the models.
      report.Add({"resident bytes per model, models=1000 to 10000", "B",
                  (resident - resident_at_1000) / 9000});
    }
    std::mt19937 rng(1);
    v1::PredictStreamRequest request;
    for (int j = 0; j < kDimension; ++j) request.add_instances();
    request.mutable_instances()->Clear();
    v1::FeatureVector* x = request.add_instances();
    for (int j = 0; j < kDimension; ++j) x->add_dense(0.01 * j);
    grpc::ClientContext context;
    auto stream = stub->PredictStream(&context);
    v1::PredictStreamResponse out;
    constexpr int kCalls = 5000;
    const absl::Time start = absl::Now();
    for (int i = 0; i < kCalls; ++i) {
      request.set_model(absl::StrCat("m", rng() % models));
      stream->Write(request);
      stream->Read(&out);
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    stream->WritesDone();
    stream->Finish();
    report.Add({absl::StrCat("PredictStream round trips, models=", models),
                "/s", kCalls / seconds});
    report.Add({absl::StrCat("resident bytes per model, models=", models), "B",
                resident / models});
    report.Add({absl::StrCat("resident / raw weight bytes, models=", models),
                "x", resident / (models * (kDimension + 1) * 8.0)});
  }
}

// ExportModel of perceptrons from 12.5 MB to 100 MB of weights, read in
// pages of 1 MiB: the seconds per MB stay flat when paging is linear in the
// model's size (each version's file is encoded once, not once a page).
void SweepExport(const std::string& target, Report& report) {
  auto channel = Connect(target, 0);
  Client client(channel);
  auto stub = v1::HalfspaceService::NewStub(channel);
  double first_per_mb = 0;
  for (double mb : {12.5, 25.0, 50.0, 100.0}) {
    const int64_t dimension = static_cast<int64_t>(mb * 1e6 / 8);
    const std::string name = absl::StrCat("export-", dimension);
    (void)client.CreateModel(name, *ParseAlgorithm("perceptron"), dimension);
    v1::ExportModelRequest request;
    request.set_model(name);
    request.set_page_size(1 << 20);
    int64_t bytes = 0, pages = 0;
    const absl::Time start = absl::Now();
    do {
      grpc::ClientContext context;
      v1::ExportModelResponse page;
      if (!stub->ExportModel(&context, request, &page).ok()) break;
      bytes += page.model_file().size();
      ++pages;
      request.set_offset(page.next_offset());
    } while (request.offset() != 0);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    const double per_mb = seconds / (bytes / 1e6);
    if (first_per_mb == 0) first_per_mb = per_mb;
    report.Add({absl::StrCat("export in 1 MiB pages, s per MB, model of ",
                             bytes / 1000000, " MB (", pages, " pages)"),
                "s", per_mb});
    report.Add({absl::StrCat("  per MB against the smallest model, ",
                             bytes / 1000000, " MB"),
                "x", per_mb / first_per_mb});
    (void)client.DeleteModel(name);
  }
}

// --- Text from files through the CLI (--sweep=text) --------------------------

// Runs `argv` to its end, its output to `log`: the seconds it took, or 0
// if it failed.
double SecondsToRun(std::vector<std::string> argv, const std::string& log) {
  const std::string program = argv[0];
  const absl::Time start = absl::Now();
  const pid_t pid = Spawn(std::move(argv), log);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed (see %s)\n", program.c_str(), log.c_str());
    return 0;
  }
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Examples of 30 named features in two groups, as a text pipeline has
// them: 20 words of a 5000-word vocabulary in "words" (value 1) and 10 of
// 300 in "meta" with values; the label from five of the words.
std::vector<LabeledExample> NamedData(int n) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<LabeledExample> data(n);
  for (LabeledExample& e : data) {
    int s = 0;
    for (int k = 0; k < 20; ++k) {
      const int word = static_cast<int>(rng() % 5000);
      if (k < 5) s += word % 3 - 1;
      e.named.push_back({"words", absl::StrCat("w", word), 1.0});
    }
    for (int k = 0; k < 10; ++k) {
      e.named.push_back({"meta", absl::StrCat("m", rng() % 300),
                         std::round(uniform(rng) * 1000) / 1000});
    }
    e.label = s >= 0 ? 1 : -1;
  }
  return data;
}

// An example as a line of Vowpal Wabbit text:
// "label |words w1 w2 ... |meta m1:0.25 ...".
std::string VwLine(const LabeledExample& e) {
  std::string line = absl::StrCat(e.label);
  absl::string_view group;
  for (const NamedValue& f : e.named) {
    if (f.group != group) {
      group = f.group;
      absl::StrAppend(&line, " |", group);
    }
    absl::StrAppend(&line, " ", f.name);
    if (f.value != 1.0) absl::StrAppend(&line, ":", f.value);
  }
  return line;
}

// `data` as Vowpal Wabbit text, a line an example.
void WriteVw(const std::vector<LabeledExample>& data, const std::string& path) {
  std::ofstream out(path);
  for (const LabeledExample& e : data) out << VwLine(e) << "\n";
}

// `data` in requests of `batch` asking for summaries, its named features
// as NamedFeatures or, `hashed`, as the clients send them (HashedGroups).
std::vector<v1::TrainRequest> NamedRequests(
    const std::vector<LabeledExample>& data, size_t batch, bool hashed,
    const std::string& model) {
  std::vector<v1::TrainRequest> requests;
  for (size_t first = 0; first < data.size(); first += batch) {
    std::vector<LabeledExample> part(
        data.begin() + first,
        data.begin() + std::min(first + batch, data.size()));
    v1::TrainRequest& r = requests.emplace_back();
    if (first == 0) r.set_model(model);
    r.set_results(v1::TRAIN_RESULTS_SUMMARY);
    for (const LabeledExample& e : part) {
      v1::Example* example = r.add_examples();
      example->set_label(e.label);
      v1::HashedGroup* group = nullptr;
      for (const NamedValue& f : e.named) {
        if (!hashed) {
          v1::NamedFeature* named = example->mutable_features()->add_named();
          named->set_group(f.group);
          named->set_name(f.name);
          if (f.value != 1.0) named->set_value(f.value);
          continue;
        }
        if (group == nullptr || group->group() != f.group) {
          group = example->mutable_features()->add_hashed();
          group->set_group(f.group);
        }
        AddHashedFeature(FeatureHash(f.name, GroupSeed(f.group)), f.value,
                         *group);
      }
    }
  }
  return requests;
}

constexpr int kTextHashBits = 18;

// A new model `model`: SGD with log loss on 2^kTextHashBits buckets.
void CreateHashedModel(Client& client, const std::string& model) {
  v1::CreateModelRequest request;
  request.set_model(model);
  *request.mutable_algorithm() = *ParseAlgorithm("sgd { loss: LOSS_LOG }");
  request.set_hash_bits(kTextHashBits);
  (void)client.DeleteModel(model);
  (void)client.CreateModel(request);
}

// Examples per second of `requests` (n examples) into a new model made by
// `create`.
double TrainEncoded(Stub& stub, std::vector<v1::TrainRequest> requests,
                    size_t n, const std::function<void()>& create) {
  create();
  grpc::ClientContext context;
  auto stream = stub.Train(&context);
  return Pipelined(*stream, requests) * static_cast<double>(n) /
         requests.size();
}

// Examples per second of `halfspace train MODEL FILE --summary` into a new
// model made by `create`.
double TrainFromFile(const std::string& cli, const std::string& target,
                     const std::string& model, const std::string& file,
                     size_t n, size_t batch, const TempDir& dir,
                     const std::function<void()>& create) {
  create();
  const double seconds =
      SecondsToRun({cli, absl::StrCat("--server=", target), "train", model,
                    file, "--summary", absl::StrCat("--batch_size=", batch)},
                   dir.File("cli.log"));
  return seconds > 0 ? n / seconds : 0;
}

// The text pipeline: dense CSV and Vowpal Wabbit text through the CLI
// against the same examples in requests encoded beforehand (what the
// server takes from a client that spends nothing on them), the named
// features' two wire forms, the C++ client, and, given --vw, Vowpal Wabbit
// on the same text file.
void SweepText(const std::string& target, const std::string& cli,
               const TempDir& dir, Report& report) {
  const size_t n = absl::GetFlag(FLAGS_examples);
  const size_t batch = absl::GetFlag(FLAGS_batch);
  auto channel = Connect(target, 0);
  Client client(channel);
  auto stub = v1::HalfspaceService::NewStub(channel);

  // Dense, d = 20, written with six significant digits as CSV files have
  // them; the requests carry what the file says.
  Data dense = MakeData(n, 20);
  const std::string csv = dir.File("dense.csv");
  {
    std::ofstream out(csv);
    for (size_t i = 0; i < n; ++i) {
      out << dense.y[i];
      for (double& v : dense.x[i]) {
        const std::string text = absl::StrFormat("%.6g", v);
        v = std::strtod(text.c_str(), nullptr);
        out << ',' << text;
      }
      out << "\n";
    }
  }
  auto perceptron = [&] {
    (void)client.DeleteModel("text");
    (void)client.CreateModel("text", *ParseAlgorithm("perceptron"), 20);
  };
  const double encoded_dense = TrainEncoded(
      *stub, TrainRequests(dense, n, batch, "text", v1::TRAIN_RESULTS_SUMMARY),
      n, perceptron);
  report.Add(
      {"CSV, d=20: halfspace train (floor: encoded requests)", "/s",
       TrainFromFile(cli, target, "text", csv, n, batch, dir, perceptron), 0,
       encoded_dense});

  // 30 named features.
  const std::vector<LabeledExample> named = NamedData(n);
  const std::string vw = dir.File("named.vw");
  WriteVw(named, vw);
  auto hashed_model = [&] { CreateHashedModel(client, "text"); };
  const double encoded_names = TrainEncoded(
      *stub, NamedRequests(named, batch, false, "text"), n, hashed_model);
  const double encoded_hashes = TrainEncoded(
      *stub, NamedRequests(named, batch, true, "text"), n, hashed_model);
  report.Add({"30 named: encoded, hashed (floor: encoded, names)", "/s",
              encoded_hashes, 0, encoded_names});
  const double from_file =
      TrainFromFile(cli, target, "text", vw, n, batch, dir, hashed_model);
  report.Add({"VW text: halfspace train (floor: encoded, hashed)", "/s",
              from_file, 0, encoded_hashes});
  hashed_model();
  std::unique_ptr<TrainingStream> stream = client.Train("text");
  const absl::Time start = absl::Now();
  std::thread reader([&] {
    while (stream->Receive().ok()) {
    }
  });
  for (size_t first = 0; first < n; first += batch) {
    const size_t end = std::min(first + batch, n);
    if (!stream->Send(absl::MakeConstSpan(named).subspan(first, end - first))
             .ok()) {
      break;
    }
  }
  stream->CloseSend();
  reader.join();
  const double client_rate = n / absl::ToDoubleSeconds(absl::Now() - start);
  if (absl::Status s = stream->Finish(); !s.ok()) {
    std::fprintf(stderr, "C++ client: %s\n", s.ToString().c_str());
  }
  report.Add({"30 named: C++ client (floor: encoded, hashed)", "/s",
              client_rate, 0, encoded_hashes});
  const std::string vw_binary = absl::GetFlag(FLAGS_vw);
  if (!vw_binary.empty()) {
    const double seconds = SecondsToRun(
        {vw_binary, "-d", vw, "--quiet", "-b", absl::StrCat(kTextHashBits)},
        dir.File("vw.log"));
    const double vw_rate = seconds > 0 ? n / seconds : 0;
    report.Add({"VW text: halfspace train (floor: vw, one pass)", "/s",
                from_file, 0, vw_rate});
    report.Add({"30 named: C++ client (floor: vw, one pass)", "/s", client_rate,
                0, vw_rate});
  }
  (void)client.DeleteModel("text");
}

// --- The price of replication (--sweep=replication)
// ---------------------------

// Three nats-server processes on loopback, one JetStream cluster.
class NatsCluster {
 public:
  explicit NatsCluster(const TempDir& dir) {
    std::vector<int> client(3), route(3);
    std::vector<std::string> routes;
    for (int i = 0; i < 3; ++i) {
      client[i] = FreePort();
      route[i] = FreePort();
      routes.push_back(absl::StrCat("nats-route://127.0.0.1:", route[i]));
      urls_.push_back(absl::StrCat("nats://127.0.0.1:", client[i]));
    }
    for (int i = 0; i < 3; ++i) {
      const std::string config = dir.File(absl::StrCat("nats", i, ".conf"));
      std::ofstream(config)
          << "server_name: n" << i << "\nlisten: 127.0.0.1:" << client[i]
          << "\njetstream { store_dir: \"" << dir.File(absl::StrCat("nats", i))
          << "\" }\n"
          << "cluster { name: bench, listen: 127.0.0.1:" << route[i]
          << ", routes: [" << absl::StrJoin(routes, ", ") << "] }\n";
      nodes_.push_back(std::make_unique<Child>(
          std::vector<std::string>{"/usr/sbin/nats-server", "-c", config},
          dir.File(absl::StrCat("nats", i, ".log"))));
    }
  }
  std::string urls() const { return absl::StrJoin(urls_, ","); }

 private:
  std::vector<std::string> urls_;
  std::vector<std::unique_ptr<Child>> nodes_;
};

// A perceptron of `d` features named `model`, local or replicated on three
// NATS servers.
void CreatePerceptron(Stub& stub, const std::string& model, int d,
                      bool replicated) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    grpc::ClientContext context;
    v1::CreateModelRequest request;
    request.set_model(model);
    *request.mutable_algorithm() = *ParseAlgorithm("perceptron");
    request.set_dimension(d);
    if (replicated) request.mutable_replication()->set_replicas(3);
    v1::CreateModelResponse response;
    if (stub.CreateModel(&context, request, &response).ok()) return;
    absl::SleepFor(absl::Milliseconds(200));  // the cluster is starting
  }
  std::fprintf(stderr, "cannot create %s\n", model.c_str());
  std::exit(1);
}

// Examples per second into the existing `model`, `batch` per message.
double TrainInto(Stub& stub, const Data& data, size_t n, size_t batch,
                 const std::string& model) {
  const std::vector<v1::TrainRequest> requests =
      TrainRequests(data, n, batch, model);
  grpc::ClientContext context;
  auto stream = stub.Train(&context);
  return Pipelined(*stream, requests) * static_cast<double>(n) /
         requests.size();
}

// A replica's stream position (0 if it has none yet).
uint64_t PositionOf(Stub& stub, const std::string& model) {
  grpc::ClientContext context;
  v1::GetModelRequest request;
  request.set_model(model);
  v1::GetModelResponse response;
  if (!stub.GetModel(&context, request, &response).ok()) return 0;
  return response.model().replica().position();
}

// Replication's delays under a steady stream of training: `rate` examples
// a second, in messages of 1000, sent to `writer` for `length`. Per
// message, the time from its sending to `writer`'s answer (stored by the
// log's quorum and applied by `writer`'s replica), and from that answer
// until `reader`'s replica holds it: a Predict there with min_position,
// sent as the answer comes, returns once it does (at once if it already
// does). p50 and p99 in µs of each.
struct SteadyLag {
  Latency acknowledged, replica;
};
SteadyLag LagUnderSteadyLoad(Stub& writer, Stub& reader, const Data& data,
                             const std::string& model, double rate,
                             absl::Duration length) {
  constexpr size_t kBatch = 1000;
  const absl::Duration interval = absl::Seconds(kBatch / rate);
  const size_t messages = length / interval;
  const std::vector<v1::TrainRequest> requests =
      TrainRequests(data, messages * kBatch, kBatch, model);
  std::vector<absl::Time> sent(requests.size());
  std::vector<double> acknowledged, replica;
  // The answers the reader has not been asked about yet: position, when.
  absl::Mutex mu;
  std::deque<std::pair<uint64_t, absl::Time>> answers;  // guarded by mu
  std::thread asker([&] {
    v1::PredictRequest predict;
    predict.set_model(model);
    AddDense(data.x[0], predict.add_instances());
    while (true) {
      std::pair<uint64_t, absl::Time> answer;
      {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(
            +[](decltype(answers)* a) { return !a->empty(); }, &answers));
        answer = answers.front();
        answers.pop_front();
        if (answer.first == 0) return;  // the end
      }
      predict.set_min_position(answer.first);
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
      v1::PredictResponse out;
      if (reader.Predict(&context, predict, &out).ok()) {
        replica.push_back(absl::ToDoubleMicroseconds(
            std::max(absl::ZeroDuration(), absl::Now() - answer.second)));
      }
    }
  });
  grpc::ClientContext context;
  auto stream = writer.Train(&context);
  const absl::Time start = absl::Now();
  std::thread sender([&] {
    for (size_t i = 0; i < requests.size(); ++i) {
      absl::SleepFor(start + i * interval - absl::Now());
      sent[i] = absl::Now();
      if (!stream->Write(requests[i])) break;
    }
    stream->WritesDone();
  });
  v1::TrainResponse response;
  while (stream->Read(&response)) {
    const absl::Time now = absl::Now();
    acknowledged.push_back(
        absl::ToDoubleMicroseconds(now - sent[acknowledged.size()]));
    absl::MutexLock lock(&mu);
    answers.emplace_back(response.position(), now);
  }
  sender.join();
  stream->Finish();
  {
    absl::MutexLock lock(&mu);
    answers.emplace_back(0, absl::Now());
  }
  asker.join();
  if (replica.size() < requests.size()) {
    std::fprintf(stderr, "lag: %zu of %zu messages answered, %zu held\n",
                 acknowledged.size(), requests.size(), replica.size());
  }
  auto percentiles = [](std::vector<double> v) -> Latency {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[v.size() * 99 / 100]};
  };
  return {percentiles(acknowledged), percentiles(replica)};
}

// A replicated perceptron against a local one on the same server, each
// row's floor the local model's: training in batches and one example a
// message, unary predictions, and how long a new server takes to hold its
// replica (from the shared snapshot, then the stream after it).
void SweepReplication(const std::string& target, const std::string& nats,
                      const std::string& binary, const TempDir& dir,
                      const Data& data, int round, Report& report) {
  auto stub = v1::HalfspaceService::NewStub(Connect(target, 0));
  const std::string local = absl::StrCat("local", round);
  const std::string replicated = absl::StrCat("replicated", round);
  CreatePerceptron(*stub, local, data.dimension, false);
  CreatePerceptron(*stub, replicated, data.dimension, true);
  const size_t n = data.x.size(), batch = absl::GetFlag(FLAGS_batch);
  const double batched_local = TrainInto(*stub, data, n, batch, local);
  const double batched = TrainInto(*stub, data, n, batch, replicated);
  report.Add(
      {absl::StrCat("Train, ", batch, " a message: replicated (floor: local)"),
       "/s", batched, 0, batched_local});
  const size_t singles = std::min<size_t>(n, 3000);
  const double single_local = TrainInto(*stub, data, singles, 1, local);
  const double single = TrainInto(*stub, data, singles, 1, replicated);
  report.Add({"Train, 1 a message: replicated (floor: local)", "/s", single, 0,
              single_local});
  v1::PredictRequest predict;
  AddDense(data.x[0], predict.add_instances());
  auto time_predict = [&](const std::string& model) {
    predict.set_model(model);
    return TimeCalls(absl::GetFlag(FLAGS_calls), [&](int) {
      grpc::ClientContext context;
      v1::PredictResponse out;
      stub->Predict(&context, predict, &out);
    });
  };
  const Latency predict_local = time_predict(local);
  const Latency predict_replica = time_predict(replicated);
  report.Add({"Predict, unary: a replica (floor: local) (p50/p99)", "µs",
              predict_replica.p50, predict_replica.p99, predict_local.p50});
  // A new server joins: how long until its replica is where this one is.
  const uint64_t position = PositionOf(*stub, replicated);
  absl::SleepFor(absl::Seconds(2));  // a snapshot is shared each second
  const std::string joiner = absl::StrCat("127.0.0.1:", FreePort());
  const absl::Time start = absl::Now();
  Child second(
      {binary, absl::StrCat("--listen=", joiner),
       absl::StrCat("--data_dir=", dir.File(absl::StrCat("join", round))),
       absl::StrCat("--nats_url=", nats), "--log_level=warn",
       absl::StrCat("--replica_name=join", round)},
      dir.File("join.log"));
  auto joined = v1::HalfspaceService::NewStub(Connect(joiner, 0));
  while (PositionOf(*joined, replicated) < position &&
         absl::Now() - start < absl::Minutes(5)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  report.Add({absl::StrCat("a new replica holds it (", n + singles,
                           " examples, ", position, " records), ms"),
              "ms", absl::ToDoubleMilliseconds(absl::Now() - start)});
  // Its lag under a steady load, on a model of its own (the stream above
  // is trimmed every second, a cost of the join's short snapshot interval
  // that a steady load at the default interval pays every 100 s).
  const std::string steady = absl::StrCat("steady", round);
  CreatePerceptron(*stub, steady, data.dimension, true);
  while (PositionOf(*joined, steady) == 0) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const SteadyLag lag = LagUnderSteadyLoad(*stub, *joined, data, steady, 100000,
                                           absl::Seconds(5));
  report.Add({"100k examples/s, 1000 a message: answered (p50/p99)", "µs",
              lag.acknowledged.p50, lag.acknowledged.p99});
  report.Add({"  then held by another replica (p50/p99)", "µs", lag.replica.p50,
              lag.replica.p99});
}

// --- JSON over HTTP ----------------------------------------------------------

// HTTP/1.1 on one kept-alive loopback connection, a request at a time.
class HttpConnection {
 public:
  explicit HttpConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::perror("connect");
    }
    const int on = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  ~HttpConnection() { close(fd_); }

  // POSTs `body` to `path`; the answer's body (chunks joined), or "" with
  // the status printed when it is not 200.
  std::string Post(const std::string& path, const std::string& body) {
    const std::string head = absl::StrCat(
        "POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        "Content-Type: application/json\r\nContent-Length: ", body.size(),
        "\r\n\r\n");
    if (!WriteAll(head) || !WriteAll(body)) return "";
    const size_t end = ReadUntil("\r\n\r\n");
    if (end == std::string::npos) return "";
    const std::string headers = in_.substr(0, end);
    in_.erase(0, end + 4);
    std::string answer;
    if (absl::StrContains(headers, "chunked")) {
      for (;;) {
        const size_t line = ReadUntil("\r\n");
        if (line == std::string::npos) return "";
        const size_t size = std::strtoul(in_.c_str(), nullptr, 16);
        in_.erase(0, line + 2);
        if (!ReadAtLeast(size + 2)) return "";
        answer.append(in_, 0, size);
        in_.erase(0, size + 2);
        if (size == 0) break;
      }
    } else {
      const size_t at = headers.find("Content-Length: ");
      const size_t size = at == std::string::npos
                              ? 0
                              : std::strtoul(&headers[at + 16], nullptr, 10);
      if (!ReadAtLeast(size)) return "";
      answer = in_.substr(0, size);
      in_.erase(0, size);
    }
    if (headers.compare(0, 12, "HTTP/1.1 200") != 0) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), headers.c_str());
      return "";
    }
    return answer;
  }

 private:
  bool WriteAll(const std::string& data) {
    for (size_t sent = 0; sent < data.size();) {
      const ssize_t k =
          send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (k <= 0) return false;
      sent += k;
    }
    return true;
  }
  bool Fill() {
    char buffer[65536];
    const ssize_t n = read(fd_, buffer, sizeof buffer);
    if (n <= 0) return false;
    in_.append(buffer, n);
    return true;
  }
  size_t ReadUntil(const char* delimiter) {
    size_t at;
    while ((at = in_.find(delimiter)) == std::string::npos) {
      if (!Fill()) return std::string::npos;
    }
    return at;
  }
  bool ReadAtLeast(size_t n) {
    while (in_.size() < n) {
      if (!Fill()) return false;
    }
    return true;
  }

  int fd_ = -1;
  std::string in_;
};

std::string Json(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

// Predictions and training as JSON over HTTP/1.1 (the server's
// --http_listen on `http_port`) against the same calls over gRPC: one
// prediction's latency, taking turns; predictions a second from `clients`
// connections; and batched training, a line of `batch` examples per
// TrainRequest, in examples a second.
void SweepHttp(const std::string& target, int http_port, const Data& data,
               Report& report) {
  const int calls = absl::GetFlag(FLAGS_calls);
  const int clients = absl::GetFlag(FLAGS_clients);
  const size_t batch = absl::GetFlag(FLAGS_batch);
  const int n = absl::GetFlag(FLAGS_examples);
  auto channel = Connect(target, 0);
  auto stub = v1::HalfspaceService::NewStub(channel);
  Client client(channel);
  const std::string model = "load-http";
  (void)client.DeleteModel(model);
  (void)client.CreateModel(model, *ParseAlgorithm("perceptron"),
                           data.dimension);
  {
    grpc::ClientContext context;
    auto stream = stub->Train(&context);
    Pipelined(*stream, TrainRequests(data, std::min(n, 10000), 1000, model));
  }
  std::vector<v1::PredictRequest> requests(
      std::min<size_t>(data.x.size(), 1000));
  std::vector<std::string> bodies;
  for (size_t i = 0; i < requests.size(); ++i) {
    AddDense(data.x[i], requests[i].add_instances());
    bodies.push_back(Json(requests[i]));
    requests[i].set_model(model);
  }
  const std::string predict_path =
      absl::StrCat("/v1/models/", model, ":predict");
  HttpConnection http(http_port);
  const std::vector<Latency> turns = TimeInTurns(
      calls,
      {[&](int i) {
         grpc::ClientContext context;
         v1::PredictResponse out;
         stub->Predict(&context, requests[i % requests.size()], &out);
       },
       [&](int i) { http.Post(predict_path, bodies[i % bodies.size()]); }});
  report.Add(
      {"Predict over gRPC, unary (p50/p99)", "µs", turns[0].p50, turns[0].p99});
  report.Add({"Predict over HTTP, JSON (floor: gRPC) (p50/p99)", "µs",
              turns[1].p50, turns[1].p99, turns[0].p50});
  const double grpc_calls = Concurrent(clients, calls, [&](int c) {
    auto own = v1::HalfspaceService::NewStub(Connect(target, c + 1));
    for (int i = 0; i < calls; ++i) {
      grpc::ClientContext context;
      v1::PredictResponse out;
      own->Predict(&context, requests[(c + i) % requests.size()], &out);
    }
  });
  const double http_calls = Concurrent(clients, calls, [&](int c) {
    HttpConnection own(http_port);
    for (int i = 0; i < calls; ++i) {
      own.Post(predict_path, bodies[(c + i) % bodies.size()]);
    }
  });
  report.Add({absl::StrCat("Predict over gRPC, ", clients, " clients, calls"),
              "/s", grpc_calls});
  report.Add({absl::StrCat("Predict over HTTP, ", clients,
                           " connections, calls (floor: gRPC)"),
              "/s", http_calls, 0, grpc_calls});
  // Training: the same requests, as messages on a gRPC stream and as lines
  // of one HTTP request's body, each answered by a summary.
  const double grpc_examples =
      Train(*stub, client, data, n, batch, "load-http-train",
            v1::TRAIN_RESULTS_SUMMARY);
  // The lines in bodies of at most 4 MiB, within --http_max_body_bytes.
  std::vector<std::string> train_bodies(1);
  size_t lines = 0;
  for (const v1::TrainRequest& r :
       TrainRequests(data, n, batch, "", v1::TRAIN_RESULTS_SUMMARY)) {
    std::string line = absl::StrCat(Json(r), "\n");
    if (train_bodies.back().size() + line.size() > (size_t{4} << 20)) {
      train_bodies.emplace_back();
    }
    train_bodies.back() += line;
    ++lines;
  }
  (void)client.DeleteModel("load-http-train");
  (void)client.CreateModel("load-http-train", *ParseAlgorithm("perceptron"),
                           data.dimension);
  size_t answered = 0;
  const absl::Time start = absl::Now();
  for (const std::string& body : train_bodies) {
    const std::string answer =
        http.Post("/v1/models/load-http-train:train", body);
    answered += std::count(answer.begin(), answer.end(), '\n');
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (answered != lines) {
    std::fprintf(stderr, "HTTP train: %zu lines answered of %zu\n", answered,
                 lines);
  }
  report.Add({absl::StrCat("Train over gRPC, ", batch,
                           " examples per message, summaries, examples"),
              "/s", grpc_examples});
  report.Add({absl::StrCat("Train over HTTP, ", batch,
                           " examples per NDJSON line, summaries, examples "
                           "(floor: gRPC)"),
              "/s", n / seconds, 0, grpc_examples});
  (void)client.DeleteModel("load-http-train");
  (void)client.DeleteModel(model);
}

// --- The VW daemon protocol -------------------------------------------------

// Echoes what each connection to loopback `port` sends, a thread a
// connection: the floor of a line's round trip.
int ServeEcho(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 16) != 0) {
    std::perror("echo");
    return 1;
  }
  for (;;) {
    const int c = accept(fd, nullptr, nullptr);
    if (c < 0) continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    std::thread([c] {
      char buffer[65536];
      for (ssize_t n; (n = read(c, buffer, sizeof buffer)) > 0;) {
        for (ssize_t sent = 0, k; sent < n; sent += k) {
          if ((k = write(c, buffer + sent, n - sent)) <= 0) break;
        }
      }
      close(c);
    }).detach();
  }
}

// A line-at-a-time client of a loopback port: sends a line, reads the
// line that answers it.
class LineClient {
 public:
  explicit LineClient(int port) {
    // The server may still be starting: a few seconds of attempts.
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        fd_ = fd;
      } else {
        close(fd);
        absl::SleepFor(absl::Milliseconds(50));
      }
    }
    const int on = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  ~LineClient() {
    if (fd_ >= 0) close(fd_);
  }

  // Writes `line` and a newline; the answer's line.
  std::string RoundTrip(const std::string& line) {
    out_.assign(line);
    out_.push_back('\n');
    if (write(fd_, out_.data(), out_.size()) !=
        static_cast<ssize_t>(out_.size())) {
      return "";
    }
    size_t end;
    while ((end = in_.find('\n')) == std::string::npos) {
      char buffer[65536];
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      if (n <= 0) return "";
      in_.append(buffer, n);
    }
    std::string answer = in_.substr(0, end);
    in_.erase(0, end + 1);
    return answer;
  }

 private:
  int fd_ = -1;
  std::string out_, in_;
};

// One VW line (30 named features) at a time: through --vw_listen
// (`vw_port`) to predict and to learn, against a raw echo socket's round
// trip of the same bytes and against gRPC's Predict of the same features;
// with --vw, Vowpal Wabbit's own daemon on the same lines.
void SweepVw(const std::string& target, int vw_port, int echo_port,
             const TempDir& dir, Report& report) {
  const int calls = absl::GetFlag(FLAGS_calls);
  const std::vector<LabeledExample> named = NamedData(std::max(calls, 1000));
  std::vector<std::string> labelled, unlabelled;
  for (const LabeledExample& e : named) {
    labelled.push_back(VwLine(e));
    unlabelled.push_back(labelled.back().substr(labelled.back().find('|')));
  }
  auto channel = Connect(target, 0);
  Client client(channel);
  auto stub = v1::HalfspaceService::NewStub(channel);
  CreateHashedModel(client, "load-vw");
  {
    std::unique_ptr<TrainingStream> stream = client.Train("load-vw");
    (void)stream->Send(named);
    (void)stream->Receive();
    (void)stream->Finish();
  }
  auto round_trips = [&](int port, const std::vector<std::string>& lines) {
    LineClient line_client(port);
    return TimeCalls(
        calls, [&](int i) { line_client.RoundTrip(lines[i % lines.size()]); });
  };
  std::vector<v1::PredictRequest> requests;
  for (const std::string& line : unlabelled) {
    v1::PredictRequest& r = requests.emplace_back();
    r.set_model("load-vw");
    *r.add_instances() = *ParseInstance(line, ExampleFormat::kVw);
  }
  // With --vw, Vowpal Wabbit's daemon, trained on the same lines first (by
  // the labelled lines' round trips, as a producer trains it).
  std::unique_ptr<Child> vw;
  std::unique_ptr<LineClient> vw_daemon;
  Latency vw_learned;
  if (!absl::GetFlag(FLAGS_vw).empty()) {
    const int port = FreePort();
    vw = std::make_unique<Child>(
        std::vector<std::string>{
            absl::GetFlag(FLAGS_vw), "--daemon", "--foreground", "--quiet",
            "--num_children", "1", "--port", absl::StrCat(port), "-b",
            absl::StrCat(kTextHashBits), "--loss_function", "logistic"},
        dir.File("vw.log"));
    vw_learned = round_trips(port, labelled);
    vw_daemon = std::make_unique<LineClient>(port);
  }
  // The predictions take turns, call by call: their ratios hold on a noisy
  // machine.
  LineClient echo_client(echo_port), vw_client(vw_port);
  grpc::ClientContext stream_context;
  auto stream = stub->PredictStream(&stream_context);
  v1::PredictStreamRequest streamed;
  streamed.set_model("load-vw");
  v1::PredictStreamResponse streamed_out;
  std::vector<std::function<void(int)>> paths = {
      [&](int i) { echo_client.RoundTrip(unlabelled[i % unlabelled.size()]); },
      [&](int i) { vw_client.RoundTrip(unlabelled[i % unlabelled.size()]); },
      [&](int i) {
        grpc::ClientContext context;
        v1::PredictResponse out;
        stub->Predict(&context, requests[i % requests.size()], &out);
      },
      [&](int i) {
        *streamed.mutable_instances() =
            requests[i % requests.size()].instances();
        stream->Write(streamed);
        stream->Read(&streamed_out);
      }};
  if (vw_daemon != nullptr) {
    paths.push_back([&](int i) {
      vw_daemon->RoundTrip(unlabelled[i % unlabelled.size()]);
    });
  }
  const std::vector<Latency> turns = TimeInTurns(calls, paths);
  stream->WritesDone();
  stream->Finish();
  const Latency& echo = turns[0];
  report.Add({"raw echo socket, the line's bytes (p50/p99)", "µs", echo.p50,
              echo.p99});
  report.Add({"--vw_listen: predict a line (floor: echo) (p50/p99)", "µs",
              turns[1].p50, turns[1].p99, echo.p50});
  report.Add({"Predict, unary, the line's features (floor: echo) (p50/p99)",
              "µs", turns[2].p50, turns[2].p99, echo.p50});
  report.Add({"PredictStream round trip, the same (floor: echo) (p50/p99)",
              "µs", turns[3].p50, turns[3].p99, echo.p50});
  const Latency learned = round_trips(vw_port, labelled);
  report.Add({"--vw_listen: learn a line, durable (floor: echo) (p50/p99)",
              "µs", learned.p50, learned.p99, echo.p50});
  if (vw_daemon == nullptr) return;
  const Latency& vw_predicted = turns[4];
  report.Add({"vw --daemon: predict a line (floor: echo) (p50/p99)", "µs",
              vw_predicted.p50, vw_predicted.p99, echo.p50});
  report.Add({"--vw_listen: predict a line (floor: vw --daemon) (p50/p99)",
              "µs", turns[1].p50, turns[1].p99, vw_predicted.p50});
  report.Add({"vw --daemon: learn a line, not durable (floor: echo) (p50/p99)",
              "µs", vw_learned.p50, vw_learned.p99, echo.p50});
}

int Run() {
  const int d = absl::GetFlag(FLAGS_dimension);
  const int n = absl::GetFlag(FLAGS_examples);
  const int calls = absl::GetFlag(FLAGS_calls);
  const int clients = absl::GetFlag(FLAGS_clients);
  const size_t batch = absl::GetFlag(FLAGS_batch);
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  const std::string self = std::filesystem::canonical("/proc/self/exe");
  TempDir dir;

  // The no-op service, on TCP and a Unix socket, on both server APIs.
  const bool unix_socket = absl::GetFlag(FLAGS_transport) == "unix";
  if (!unix_socket && absl::GetFlag(FLAGS_transport) != "tcp") {
    std::fprintf(stderr, "--transport is tcp or unix\n");
    return 2;
  }
  const std::string noop_tcp = absl::StrCat("127.0.0.1:", FreePort());
  const std::string noop_unix = absl::StrCat("unix:", dir.File("noop.sock"));
  const std::string async_tcp = absl::StrCat("127.0.0.1:", FreePort());
  const std::string async_unix = absl::StrCat("unix:", dir.File("async.sock"));
  Child noop({self, absl::StrCat("--serve_noop=", noop_tcp, ",", noop_unix),
              absl::StrCat("--serve_noop_async=", async_tcp, ",", async_unix)},
             dir.File("noop.log"));
  const std::string noop_target = unix_socket ? noop_unix : noop_tcp;
  const std::vector<std::pair<std::string, std::string>> alternatives = {
      {"completion queues", unix_socket ? async_unix : async_tcp},
      {unix_socket ? "over TCP" : "over a Unix socket",
       unix_socket ? noop_tcp : noop_unix}};
  std::string target = absl::GetFlag(FLAGS_target);
  std::unique_ptr<NatsCluster> nats;  // for --sweep=replication
  std::unique_ptr<Child> server;
  // For --sweep=vw: the server's VW listener, and an echo socket's.
  const int vw_port = FreePort();
  const int echo_port = FreePort();
  const int http_port = FreePort();  // for --sweep=http
  std::unique_ptr<Child> echo;
  if (absl::GetFlag(FLAGS_sweep) == "vw") {
    echo = std::make_unique<Child>(
        std::vector<std::string>{self,
                                 absl::StrCat("--serve_echo=", echo_port)},
        dir.File("echo.log"));
  }
  const std::string binary =
      (std::filesystem::path(self).parent_path().parent_path() /
       "halfspace-server")
          .string();
  if (target.empty()) {
    target = unix_socket ? absl::StrCat("unix:", dir.File("halfspace.sock"))
                         : absl::StrCat("127.0.0.1:", FreePort());
    std::vector<std::string> argv = {
        binary,
        absl::StrCat("--listen=", target),
        absl::StrCat("--data_dir=", dir.File("data")),
        absl::StrCat("--durability=", absl::GetFlag(FLAGS_durability)),
        "--log_level=warn",
        "--max_models=100000"};
    if (absl::GetFlag(FLAGS_sweep) == "vw") {
      argv.push_back(absl::StrCat("--vw_listen=127.0.0.1:", vw_port));
      argv.push_back("--vw_model=load-vw");
    }
    if (absl::GetFlag(FLAGS_sweep) == "http") {
      argv.push_back(absl::StrCat("--http_listen=127.0.0.1:", http_port));
    }
    if (absl::GetFlag(FLAGS_sweep) == "replication") {
      nats = std::make_unique<NatsCluster>(dir);
      argv.push_back(absl::StrCat("--nats_url=", nats->urls()));
      argv.push_back("--replica_snapshot_records=100");
    }
    server = std::make_unique<Child>(argv, dir.File("server.log"));
  }
  const std::string server_setup =
      absl::GetFlag(FLAGS_target).empty()
          ? absl::StrCat("server started here, --durability=",
                         absl::GetFlag(FLAGS_durability), ", over ",
                         unix_socket ? "a Unix socket" : "TCP loopback")
          : absl::StrCat("server at ", target);
  const std::string setup =
      !absl::GetFlag(FLAGS_sweep).empty()
          ? absl::StrFormat("sweep of %s, medians of %d rounds, %s",
                            absl::GetFlag(FLAGS_sweep), rounds, server_setup)
          : absl::StrFormat(
                "d = %d, %d examples per training row, %zu per batched "
                "message, "
                "%d calls per latency row, %d concurrent clients, medians of "
                "%d "
                "rounds, %s",
                d, n, batch, calls, clients, rounds, server_setup);
  std::printf("%s\n\n", setup.c_str());

  // The paths' data (none for a sweep, which makes its own).
  const bool own_data = absl::GetFlag(FLAGS_sweep).empty() ||
                        absl::GetFlag(FLAGS_sweep) == "replication" ||
                        absl::GetFlag(FLAGS_sweep) == "http";
  const Data data = MakeData(own_data ? std::max(n, 1) : 1, d);
  Report report;
  const std::string sweep = absl::GetFlag(FLAGS_sweep);
  for (int round = 1; round <= (sweep == "models" ? 1 : rounds); ++round) {
    std::fprintf(stderr, "round %d of %d\n", round, rounds);
    if (sweep.empty()) {
      Round(target, noop_target, alternatives, data, report);
    } else if (sweep == "batch") {
      SweepBatch(target, report);
    } else if (sweep == "dimension") {
      SweepDimension(target, report);
    } else if (sweep == "streams") {
      SweepStreams(target, report);
    } else if (sweep == "models") {
      SweepModels(target, server != nullptr ? server->pid() : 0, report);
    } else if (sweep == "export") {
      SweepExport(target, report);
    } else if (sweep == "text") {
      SweepText(
          target,
          (std::filesystem::path(binary).parent_path() / "halfspace").string(),
          dir, report);
    } else if (sweep == "vw" && server != nullptr) {
      SweepVw(target, vw_port, echo_port, dir, report);
    } else if (sweep == "http" && server != nullptr) {
      SweepHttp(target, http_port, data, report);
    } else if (sweep == "replication" && nats != nullptr) {
      SweepReplication(target, nats->urls(), binary, dir, data, round, report);
    } else {
      std::fprintf(stderr,
                   "--sweep is batch, dimension, streams, models, export, "
                   "text, vw, http or replication (these three start their "
                   "own server)\n");
      return 2;
    }
  }
  report.Print();
  if (!absl::GetFlag(FLAGS_json).empty()) {
    report.WriteJson(absl::GetFlag(FLAGS_json), setup);
  }
  return 0;
}

}  // namespace
}  // namespace halfspace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_serve_echo) != 0) {
    return halfspace::ServeEcho(absl::GetFlag(FLAGS_serve_echo));
  }
  if (!absl::GetFlag(FLAGS_serve_noop).empty()) {
    return halfspace::ServeNoop(absl::GetFlag(FLAGS_serve_noop),
                                absl::GetFlag(FLAGS_serve_noop_async));
  }
  return halfspace::Run();
}
