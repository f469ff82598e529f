#include "server/vw_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/example_text.h"
#include "core/base/mutex.h"
#include "core/base/quoted.h"
#include "server/peer.h"
#include "server/predict.h"
#include "server/replication.h"
#include "server/status.h"
#include "server/train_batch.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

// How much one read takes from a connection before its lines are handled.
constexpr size_t kReadBytes = size_t{256} << 10;

// The epoll tags of the listening socket and of the wake-up; connections'
// ids start after them.
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;

// A learned batch's answer that another thread completes: once its
// examples are durable, or once a replica applied them (`applied`).
struct Completion {
  uint64_t connection = 0;
  uint64_t ticket = 0;
  std::optional<absl::StatusOr<AppliedBatch>> applied;
};

// Where callbacks from other threads leave completions for the loop, and
// the eventfd that wakes it. Shared with the callbacks, which may outlive
// the listener.
class Wakeups {
 public:
  Wakeups() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Wakeups() {
    if (fd_ >= 0) close(fd_);
  }
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;

  int fd() const { return fd_; }

  void Post(Completion completion) {
    {
      MutexLock lock(mu_);
      done_.push_back(std::move(completion));
    }
    Wake();
  }

  void Wake() const {
    const uint64_t one = 1;
    // Only a counter at its maximum refuses, and that wakes the loop too.
    [[maybe_unused]] const ssize_t n = write(fd_, &one, sizeof one);
  }

  std::vector<Completion> Take() {
    uint64_t count;
    [[maybe_unused]] const ssize_t n = read(fd_, &count, sizeof count);
    std::vector<Completion> taken;
    MutexLock lock(mu_);
    taken.swap(done_);
    return taken;
  }

 private:
  const int fd_;
  Mutex mu_;
  std::vector<Completion> done_ ABSL_GUARDED_BY(mu_);
};

// The client address a peer's socket address makes, as gRPC names them
// ("ipv4:127.0.0.1", "ipv6:[::1]", "unix:/run/halfspace.sock").
std::string ClientAddress(const sockaddr_storage& peer,
                          const std::string& unix_path) {
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    return absl::StrCat("ipv4:", text);
  }
  if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return absl::StrCat("ipv6:[", text, "]");
  }
  return absl::StrCat("unix:", unix_path);
}

bool IsLoopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& a =
        reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// A socket listening on `address` (host:port or unix:PATH), and its port.
absl::StatusOr<std::pair<int, int>> Listen(const std::string& address,
                                           bool remote) {
  if (absl::StartsWith(address, "unix:")) {
    const std::string path = address.substr(5);
    sockaddr_un un = {};
    if (path.empty() || path.size() >= sizeof un.sun_path) {
      return absl::InvalidArgumentError(
          absl::StrCat("--vw_listen=", address, ": a Unix socket path of 1 to ",
                       sizeof un.sun_path - 1, " bytes"));
    }
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.data(), path.size());
    const int fd =
        socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::UnavailableError(std::strerror(errno));
    const auto* at = reinterpret_cast<const sockaddr*>(&un);
    int bound = bind(fd, at, sizeof un);
    if (bound != 0 && errno == EADDRINUSE) {
      // A socket file nobody accepts on is left over from a server that
      // stopped: taken over. One that answers is another server's.
      const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      struct stat st;
      const bool stale = probe >= 0 && stat(path.c_str(), &st) == 0 &&
                         S_ISSOCK(st.st_mode) &&
                         connect(probe, at, sizeof un) != 0;
      if (probe >= 0) close(probe);
      if (stale && unlink(path.c_str()) == 0) bound = bind(fd, at, sizeof un);
      if (!stale) errno = EADDRINUSE;
    }
    if (bound != 0 || listen(fd, SOMAXCONN) != 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("cannot listen on --vw_listen=", address, ": ", why));
    }
    return std::make_pair(fd, 0);
  }
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--vw_listen=", address,
                     " is not host:port (e.g. 127.0.0.1:26542) nor unix:PATH"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                service.c_str(), &hints, &found);
      e != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--vw_listen=", address,
                                                   ": host ", Quoted(host),
                                                   ": ", gai_strerror(e)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, freeaddrinfo);
  if (!remote && !IsLoopback(found->ai_addr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--vw_listen=", address,
        " is not a loopback address, and the VW listener takes no tokens: "
        "listen on 127.0.0.1 or unix:PATH, or pass --vw_listen_remote to "
        "let other machines predict and train"));
  }
  const int fd =
      socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_storage bound = {};
  socklen_t length = sizeof bound;
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 ||
      listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on --vw_listen=", address, ": ", why));
  }
  const int bound_port =
      bound.ss_family == AF_INET
          ? ntohs(reinterpret_cast<const sockaddr_in&>(bound).sin_port)
          : ntohs(reinterpret_cast<const sockaddr_in6&>(bound).sin6_port);
  return std::make_pair(fd, bound_port);
}

}  // namespace

