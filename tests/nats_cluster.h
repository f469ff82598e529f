// A NATS JetStream cluster of real nats-server processes on loopback, for
// tests of replicated models: each node can be killed and started again on
// its own store.

#ifndef HALFSPACE_TESTS_NATS_CLUSTER_H_
#define HALFSPACE_TESTS_NATS_CLUSTER_H_

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"

namespace halfspace {

class NatsCluster {
 public:
  // Starts `nodes` nats-server processes as one JetStream cluster, their
  // stores and logs under `dir`.
  NatsCluster(const TempDir& dir, int nodes) : dir_(dir) {
    for (int i = 0; i < nodes; ++i) {
      Node node;
      node.client_port = FreePort();
      node.route_port = FreePort();
      nodes_.push_back(node);
    }
    std::vector<std::string> routes;
    for (const Node& node : nodes_) {
      routes.push_back(
          absl::StrCat("nats-route://127.0.0.1:", node.route_port));
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const std::string config = dir_.File(absl::StrCat("nats", i, ".conf"));
      std::ofstream(config)
          << "server_name: n" << i << "\n"
          << "listen: 127.0.0.1:" << nodes_[i].client_port << "\n"
          << "jetstream { store_dir: \""
          << dir_.File(absl::StrCat("nats", i, "-store")) << "\" }\n"
          << "cluster { name: hs, listen: 127.0.0.1:" << nodes_[i].route_port
          << ", routes: [" << absl::StrJoin(routes, ", ") << "] }\n";
      nodes_[i].config = config;
      Start(i);
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

  std::string Log(size_t i) const {
    return Tail(dir_.File(absl::StrCat("nats", i, ".log")));
  }

 private:
  struct Node {
    int client_port = 0;
    int route_port = 0;
    std::string config;
    pid_t pid = -1;
  };
  const TempDir& dir_;
  std::vector<Node> nodes_;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_NATS_CLUSTER_H_
