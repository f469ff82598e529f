// The server binary run as a child process, for tests that start, signal
// and kill real servers.

#ifndef HALFSPACE_TESTS_SERVER_PROCESS_H_
#define HALFSPACE_TESTS_SERVER_PROCESS_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"

namespace halfspace {

// Whether loopback port `port` can be bound now; with 0, binds whatever
// port the kernel gives and sets `port` to it.
inline bool BindsLoopback(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool bound =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  port = ntohs(addr.sin_port);
  return bound;
}

// A port that was free a moment ago, drawn below the kernel's ephemeral
// range: a port from that range is what the kernel hands the next socket
// bound to port 0 (another test's server on 127.0.0.1:0, a connection), so
// a server started on it a moment later could find it taken, and its
// callers reach the other server.
inline int FreePort() {
  int ephemeral = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral;
  constexpr int kLowest = 10000;
  if (ephemeral > kLowest + 1000) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> draw(kLowest, ephemeral - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      int port = draw(random);
      if (BindsLoopback(port)) return port;
    }
  }
  int port = 0;
  BindsLoopback(port);
  return port;
}

// Starts `argv` (argv[0] looked up in PATH unless it holds a slash) as a
// child, its output appended to `output`; returns its pid, or -1. With
// posix_spawn, not fork: a child forked from this multithreaded process
// could block forever in malloc on a lock another thread held (the
// sanitizers' allocators give no fork handlers), never reaching exec.
inline pid_t Spawn(std::vector<std::string> argv, const std::string& output) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    std::fprintf(stderr, "cannot start %s: %s\n", args[0],
                 std::strerror(error));
    return -1;
  }
  return pid;
}

// The last `bytes` of the file at `path` (a server's log), to show with a
// failure.
inline std::string Tail(const std::string& path, size_t bytes = 4000) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  const std::string all = contents.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

// A channel that reconnects within 100 ms of a server coming back (gRPC's
// default backoff would wait seconds after the first refused connection).
// gRPC takes the "min reconnect backoff" as the time a connection attempt
// is given to complete its handshake: it stays long (5 s), so that a server
// slow to answer on a loaded machine is still reached, rather than every
// attempt timing out after 100 ms.
inline grpc::ChannelArguments FastReconnectingArguments() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  return args;
}
inline std::shared_ptr<grpc::Channel> FastReconnectingChannel(
    const std::string& target) {
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   FastReconnectingArguments());
}

// The server binary running as a child, its output going to `log`.
class ServerProcess {
 public:
  // Starts the server on `data_dir` and a free loopback port (or `port`),
  // with --snapshot_interval=0 and `flags`; its output is appended to
  // `log`.
  ServerProcess(const std::string& data_dir, const std::string& log,
                std::vector<std::string> flags = {}, int port = 0)
      : port_(port != 0 ? port : FreePort()),
        target_(absl::StrCat("127.0.0.1:", port_)) {
    Start(data_dir, log, std::move(flags));
  }
  // The same on `address` (for a Unix socket, "unix:PATH").
  ServerProcess(const std::string& data_dir, const std::string& log,
                std::vector<std::string> flags, std::string address)
      : port_(0), target_(std::move(address)) {
    Start(data_dir, log, std::move(flags));
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  const std::string& target() const { return target_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // What the process is doing, for a failure's message: its state and the
  // kernel function it waits in, from /proc ("R", "S futex_wait_queue", "Z"
  // for one that exited unreaped).
  std::string State() const {
    if (pid_ <= 0) return "not running";
    std::ifstream stat(absl::StrCat("/proc/", pid_, "/stat"));
    std::string line;
    if (!std::getline(stat, line)) return "gone";
    const size_t name_end = line.rfind(')');  // the name may hold spaces
    const std::string state =
        name_end == std::string::npos ? line : line.substr(name_end + 2, 1);
    std::ifstream wchan(absl::StrCat("/proc/", pid_, "/wchan"));
    std::string waits;
    std::getline(wchan, waits);
    if (waits.empty() || waits == "0") {
      return absl::StrCat("pid ", pid_, " state ", state);
    }
    return absl::StrCat("pid ", pid_, " state ", state, " in ", waits);
  }

  // Whether the server serves within 30 s: it takes connections, and its
  // health service says SERVING (it listens while its models load, and
  // turns calls away until then). The probe's channel keeps a subchannel
  // of its own: sharing gRPC's global pool, it once stayed unconnected for
  // 20 s while a client's channel to the same address, busy reconnecting
  // through restarts, was served.
  bool WaitUntilReady() const {
    grpc::ChannelArguments args = FastReconnectingArguments();
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
        target(), grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(absl::ToChronoTime(deadline))) return false;
    std::unique_ptr<grpc::health::v1::Health::Stub> health =
        grpc::health::v1::Health::NewStub(channel);
    while (absl::Now() < deadline) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
      grpc::health::v1::HealthCheckRequest request;
      grpc::health::v1::HealthCheckResponse response;
      if (health->Check(&context, request, &response).ok() &&
          response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // Sends `signal` and returns the exit status (-1 if it did not exit).
  int Stop(int signal) {
    if (pid_ <= 0) return -1;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Waits for the process to exit by itself.
  int Wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  void Start(const std::string& data_dir, const std::string& log,
             std::vector<std::string> flags) {
    flags.insert(flags.begin(), {absl::StrCat("--listen=", target_),
                                 absl::StrCat("--data_dir=", data_dir),
                                 "--snapshot_interval=0"});
    flags.insert(flags.begin(), HALFSPACE_SERVER_BINARY);
    pid_ = Spawn(std::move(flags), log);
  }

  int port_;  // 0 on a Unix socket
  std::string target_;
  pid_t pid_ = -1;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_SERVER_PROCESS_H_