// Everything the loop's thread owns.
class VwListener::Loop {
 public:
  Loop(const VwListenerOptions& options, const ServiceParts* parts,
       int listen_fd)
      : options_(options),
        parts_(parts),
        listen_fd_(listen_fd),
        epoll_(epoll_create1(EPOLL_CLOEXEC)),
        wakeups_(std::make_shared<Wakeups>()),
        read_buffer_(new char[kReadBytes]) {
    Watch(listen_fd_, EPOLLIN, kListenTag);
    Watch(wakeups_->fd(), EPOLLIN, kWakeTag);
  }

  ~Loop() {
    CloseAll();
    if (listen_fd_ >= 0) CloseListener();
    close(epoll_);
  }

  bool ok() const { return epoll_ >= 0 && wakeups_->fd() >= 0; }

  void Run() {
    epoll_event events[64];
    while (!stopping_.load(std::memory_order_acquire)) {
      if (draining_.load(std::memory_order_acquire) && listen_fd_ >= 0) {
        StartDraining();
      }
      const int n = epoll_wait(epoll_, events, 64, -1);
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          Accept();
        } else if (tag == kWakeTag) {
          Complete(wakeups_->Take());
        } else if (auto it = connections_.find(tag); it != connections_.end()) {
          Serve(*it->second, events[i].events);
        }
      }
    }
    CloseAll();
  }

  void Drain() {
    draining_.store(true, std::memory_order_release);
    wakeups_->Wake();
  }

  void Stop() {
    stopping_.store(true, std::memory_order_release);
    wakeups_->Wake();
  }

 private:
  // One answer, or a batch's, in line order.
  struct Answer {
    std::string text;
    uint64_t ticket = 0;  // while it waits for a completion; 0 when ready
    // A replicated batch's, made once it is applied.
    std::shared_ptr<Model> model;
    std::vector<std::string> tags;
  };

  struct Connection {
    uint64_t id = 0;
    int fd = -1;
    std::string client;
    Caller caller;
    std::string in;          // bytes read and not yet handled
    bool skipping = false;   // the rest of an overlong line
    bool read_over = false;  // the client half-closed, or draining
    bool held = false;       // a replicated batch is on its way
    std::deque<Answer> answers;
    size_t written = 0;  // of answers.front().text
    size_t answer_bytes = 0;
    uint32_t interest = 0;
  };

  // The consecutive lines of one kind on one model, learned or predicted
  // together.
  struct Lines {
    bool labeled = false;
    std::string name;  // the model's name as the lines give it
    std::shared_ptr<Model> model;
    absl::Status refused;  // why its lines are not served, if so
    std::vector<absl::string_view> tags;
    v1::TrainRequest request;  // labelled lines
    google::protobuf::RepeatedPtrField<v1::FeatureVector> instances;

    int size() const { return static_cast<int>(tags.size()); }
  };

  void Watch(int fd, uint32_t events, uint64_t tag) {
    epoll_event event = {};
    event.events = events;
    event.data.u64 = tag;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }

  void Rewatch(int fd, uint32_t events, uint64_t tag) {
    epoll_event event = {};
    event.events = events;
    event.data.u64 = tag;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event);
  }

  void CloseListener() {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    close(listen_fd_);
    listen_fd_ = -1;
    if (absl::StartsWith(options_.address, "unix:")) {
      unlink(options_.address.substr(5).c_str());
    }
  }

  // Draining: no new connections, no more reading; each connection closes
  // once its answers are out.
  void StartDraining() {
    CloseListener();
    std::vector<uint64_t> ids;
    for (const auto& [id, c] : connections_) ids.push_back(id);
    for (uint64_t id : ids) {
      Connection& c = *connections_[id];
      c.read_over = true;
      Settle(c);
    }
  }

  void Accept() {
    for (;;) {
      sockaddr_storage peer = {};
      socklen_t length = sizeof peer;
      const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                             &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM) {
          // Out of descriptors or memory: the pending connection would wake
          // the loop again at once. Accept again once one closes.
          spdlog::warn(
              "the VW listener cannot accept: {}; waiting for a "
              "connection to close",
              std::strerror(errno));
          Rewatch(listen_fd_, 0, kListenTag);
          accept_paused_ = true;
        }
        return;  // else none left
      }
      const std::string client =
          ClientAddress(peer, absl::StartsWith(options_.address, "unix:")
                                  ? options_.address.substr(5)
                                  : "");
      if (peer.ss_family != AF_UNIX) {
        const int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      }
      if (absl::Status s = parts_->gate->TryEnter(&client); !s.ok()) {
        Refuse(fd, s);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = fd;
      c->client = client;
      c->caller = {absl::StrCat("address ", client), "anonymous",
                   absl::StrCat("client ", client), parts_->anonymous};
      if (absl::Status s = Charge(*parts_, c->caller, 1, 0); !s.ok()) {
        parts_->gate->Leave(&client);
        Refuse(fd, s);
        continue;
      }
      spdlog::debug("vw connection from {}", client);
      Connection& added = *c;
      connections_.emplace(added.id, std::move(c));
      Watch(fd, EPOLLIN, added.id);
      added.interest = EPOLLIN;
    }
  }

  // Answers a connection the gate or the rate limits turn away, and closes
  // it.
  void Refuse(int fd, const absl::Status& status) {
    std::string text;
    AppendVwError(status, text);
    [[maybe_unused]] const ssize_t n =
        send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
  }

  void Serve(Connection& c, uint32_t events) {
    if ((events & EPOLLIN) && !c.read_over) Read(c);
    if (events & (EPOLLHUP | EPOLLERR)) {
      // Hung up both ways, or failed: nothing can be answered any more,
      // but what the client sent is learned (a Unix socket's peer may
      // write its lines and close at once, and both come together).
      while (!c.read_over && !c.held && Read(c)) {
      }
      return Close(c);
    }
    Settle(c);
  }

  // Reads once, and handles the lines it completes; whether it read
  // anything.
  bool Read(Connection& c) {
    const ssize_t n = read(c.fd, read_buffer_.get(), kReadBytes);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) {
      // The client is done sending (or gone): a last line without its
      // newline is still a line.
      c.read_over = true;
      if (!c.skipping && !c.in.empty()) c.in.push_back('\n');
      Handle(c);
      return false;
    }
    absl::string_view data(read_buffer_.get(), n);
    if (c.skipping) {
      const size_t end = data.find('\n');
      if (end == absl::string_view::npos) return true;
      c.skipping = false;
      data.remove_prefix(end + 1);
    }
    c.in.append(data.data(), data.size());
    Handle(c);
    return true;
  }

  // Handles the complete lines read, unless a replicated batch holds
  // them; then refuses a line that grew past the limit.
  void Handle(Connection& c) {
    if (c.held) return;
    Lines lines;
    size_t pos = 0;
    for (;;) {
      const size_t end = c.in.find('\n', pos);
      if (end == std::string::npos) break;
      const absl::string_view line =
          TrimLine(absl::string_view(c.in).substr(pos, end - pos));
      if (!line.empty() && !Take(c, lines, line)) break;  // held
      pos = end + 1;
    }
    if (!c.held) Flush(c, lines);
    c.in.erase(0, pos);
    if (!c.held && c.in.size() > options_.max_line_bytes) {
      c.in.clear();
      c.skipping = true;
      AnswerError(c, LineTooLong());
    }
  }

  absl::Status LineTooLong() const {
    return LimitExceeded(
        absl::StrCat("a line of more than ", options_.max_line_bytes, " bytes"),
        options_.max_line_bytes, "vw_max_line_bytes");
  }

  // Adds `line` to `lines`, flushing them first when the line cannot
  // join it; false, the line untaken, when that flush holds the
  // connection.
  bool Take(Connection& c, Lines& lines, absl::string_view line) {
    absl::StatusOr<VwLineHead> head =
        line.size() > options_.max_line_bytes
            ? absl::StatusOr<VwLineHead>(LineTooLong())
            : ReadVwLineHead(line);
    if (!head.ok()) {
      Flush(c, lines);
      if (c.held) return false;
      AnswerError(c, head.status());
      return true;
    }
    const absl::string_view name =
        options_.model.empty() ? head->tag : absl::string_view(options_.model);
    const int most =
        parts_->registry->budget().limits().max_examples_per_request;
    if (name != lines.name || head->labeled != lines.labeled ||
        lines.size() >= most || lines.name.empty()) {
      Flush(c, lines);
      if (c.held) return false;
      Begin(lines, name, head->labeled);
    }
    if (!lines.refused.ok()) {
      AnswerError(c, lines.refused);
      return true;
    }
    absl::Status parsed;
    if (head->labeled) {
      v1::Example* example = lines.request.add_examples();
      parsed = ParseExampleLine(line, ExampleFormat::kVw,
                                lines.model->multiclass(), *example);
      if (!parsed.ok()) lines.request.mutable_examples()->RemoveLast();
    } else {
      // The parser reads labelled lines: this one is given a label.
      labeled_.assign("1 ");
      labeled_.append(line.data(), line.size());
      parsed = ParseExampleLine(labeled_, ExampleFormat::kVw, false, example_);
      if (parsed.ok()) lines.instances.Add()->Swap(example_.mutable_features());
      example_.Clear();
    }
    if (!parsed.ok()) {
      Flush(c, lines);           // the lines before it are answered first
      if (c.held) return false;  // this line is handled again then
      AnswerError(c, absl::InvalidArgumentError(
                         absl::StrCat("vw line: ", parsed.message())));
      return true;
    }
    lines.tags.push_back(head->tag);
    return true;
  }

  // Starts a batch of `labeled` lines on the model `name` names.
  void Begin(Lines& lines, absl::string_view name, bool labeled) {
    lines.name = std::string(name);
    lines.labeled = labeled;
    lines.model = nullptr;
    lines.refused = absl::OkStatus();
    if (name.empty()) {
      lines.refused = absl::InvalidArgumentError(
          "the line names no model: give it the model's name as its tag "
          "('model |f ...), or start the server with --vw_model");
      return;
    }
    absl::StatusOr<std::shared_ptr<Model>> found =
        parts_->registry->Lookup(name);
    if (!found.ok()) {
      lines.refused = NotHeldYet(parts_->replicas, name, found.status());
      return;
    }
    lines.model = *std::move(found);
    if (options_.answer == VwAnswer::kProbability &&
        !lines.model->multiclass() && !lines.model->probabilistic()) {
      lines.refused = absl::FailedPreconditionError(absl::StrCat(
          "model ", Quoted(lines.model->name()),
          " gives no probability; answer with --vw_answer=score or label"));
    }
  }

  // Learns or predicts the lines, queues their answers, and empties
  // the batch (it stays on its model).
  void Flush(Connection& c, Lines& lines) {
    if (lines.size() == 0) return;
    const absl::Time start = absl::Now();
    absl::Status s;
    if (lines.labeled) {
      s = Learn(c, lines);
      lines.request.Clear();
    } else {
      s = Predict(c, lines);
      lines.instances.Clear();
    }
    if (!s.ok()) {
      for (int i = 0; i < lines.size(); ++i) AnswerError(c, s);
    }
    parts_->metrics->RecordCall(lines.labeled ? "VwTrain" : "VwPredict",
                                ToGrpcStatus(s).error_code(),
                                absl::Now() - start);
    lines.tags.clear();
  }

  absl::Status Learn(Connection& c, Lines& lines) {
    const int n = lines.request.examples_size();
    if (absl::Status s = Charge(*parts_, c.caller, 0, n); !s.ok()) return s;
    Model& model = *lines.model;
    lines.request.SerializeToString(&request_bytes_);
    TrainBatch batch;
    batch.request = request_bytes_;
    batch.now_micros = absl::ToUnixMicros(absl::Now());
    if (IsReplicated(model.spec())) {
      if (parts_->replicas == nullptr) return NotFollowed(model);
      Answer& answer = Queue(c, "");
      answer.ticket = next_ticket_++;
      answer.model = lines.model;
      for (absl::string_view tag : lines.tags) answer.tags.emplace_back(tag);
      c.held = true;
      parts_->replicas->Train(
          model, batch, ReplicaDeadline(absl::InfiniteFuture()),
          [wakeups = wakeups_, id = c.id,
           ticket = answer.ticket](absl::StatusOr<AppliedBatch> applied) {
            wakeups->Post({id, ticket, std::move(applied)});
          });
      return absl::OkStatus();
    }
    if (train_model_ != lines.model) {  // the scratch caches class names
      train_.class_names.clear();
      train_model_ = lines.model;
    }
    if (absl::Status s = PrepareRequest(model, lines.request, train_);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<uint64_t> lsn = LearnPrepared(
        parts_->registry->trainer(), model, lines.request, batch, train_);
    if (!lsn.ok()) return lsn.status();
    std::string text;
    AppendOutcomes(model, train_.outcomes, train_.class_names, lines.tags,
                   text);
    Answer& answer = Queue(c, std::move(text));
    if (parts_->log != nullptr && *lsn != 0) {
      answer.ticket = next_ticket_++;
      parts_->log->WhenDurable(
          *lsn, [wakeups = wakeups_, id = c.id, ticket = answer.ticket] {
            wakeups->Post({id, ticket, std::nullopt});
          });
    }
    return absl::OkStatus();
  }

  absl::Status Predict(Connection& c, Lines& lines) {
    if (absl::Status s = Charge(*parts_, c.caller, 1, 0); !s.ok()) return s;
    PredictOptions options =
        PredictionEncoding(false, false, parts_->max_message_bytes);
    options.top_k = 0;  // the predicted class is the answer
    predictions_.Clear();
    if (predict_model_ != lines.model) {  // the scratch caches class names
      predict_.class_names.clear();
      predict_model_ = lines.model;
    }
    if (absl::Status s = PredictInto(
            *lines.model, parts_->registry->budget().limits(), lines.instances,
            options, predict_, nullptr, predictions_);
        !s.ok()) {
      return s;
    }
    std::string text;
    for (int i = 0; i < predictions_.size(); ++i) {
      const v1::Prediction& p = predictions_[i];
      if (lines.model->multiclass()) {
        AppendVwClassAnswer(p.predicted_class(), lines.tags[i], text);
      } else {
        AppendVwAnswer(Shown(p.score(), p.label(), p.probability()),
                       lines.tags[i], text);
      }
    }
    Queue(c, std::move(text));
    return absl::OkStatus();
  }

  // The number an answer shows of a binary model's prediction.
  double Shown(double score, int label, double probability) const {
    switch (options_.answer) {
      case VwAnswer::kLabel:
        return label;
      case VwAnswer::kProbability:
        return probability;
      default:
        return score;
    }
  }

  // The answer lines of learned examples, one per tag.
  void AppendOutcomes(const Model& model,
                      const std::vector<ExampleOutcome>& outcomes,
                      const std::vector<std::string>& class_names,
                      absl::Span<const absl::string_view> tags,
                      std::string& text) const {
    for (size_t i = 0; i < tags.size(); ++i) {
      const ExampleOutcome& o = outcomes[i];
      if (!o.error.ok()) {
        AppendVwError(o.error, text);
      } else if (model.multiclass()) {
        AppendVwClassAnswer(class_names[o.predicted_class], tags[i], text);
      } else {
        AppendVwAnswer(Shown(o.update.score, o.update.predicted_label,
                             o.update.probability.value_or(0)),
                       tags[i], text);
      }
    }
  }

  Answer& Queue(Connection& c, std::string text) {
    c.answer_bytes += text.size();
    c.answers.emplace_back();
    c.answers.back().text = std::move(text);
    return c.answers.back();
  }

  void AnswerError(Connection& c, const absl::Status& status) {
    parts_->metrics->RecordRefusal(status);
    std::string text;
    AppendVwError(status, text);
    Queue(c, std::move(text));
  }

  // Completions from the log and the replicas: answers made ready, and a
  // connection a replicated batch held goes on.
  void Complete(std::vector<Completion> completions) {
    for (Completion& done : completions) {
      auto it = connections_.find(done.connection);
      if (it == connections_.end()) continue;  // closed meanwhile
      Connection& c = *it->second;
      for (Answer& answer : c.answers) {
        if (answer.ticket != done.ticket) continue;
        answer.ticket = 0;
        if (done.applied.has_value()) Applied(c, answer, *done.applied);
        break;
      }
      if (done.applied.has_value()) {
        c.held = false;
        Handle(c);
      }
      Settle(c);
    }
  }

  // A replicated batch's answer, once its replica applied it.
  void Applied(Connection& c, Answer& answer,
               const absl::StatusOr<AppliedBatch>& applied) {
    std::string text;
    if (!applied.ok()) {
      for (size_t i = 0; i < answer.tags.size(); ++i) {
        AppendVwError(applied.status(), text);
      }
    } else {
      std::vector<ExampleOutcome> outcomes = applied->outcomes;
      outcomes.resize(answer.tags.size());
      const std::vector<absl::string_view> tags(answer.tags.begin(),
                                                answer.tags.end());
      AppendOutcomes(*answer.model, outcomes, applied->class_names, tags, text);
    }
    c.answer_bytes += text.size();
    answer.text = std::move(text);
    answer.model = nullptr;
  }

  // Writes what is ready, sets what the connection waits for, and closes
  // it once it is done.
  void Settle(Connection& c) {
    while (!c.answers.empty() && c.answers.front().ticket == 0) {
      const std::string& text = c.answers.front().text;
      if (c.written < text.size()) {
        const ssize_t n = send(c.fd, text.data() + c.written,
                               text.size() - c.written, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (n < 0) return Close(c);  // the client is gone
        c.written += n;
        if (c.written < text.size()) continue;
      }
      c.answer_bytes -= text.size();
      c.written = 0;
      c.answers.pop_front();
    }
    if (c.read_over && c.answers.empty() && !c.held) return Close(c);
    uint32_t interest = 0;
    if (!c.read_over && !c.held && c.answer_bytes < kMaxAnswerBytes) {
      interest |= EPOLLIN;
    }
    if (!c.answers.empty() && c.answers.front().ticket == 0) {
      interest |= EPOLLOUT;
    }
    if (interest != c.interest) {
      Rewatch(c.fd, interest, c.id);
      c.interest = interest;
    }
  }

  void Close(Connection& c) {
    spdlog::debug("vw connection from {} closed", c.client);
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    parts_->gate->Leave(&c.client);
    const uint64_t id = c.id;
    connections_.erase(id);
    if (accept_paused_ && listen_fd_ >= 0) {
      Rewatch(listen_fd_, EPOLLIN, kListenTag);
      accept_paused_ = false;
    }
  }

  void CloseAll() {
    while (!connections_.empty()) Close(*connections_.begin()->second);
  }

  const VwListenerOptions options_;
  const ServiceParts* const parts_;
  int listen_fd_;
  bool accept_paused_ = false;  // out of descriptors: until one closes
  const int epoll_;
  const std::shared_ptr<Wakeups> wakeups_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  absl::flat_hash_map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = kWakeTag + 1;
  uint64_t next_ticket_ = 1;
  // Reused from line to line and batch to batch.
  std::unique_ptr<char[]> read_buffer_;
  std::string labeled_;
  v1::Example example_;
  std::string request_bytes_;  // a learned batch's, as the log keeps it
  TrainScratch train_;
  std::shared_ptr<Model> train_model_;  // whose classes train_ holds
  PredictScratch predict_;
  std::shared_ptr<Model> predict_model_;
  google::protobuf::RepeatedPtrField<v1::Prediction> predictions_;
};

absl::StatusOr<std::unique_ptr<VwListener>> VwListener::Start(
    const VwListenerOptions& options, const ServiceParts* parts) {
  absl::StatusOr<std::pair<int, int>> listening =
      Listen(options.address, options.remote);
  if (!listening.ok()) return listening.status();
  auto loop = std::make_unique<Loop>(options, parts, listening->first);
  if (!loop->ok()) {
    return absl::UnavailableError(
        absl::StrCat("the VW listener's epoll: ", std::strerror(errno)));
  }
  std::unique_ptr<VwListener> listener(
      new VwListener(parts, std::move(loop), listening->second));
  if (!parts->gate->Add(listener.get())) listener->loop_->Drain();
  listener->thread_ = std::thread([l = listener->loop_.get()] { l->Run(); });
  spdlog::warn(
      "the VW listener on {} takes no tokens: whoever can connect to it "
      "predicts with and trains every model{}",
      options.address,
      options.model.empty()
          ? ""
          : absl::StrCat(" (lines go to model ", Quoted(options.model), ")"));
  return listener;
}

VwListener::VwListener(const ServiceParts* parts, std::unique_ptr<Loop> loop,
                       int port)
    : parts_(parts), loop_(std::move(loop)), port_(port) {}

VwListener::~VwListener() { Stop(); }

void VwListener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  parts_->gate->Remove(this);
  loop_->Stop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

bool VwListener::Drain() {
  loop_->Drain();
  return false;  // each connection leaves the gate when it closes
}

}  // namespace halfspace
