// A pipelined stream whose responses come later (a replicated model's,
// once its replica applied the request) holds every request it took until
// then: it takes no more once they add up to its byte bound, and goes on
// reading as responses are delivered, each written in request order.

#include "server/pipelined_stream.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/base/mutex.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.grpc.pb.h"

namespace halfspace {
namespace {

class LaterStream;

// What the streams took and have not answered yet, for the test to answer.
struct Held {
  Mutex mu;
  std::vector<uint64_t> ids ABSL_GUARDED_BY(mu);
  int handled ABSL_GUARDED_BY(mu) = 0;
  LaterStream* stream ABSL_GUARDED_BY(mu) = nullptr;
};

// Answers each request later, with its position in the stream.
class LaterStream final : public PipelinedStream {
 public:
  explicit LaterStream(Held& held)
      : PipelinedStream(nullptr, nullptr), held_(held) {
    {
      MutexLock lock(held_.mu);
      held_.stream = this;
    }
    Start(absl::OkStatus());
  }

  // Answers `id`. The stream may be freed by the last answer.
  void Answer(uint64_t id) {
    v1::TrainResponse response;
    response.set_position(id + 1);
    grpc::ByteBuffer bytes;
    bool own = false;
    grpc::GenericSerialize<grpc::ProtoBufferWriter, v1::TrainResponse>(
        response, &bytes, &own);
    Deliver(id, std::move(bytes));
  }

 private:
  absl::Status Handle(grpc::ByteBuffer&, grpc::ByteBuffer&,
                      Reply& reply) override {
    reply.later = true;
    MutexLock lock(held_.mu);
    held_.ids.push_back(reply.id);
    ++held_.handled;
    return absl::OkStatus();
  }
  grpc::Status End(const absl::Status& status) override {
    return status.ok() ? grpc::Status::OK
                       : grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                      std::string(status.message()));
  }

  Held& held_;
};

class LaterService final : public grpc::CallbackGenericService {
 public:
  explicit LaterService(Held& held) : held_(held) {}
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext*) override {
    return new LaterStream(held_);
  }

 private:
  Held& held_;
};

TEST(PipelinedStreamTest, RequestsAwaitingALaterResponseAreBoundedByBytes) {
  Held held;
  LaterService service(held);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::HalfspaceService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));

  // Requests of ~0.5 MB: the bound of 4 MiB takes nine at most.
  constexpr int kRequests = 40;
  v1::TrainRequest request;
  request.add_examples()->mutable_features()->mutable_dense()->Resize(62500,
                                                                      1.0);
  const size_t request_bytes = request.ByteSizeLong();
  const size_t bound = PipelinedStream::kMaxPendingBytes / request_bytes + 1;
  ASSERT_LT(bound, static_cast<size_t>(kRequests) / 2);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(60));
  auto stream = stub->Train(&context);
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int r = 0; r < kRequests && stream->Write(request); ++r) {
      written.fetch_add(1);
    }
    stream->WritesDone();
  });
  // Nothing answered: the stream takes requests until the bound, then
  // holds the client back.
  auto handled_after_a_while = [&] {
    absl::SleepFor(absl::Seconds(1));
    MutexLock lock(held.mu);
    return static_cast<size_t>(held.handled);
  };
  const size_t first = handled_after_a_while();
  EXPECT_GE(first, bound - 1);
  EXPECT_LE(first, bound) << written.load() << " requests written";

  // Answered, it reads on; every response comes, in order.
  std::thread reader([&] {
    v1::TrainResponse response;
    for (int r = 0; r < kRequests; ++r) {
      ASSERT_TRUE(stream->Read(&response)) << "response " << r;
      EXPECT_EQ(response.position(), static_cast<uint64_t>(r + 1));
    }
  });
  int answered = 0;
  auto answer_held = [&] {
    std::vector<uint64_t> ids;
    LaterStream* later = nullptr;
    {
      MutexLock lock(held.mu);
      ids.swap(held.ids);
      later = held.stream;
    }
    // The stream stays until its last request is answered.
    for (uint64_t id : ids) later->Answer(id);
    answered += static_cast<int>(ids.size());
    return !ids.empty();
  };
  answer_held();
  // Its answers written, the stream holds as many again as it did first.
  const size_t second = handled_after_a_while() - first;
  EXPECT_GE(second, bound - 1);
  EXPECT_LE(second, bound);
  while (answered < kRequests) {
    if (!answer_held()) absl::SleepFor(absl::Milliseconds(1));
  }
  reader.join();
  writer.join();
  EXPECT_TRUE(stream->Finish().ok());
  MutexLock lock(held.mu);
  EXPECT_EQ(held.handled, kRequests);
  server->Shutdown();
}

}  // namespace
}  // namespace halfspace
