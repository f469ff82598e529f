#include "client/bus_publisher.h"

#include <nats/nats.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {
namespace {

constexpr absl::Duration kRetryWait = absl::Milliseconds(200);
// A message's size past which no more lines join it: half of NATS's
// default limit on a message (max_payload, 1 MiB).
constexpr size_t kMessageBytes = size_t{512} << 10;

absl::Status Failed(absl::string_view what, natsStatus s,
                    jsErrCode js_error = static_cast<jsErrCode>(0)) {
  std::string message = absl::StrCat(what, ": ", natsStatus_GetText(s));
  if (js_error != 0)
    absl::StrAppend(&message, " (JetStream error ", js_error, ")");
  return absl::UnavailableError(message);
}

// The client's options; null and an error naming the flags for bad ones.
absl::StatusOr<natsOptions*> MakeOptions(const BusOptions& options) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  std::vector<const char*> urls;
  for (const std::string& url : options.urls) urls.push_back(url.c_str());
  if (s == NATS_OK) s = natsOptions_SetServers(opts, urls.data(), urls.size());
  if (s == NATS_OK) s = natsOptions_SetName(opts, "halfspace publish");
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 2000);
  if (s == NATS_OK && !options.credentials_file.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(
        opts, options.credentials_file.c_str(), nullptr);
  }
  if (s == NATS_OK && !options.ca_file.empty()) {
    s = natsOptions_SetSecure(opts, true);
    if (s == NATS_OK) {
      s = natsOptions_LoadCATrustedCertificates(opts, options.ca_file.c_str());
    }
  }
  if (s == NATS_OK && !options.cert_file.empty()) {
    s = natsOptions_LoadCertificatesChain(opts, options.cert_file.c_str(),
                                          options.key_file.c_str());
  }
  if (s == NATS_OK) return opts;
  natsOptions_Destroy(opts);
  return absl::InvalidArgumentError(absl::StrCat(
      "the NATS options (--nats_url, --nats_credentials, --nats_tls_*): ",
      natsStatus_GetText(s)));
}

}  // namespace

struct BusPublisher::Handles {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  ~Handles() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
  }
};

BusPublisher::BusPublisher(std::unique_ptr<Handles> handles)
    : handles_(std::move(handles)) {}

BusPublisher::~BusPublisher() = default;

absl::StatusOr<std::unique_ptr<BusPublisher>> BusPublisher::Connect(
    const BusOptions& options, absl::Time deadline) {
  if (options.urls.empty()) {
    return absl::InvalidArgumentError("no NATS server given (--nats_url)");
  }
  absl::StatusOr<natsOptions*> opts = MakeOptions(options);
  if (!opts.ok()) return opts.status();
  auto handles = std::make_unique<Handles>();
  natsStatus s;
  while ((s = natsConnection_Connect(&handles->connection, *opts)) != NATS_OK &&
         absl::Now() + kRetryWait < deadline) {
    absl::SleepFor(kRetryWait);
  }
  natsOptions_Destroy(*opts);
  if (s == NATS_OK) {
    s = natsConnection_JetStream(&handles->js, handles->connection, nullptr);
  }
  if (s != NATS_OK) {
    return Failed(absl::StrCat("connecting to NATS at ", options.urls.front()),
                  s);
  }
  return std::unique_ptr<BusPublisher>(new BusPublisher(std::move(handles)));
}

