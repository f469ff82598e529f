// The server binary run as a child process, for tests that start, signal
// and kill real servers.

#ifndef HALFSPACE_TESTS_SERVER_PROCESS_H_
#define HALFSPACE_TESTS_SERVER_PROCESS_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"

namespace halfspace {

// A port that was free a moment ago.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A channel that reconnects within 100 ms of a server coming back (gRPC's
// default backoff would wait seconds after the first refused connection).
inline std::shared_ptr<grpc::Channel> FastReconnectingChannel(
    const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
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

  bool WaitUntilReady() const {
    return FastReconnectingChannel(target())->WaitForConnected(
        absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  }

  // Sends `signal` and returns the exit status (-1 if it did not exit).
  int Stop(int signal) {
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Waits for the process to exit by itself.
  int Wait() {
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
    pid_ = fork();
    if (pid_ == 0) {
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      std::vector<char*> argv = {const_cast<char*>(HALFSPACE_SERVER_BINARY)};
      for (std::string& flag : flags) argv.push_back(flag.data());
      argv.push_back(nullptr);
      execv(HALFSPACE_SERVER_BINARY, argv.data());
      _exit(127);
    }
  }

  int port_;  // 0 on a Unix socket
  std::string target_;
  pid_t pid_ = -1;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_SERVER_PROCESS_H_
