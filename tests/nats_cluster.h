// A NATS JetStream cluster of real nats-server processes on loopback, for
// tests of replicated models: each node can be killed and started again on
// its own store.

#ifndef HALFSPACE_TESTS_NATS_CLUSTER_H_
#define HALFSPACE_TESTS_NATS_CLUSTER_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"

namespace halfspace {

class NatsCluster {
 public:
  // Starts `nodes` nats-server processes as one JetStream cluster, their
  // stores and logs under `dir`.
  //
  // Each port is one FreePort found free, which another process may take
  // before the node binds it: a node that does not come up listening is
  // started again on other ports (its peers reach it by its own routes).
  NatsCluster(const TempDir& dir, int nodes) : dir_(dir) {
    nodes_.resize(nodes);
    for (Node& node : nodes_) node.NewPorts();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (int attempt = 0; attempt < 5; ++attempt) {
        WriteConfig(i);
        Start(i);
        if (Listening(i)) break;
        Kill(i);
        nodes_[i].NewPorts();
      }
    }
  }
  ~NatsCluster() {
    for (size_t i = 0; i < nodes_.size(); ++i) Kill(i);
  }

  // nats://127.0.0.1:PORT of every node, comma-separated (--nats_url).
  std::string urls() const {
    std::vector<std::string> urls;
    for (const Node& node : nodes_) urls.push_back(url(&node - &nodes_[0]));
    return absl::StrJoin(urls, ",");
  }
  std::string url(size_t i) const {
    return absl::StrCat("nats://127.0.0.1:", nodes_[i].client_port);
  }

  // kill -9 of node i.
  void Kill(size_t i) {
    if (nodes_[i].pid <= 0) return;
    kill(nodes_[i].pid, SIGKILL);
    waitpid(nodes_[i].pid, nullptr, 0);
    nodes_[i].pid = -1;
  }

  // Starts node i (again) on its store.
  void Start(size_t i) {
    nodes_[i].pid = Spawn({"nats-server", "-c", nodes_[i].config},
                          dir_.File(absl::StrCat("nats", i, ".log")));
  }

  // Whether node i runs and takes connections, waiting up to 10 s.
  bool Listening(size_t i) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (waitpid(nodes_[i].pid, nullptr, WNOHANG) == nodes_[i].pid) {
        nodes_[i].pid = -1;  // it exited: a port was taken
        return false;
      }
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(nodes_[i].client_port);
      const bool connected =
          connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      close(fd);
      // Still running once it listens: the port is its own.
      if (connected) {
        absl::SleepFor(absl::Milliseconds(100));
        return waitpid(nodes_[i].pid, nullptr, WNOHANG) == 0;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  std::string Log(size_t i) const {
    return Tail(dir_.File(absl::StrCat("nats", i, ".log")));
  }

 private:
  struct Node {
    int client_port = 0;
    int route_port = 0;
    std::string config;
    pid_t pid = -1;
    void NewPorts() {
      client_port = FreePort();
      route_port = FreePort();
    }
  };

  // Writes node i's configuration: its ports, its store, and the routes to
  // every node as their ports are now.
  void WriteConfig(size_t i) {
    std::vector<std::string> routes;
    for (const Node& node : nodes_) {
      routes.push_back(
          absl::StrCat("nats-route://127.0.0.1:", node.route_port));
    }
    const std::string config = dir_.File(absl::StrCat("nats", i, ".conf"));
    std::ofstream(config) << "server_name: n" << i << "\n"
                          << "listen: 127.0.0.1:" << nodes_[i].client_port
                          << "\n"
                          << "jetstream { store_dir: \""
                          << dir_.File(absl::StrCat("nats", i, "-store"))
                          << "\" }\n"
                          << "cluster { name: hs, listen: 127.0.0.1:"
                          << nodes_[i].route_port << ", routes: ["
                          << absl::StrJoin(routes, ", ") << "] }\n";
    nodes_[i].config = config;
  }

  const TempDir& dir_;
  std::vector<Node> nodes_;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_NATS_CLUSTER_H_
