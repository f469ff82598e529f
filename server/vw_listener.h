// A listener that speaks Vowpal Wabbit's daemon protocol (vw_protocol.h)
// over TCP or a Unix-domain socket, so that a producer written for
// `vw --daemon` predicts with and trains halfspace models unchanged.
//
// Which model: `model` names it for every line (a name or an alias, looked
// up for each batch of lines, so an alias that moves takes the next lines
// along); without it, each line's tag names its model ("1 'ctr |f a b").
//
// Learning: a labelled line learns exactly as the Train stream would. The
// consecutive labelled lines of one model that one read brings make one
// TrainRequest (up to --max_examples_per_request), which is logged, learned
// and answered once durable; a replicated model's is published to its
// stream and answered once this server's replica applied it, and the
// connection takes no further line until then. Unlabelled lines are
// predicted at once, on the listener's thread. Answers keep the lines'
// order: each waits for the ones before it, so no answer shows a change
// that is not yet durable.
//
// Bad input: a line that does not parse, names no model, or is refused (a
// limit, a rate) is answered "error: CODE: message" and the connection goes
// on; a blank line is skipped. A line longer than `max_line_bytes` is
// answered so and skipped, its bytes never held.
//
// Limits: each connection is a stream for the gate (--max_streams,
// --max_streams_per_client) and is drained with the others; its client
// address's anonymous rate limits apply (the connection is a call, each
// batch of predictions another, each learned line an example). A client
// that does not read its answers is not read from while kMaxAnswerBytes of
// them wait.
//
// No tokens: whoever can connect predicts with and trains every model. So
// it listens only on a loopback address or a Unix socket unless `remote`
// says otherwise, and it says so in the log.
//
// Threads: one epoll loop serves every connection, with no hand-off on the
// way from a line to its prediction; the log's durability callbacks and a
// replica's hand their completions back to the loop.

#ifndef HALFSPACE_SERVER_VW_LISTENER_H_
#define HALFSPACE_SERVER_VW_LISTENER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/call_gate.h"
#include "server/service_parts.h"
#include "server/vw_protocol.h"

namespace halfspace {

struct VwListenerOptions {
  // host:port (port 0 picks a free one; see VwListener::port), or
  // unix:PATH; empty: no listener.
  std::string address;
  // The model of every line; empty: each line's tag names its model.
  std::string model;
  VwAnswer answer = VwAnswer::kScore;
  // Whether it may listen on an address other than loopback.
  bool remote = false;
  size_t max_line_bytes = size_t{1} << 20;
};

class VwListener final : public Drainable {
 public:
  // Answers waiting to be written, past which a connection is not read.
  static constexpr size_t kMaxAnswerBytes = size_t{4} << 20;

  // Listens on options.address and serves on a thread of its own:
  // INVALID_ARGUMENT for an address that does not parse, or is not loopback
  // without `remote`; UNAVAILABLE when it cannot be bound.
  // REQUIRES: `parts` outlives the listener.
  static absl::StatusOr<std::unique_ptr<VwListener>> Start(
      const VwListenerOptions& options, const ServiceParts* parts);

  VwListener(const VwListener&) = delete;
  VwListener& operator=(const VwListener&) = delete;
  ~VwListener();  // Stop

  // The TCP port it listens on; 0 for a Unix socket.
  int port() const { return port_; }

  // Closes every connection at once (answers still waiting are dropped:
  // Drain first to write them) and stops the loop. Idempotent.
  void Stop();

  // Drainable, for the gate: stops accepting and reading; each connection
  // closes once its answers are written.
  bool Drain() override;
  void FinishDrained() override {}

 private:
  class Loop;
  VwListener(const ServiceParts* parts, std::unique_ptr<Loop> loop, int port);

  const ServiceParts* const parts_;
  std::unique_ptr<Loop> loop_;
  const int port_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_VW_LISTENER_H_