absl::StatusOr<uint64_t> BusPublisher::Publish(const std::string& subject,
                                               const std::string& format,
                                               absl::string_view data,
                                               const std::string& id,
                                               absl::Time deadline) {
  natsMsg* msg = nullptr;
  natsStatus s =
      natsMsg_Create(&msg, subject.c_str(), nullptr, data.data(), data.size());
  if (s == NATS_OK)
    s = natsMsgHeader_Set(msg, "Halfspace-Format", format.c_str());
  if (s != NATS_OK) {
    natsMsg_Destroy(msg);
    return Failed("making a message", s);
  }
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = id.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  // No responders: nothing was stored (no stream takes the subject, or its
  // leader is being elected); a timeout: it may have been, and the same id
  // makes the retry safe.
  while (true) {
    options.MaxWait =
        std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
    s = js_PublishMsg(&ack, handles_->js, msg, &options, &js_error);
    const bool again = s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT;
    if (!again || absl::Now() + kRetryWait >= deadline) break;
    absl::SleepFor(kRetryWait);
  }
  natsMsg_Destroy(msg);
  if (s == NATS_NO_RESPONDERS) {
    return absl::NotFoundError(
        absl::StrCat("no JetStream stream answers for subject '", subject,
                     "' (is the model replicated, and the cluster up?)"));
  }
  if (s != NATS_OK) {
    return Failed(absl::StrCat("publishing to '", subject, "'"), s, js_error);
  }
  const uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

namespace {

// Lines gathered into messages and published in order.
class Batcher {
 public:
  Batcher(BusPublisher& bus, const PublishPlan& plan, PublishTotals& totals)
      : bus_(bus), plan_(plan), totals_(totals) {
    std::random_device random;
    run_ = absl::StrCat("publish-", absl::Hex(random(), absl::kZeroPad8),
                        absl::Hex(random(), absl::kZeroPad8));
  }

  // Adds a line in `format` (the same for every line).
  absl::Status Add(absl::string_view line, ExampleFormat format) {
    if (lines_ > 0 && message_.size() + line.size() + 1 > kMessageBytes) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
    format_ = format;
    absl::StrAppend(&message_, line, "\n");
    if (++lines_ < plan_.lines_per_message) return absl::OkStatus();
    return Flush();
  }

  absl::Status Flush() {
    if (lines_ == 0) return absl::OkStatus();
    const std::string id = absl::StrCat(run_, "-", totals_.messages + 1);
    absl::StatusOr<uint64_t> position =
        bus_.Publish(plan_.subject, FormatName(format_), message_, id,
                     absl::Now() + plan_.timeout);
    if (!position.ok()) return position.status();
    if (totals_.messages == 0) totals_.first_position = *position;
    totals_.last_position = *position;
    ++totals_.messages;
    totals_.lines += lines_;
    message_.clear();
    lines_ = 0;
    return absl::OkStatus();
  }

 private:
  BusPublisher& bus_;
  const PublishPlan& plan_;
  PublishTotals& totals_;
  std::string run_;  // the message ids' prefix, this run's own
  std::string message_;
  int lines_ = 0;
  ExampleFormat format_ = ExampleFormat::kCsv;
};

}  // namespace

absl::Status PublishLines(BusPublisher& bus, const PublishPlan& plan,
                          PublishTotals& totals) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (plan.path != "-") {
    file.open(plan.path, std::ios::binary);
    if (!file)
      return absl::NotFoundError(absl::StrCat("cannot open ", plan.path));
    in = &file;
  }
  const std::string shown = plan.path == "-" ? "stdin" : plan.path;
  Batcher batcher(bus, plan, totals);
  ExampleFormat format = plan.format;
  bool first = true;
  int64_t number = 0;
  v1::Example example;
  for (std::string raw; std::getline(*in, raw);) {
    ++number;
    const absl::string_view line = TrimLine(raw);
    if (IsSkippedLine(line)) continue;
    if (format == ExampleFormat::kAuto) format = LooksLike(line);
    example.Clear();
    const absl::Status parsed =
        ParseExampleLine(line, format, plan.multiclass, example);
    const bool header = first && format == ExampleFormat::kCsv;
    first = false;
    if (!parsed.ok()) {
      if (header && IsCsvHeader(line)) continue;
      if (absl::Status s = batcher.Flush(); !s.ok()) return s;
      return absl::InvalidArgumentError(
          absl::StrCat(shown, ":", number, ": ", parsed.message()));
    }
    if (absl::Status s = batcher.Add(line, format); !s.ok()) return s;
  }
  if (in->bad())
    return absl::DataLossError(absl::StrCat("cannot read ", shown));
  return batcher.Flush();
}

}  // namespace halfspace
