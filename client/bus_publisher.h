// Publishes examples straight to a replicated model's subject on NATS
// JetStream, as a producer does (see the README, Replicated models): every
// replica of the model learns them in the stream's order. Each message is
// whole lines of text in one format (example_text.h), with the header
// Halfspace-Format, and a message id (Nats-Msg-Id) of its own, so that a
// publish retried after a lost acknowledgement is stored once.
//
// Thread safety: a BusPublisher is used by one thread at a time.

#ifndef HALFSPACE_CLIENT_BUS_PUBLISHER_H_
#define HALFSPACE_CLIENT_BUS_PUBLISHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/example_text.h"

namespace halfspace {

struct BusOptions {
  // nats://host:port, one or more (any member of the cluster will do).
  std::vector<std::string> urls;
  // A NATS credentials file (user JWT and NKey seed); empty for none.
  std::string credentials_file;
  // TLS: the CA that signs the servers' certificates, and this client's
  // certificate and key; empty for none.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

class BusPublisher {
 public:
  // Connects to the cluster; UNAVAILABLE when no server answers by
  // `deadline`, INVALID_ARGUMENT for options the client refuses.
  static absl::StatusOr<std::unique_ptr<BusPublisher>> Connect(
      const BusOptions& options, absl::Time deadline);
  ~BusPublisher();
  BusPublisher(const BusPublisher&) = delete;
  BusPublisher& operator=(const BusPublisher&) = delete;

  // Publishes `data` to `subject` with the header Halfspace-Format:
  // `format` and the message id `id`, retrying while the stream elects a
  // leader, until `deadline`. Returns the message's stream sequence (the
  // first one's, if the id was published before). NOT_FOUND when no stream
  // takes the subject; UNAVAILABLE when it was not stored by `deadline`
  // (it may have been: publish it again with the same id).
  absl::StatusOr<uint64_t> Publish(const std::string& subject,
                                   const std::string& format,
                                   absl::string_view data,
                                   const std::string& id, absl::Time deadline);

 private:
  struct Handles;
  explicit BusPublisher(std::unique_ptr<Handles> handles);
  std::unique_ptr<Handles> handles_;
};

// What `PublishLines` sends, and where.
struct PublishPlan {
  std::string path;  // a file of example lines; "-" for standard input
  ExampleFormat format = ExampleFormat::kAuto;
  bool multiclass = false;  // the model's labels are class names
  std::string subject;      // the model's
  int lines_per_message = 1000;
  absl::Duration timeout = absl::Seconds(30);  // for each message
};

// What was published: lines (examples) in messages, and the stream
// sequences of the first and last message (a Predict's min_position).
struct PublishTotals {
  uint64_t lines = 0;
  uint64_t messages = 0;
  uint64_t first_position = 0;
  uint64_t last_position = 0;
};

// Reads `plan.path` and publishes its example lines in order, in messages
// of up to `plan.lines_per_message` lines (and about 512 KiB), skipping
// blank and '#' lines and a CSV header. Each line is checked as a replica
// reads it first: INVALID_ARGUMENT naming the file and line of the first
// that does not parse, once the lines before it are published. `totals`
// counts what was published, an error or not.
absl::Status PublishLines(BusPublisher& bus, const PublishPlan& plan,
                          PublishTotals& totals);

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_BUS_PUBLISHER_H_
