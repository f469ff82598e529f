#include "core/replication/jetstream_log.h"

#include <nats/nats.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/base/mutex.h"
#include "core/base/quoted.h"
#include "core/base/retry_after.h"
#include "core/replication/jetstream_handles.h"
#include "core/storage/snapshot_codec.h"
#include "halfspace/storage/v1/storage.pb.h"

namespace halfspace {

namespace {

// How long a caller told UNAVAILABLE waits before it sends again: about
// the time a stream's new leader takes to be elected in a small cluster,
// or the client to reconnect to another NATS server.
constexpr absl::Duration kRetryAfter = absl::Seconds(1);

absl::Status Unavailable(absl::string_view message) {
  return WithRetryAfter(absl::UnavailableError(message), kRetryAfter);
}

}  // namespace

absl::Status FromNats(absl::string_view what, natsStatus s,
                      jsErrCode js_error) {
  const char* detail = nats_GetLastError(nullptr);
  std::string message = absl::StrCat(what, ": ", natsStatus_GetText(s));
  if (js_error != 0)
    absl::StrAppend(&message, " (JetStream error ", js_error, ")");
  if (detail != nullptr && *detail != '\0') {
    absl::StrAppend(&message, ": ", detail);
  }
  switch (s) {
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_RESPONDERS:
    case NATS_NOT_YET_CONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_IO_ERROR:
      return Unavailable(message);
    default:
      // JetStream answers errors while a stream's leader is elected.
      return js_error == 0 ? Unavailable(message)
                           : absl::InternalError(message);
  }
}

natsStatus OpenBucket(jsCtx* js, const char* bucket, int replicas,
                      kvStore** out) {
  natsStatus s = js_KeyValue(out, js, bucket);
  if (s != NATS_NOT_FOUND) return s;
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = bucket;
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = replicas;
  return js_CreateKeyValue(out, js, &config);
}

namespace {

constexpr char kCatalog[] = "halfspace_models";
constexpr char kRecordFormat[] = "record";
// How long a publish waits for its acknowledgement at most. A stream's
// leader answers in milliseconds; one that was killed never does, and its
// records are failed after this (the client sends them again, deduplicated
// by their sequence) rather than holding the call to its deadline.
constexpr absl::Duration kAckWait = absl::Seconds(5);
// What a record's headers (format and call token) and the protocol's
// framing add to its payload, at most.
constexpr size_t kHeaderRoom = 256;

int64_t MillisUntil(absl::Time deadline) {
  return std::max<int64_t>(1,
                           absl::ToInt64Milliseconds(deadline - absl::Now()));
}

std::string Header(natsMsg* msg, const char* key) {
  const char* value = nullptr;
  if (natsMsgHeader_Get(msg, key, &value) != NATS_OK || value == nullptr) {
    return "";
  }
  return value;
}

class JetStreamReader final : public LogReader {
 public:
  JetStreamReader(natsConnection* connection, natsSubscription* sub,
                  uint64_t pending)
      : connection_(connection), sub_(sub), pending_(pending) {}
  ~JetStreamReader() override { natsSubscription_Destroy(sub_); }

  absl::StatusOr<std::vector<LogMessage>> Next(
      int max, absl::Duration timeout) override {
    // The client's fetch takes what is there at once, but when nothing is,
    // it waits for a whole batch (or the timeout): a reader caught up with
    // a stream of a few records a second would hold each up to `timeout`.
    // So a reader with nothing known pending waits for one record, then
    // takes at once those its metadata says came behind it.
    std::vector<LogMessage> messages;
    absl::Status s = Fetch(pending_ > 0 ? max : 1, timeout, messages);
    if (s.ok() && messages.size() == 1 && pending_ > 0 && max > 1) {
      s = Fetch(static_cast<int>(std::min<uint64_t>(pending_, max - 1)),
                timeout, messages);
    }
    if (!s.ok()) return s;
    return messages;
  }

  uint64_t Pending() const override { return pending_; }

 private:
  // Fetches up to `batch` messages into `messages`, waiting up to
  // `timeout` for them.
  absl::Status Fetch(int batch, absl::Duration timeout,
                     std::vector<LogMessage>& messages) {
    natsMsgList list{};
    jsErrCode js_error = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(
        &list, sub_, batch,
        std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout)), &js_error);
    if (s == NATS_TIMEOUT) {
      // Nothing came: the stream has nothing new, or, while the client
      // reconnects, the request never reached it.
      if (natsConnection_Status(connection_) != NATS_CONN_STATUS_CONNECTED) {
        return absl::UnavailableError(
            "not connected to NATS; reconnecting to the cluster");
      }
      return absl::OkStatus();
    }
    if (s != NATS_OK) return FromNats("reading the stream", s, js_error);
    for (int i = 0; i < list.Count; ++i) {
      natsMsg* msg = list.Msgs[i];
      jsMsgMetaData* meta = nullptr;
      if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) continue;  // not JS's
      // The consumer numbers what it delivers 1, 2, ...: a number skipped
      // is a record it counts as delivered that never came (sent by a
      // stream leader that died, say). The reader is opened again at the
      // replica's position rather than reading on past the hole.
      const uint64_t delivered = meta->Sequence.Consumer;
      if (delivered != delivered_ + 1) {
        jsMsgMetaData_Destroy(meta);
        natsMsgList_Destroy(&list);
        return absl::UnavailableError(
            absl::StrCat("the stream's consumer skipped deliveries ",
                         delivered_ + 1, " to ", delivered - 1,
                         "; reading again from this replica's "
                         "position"));
      }
      delivered_ = delivered;
      LogMessage m;
      m.sequence = meta->Sequence.Stream;
      m.time_micros = meta->Timestamp / 1000;
      pending_ = meta->NumPending;
      jsMsgMetaData_Destroy(meta);
      m.format_name = Header(msg, kFormatHeader);
      m.format = m.format_name == kRecordFormat ? MessageFormat::kRecord
                                                : MessageFormat::kProducer;
      m.call = Header(msg, kCallHeader);
      m.data.assign(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
      messages.push_back(std::move(m));
    }
    natsMsgList_Destroy(&list);
    return absl::OkStatus();
  }

  natsConnection* const connection_;
  natsSubscription* const sub_;
  uint64_t pending_;
  uint64_t delivered_ = 0;  // the consumer's number of the last record
};

class JetStreamWatch final : public CatalogWatch {
 public:
  explicit JetStreamWatch(kvWatcher* watcher) : watcher_(watcher) {}
  ~JetStreamWatch() override { kvWatcher_Destroy(watcher_); }

  absl::StatusOr<std::optional<CatalogChange>> Next(
      absl::Duration timeout) override {
    kvEntry* e = nullptr;
    const natsStatus s = kvWatcher_Next(
        &e, watcher_, std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout)));
    if (s == NATS_TIMEOUT) return std::nullopt;
    if (s != NATS_OK) return FromNats("watching the catalog", s);
    CatalogChange change;
    if (e == nullptr) {  // the initial values are done
      change.listed_all = true;
      return change;
    }
    change.model = kvEntry_Key(e);
    change.revision = kvEntry_Revision(e);
    if (kvEntry_Operation(e) == kvOp_Put) {
      storage::v1::Replication r;
      if (!r.ParseFromArray(kvEntry_Value(e), kvEntry_ValueLen(e))) {
        // Not the catalog's: the name reads as free.
      } else if (!r.alias_of().empty()) {
        change.alias_of = r.alias_of();
      } else {
        change.replication = ReplicationOf(r);
        if (r.creating_until_micros() != 0) {
          change.creating_until =
              absl::FromUnixMicros(r.creating_until_micros());
        }
      }
    }
    kvEntry_Destroy(e);
    return change;
  }

 private:
  kvWatcher* const watcher_;
};

}  // namespace

struct PublishAcks {
  struct Pending {
    Published done;
    std::string subject;  // for messages
  };
  Mutex mu;
  // By the message the library holds until its acknowledgement.
  absl::flat_hash_map<natsMsg*, Pending> pending ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
};

namespace {

// The acknowledgement handler finds its log's PublishAcks by id, here: an
// acknowledgement that comes while (or after) its log is destroyed finds
// none, or holds it until the handler returns.
Mutex& AcksMutex() {
  static Mutex* mu = new Mutex;
  return *mu;
}
absl::flat_hash_map<uint64_t, std::shared_ptr<PublishAcks>>& LiveAcks()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(AcksMutex()) {
  static auto* live =
      new absl::flat_hash_map<uint64_t, std::shared_ptr<PublishAcks>>;
  return *live;
}

uint64_t Register(std::shared_ptr<PublishAcks> acks) {
  static uint64_t next = 0;
  MutexLock lock(AcksMutex());
  const uint64_t id = ++next;
  LiveAcks()[id] = std::move(acks);
  return id;
}

void OnPublishAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error,
                  void* closure) {
  std::shared_ptr<PublishAcks> acks;
  {
    MutexLock lock(AcksMutex());
    auto it = LiveAcks().find(reinterpret_cast<uintptr_t>(closure));
    if (it != LiveAcks().end()) acks = it->second;
  }
  std::optional<PublishAcks::Pending> pending;
  if (acks != nullptr) {
    MutexLock lock(acks->mu);
    if (auto it = acks->pending.find(msg); it != acks->pending.end()) {
      pending = std::move(it->second);
      acks->pending.erase(it);
    }
  }
  natsMsg_Destroy(msg);
  if (!pending.has_value()) return;  // the log is closed
  if (ack != nullptr) {
    pending->done(ack->Sequence);
    return;
  }
  const std::string what =
      absl::StrCat("publishing to ", Quoted(pending->subject));
  if (error->Err == NATS_NO_RESPONDERS) {
    pending->done(Unavailable(absl::StrCat(
        what,
        ": the stream has no leader (one is being elected); retry in a "
        "moment")));
    return;
  }
  if (error->Err == NATS_TIMEOUT) {
    pending->done(Unavailable(absl::StrCat(
        what,
        ": no acknowledgement in time (the stream's leader may be gone); the "
        "record may still be stored")));
    return;
  }
  if (error->ErrCode == JSStreamMessageExceedsMaximumErr) {
    pending->done(absl::ResourceExhaustedError(absl::StrCat(
        what,
        ": the record is larger than the stream takes (its max_msg_size); "
        "send fewer examples per request")));
    return;
  }
  std::string message =
      absl::StrCat(what, ": ", natsStatus_GetText(error->Err));
  if (error->ErrCode != 0) {
    absl::StrAppend(&message, " (JetStream error ", error->ErrCode, ")");
  }
  if (error->ErrText != nullptr && *error->ErrText != '\0') {
    absl::StrAppend(&message, ": ", error->ErrText);
  }
  pending->done(Unavailable(message));
}

}  // namespace

JetStreamLog::JetStreamLog(std::unique_ptr<Handles> handles)
    : handles_(std::move(handles)) {}

JetStreamLog::~JetStreamLog() {
  {
    MutexLock lock(AcksMutex());
    LiveAcks().erase(handles_->acks_id);
  }
  // Every record not answered yet is answered now; the library drops them.
  absl::flat_hash_map<natsMsg*, PublishAcks::Pending> pending;
  {
    MutexLock lock(handles_->acks->mu);
    handles_->acks->closed = true;
    pending.swap(handles_->acks->pending);
  }
  for (auto& [msg, p] : pending) {
    p.done(absl::UnavailableError(
        absl::StrCat("publishing to ", Quoted(p.subject),
                     ": the connection to NATS is closed; the record may "
                     "still be stored")));
  }
}

namespace {

// The client's options for `options`; an error names the bad one.
absl::StatusOr<natsOptions*> MakeOptions(const NatsOptions& options) {
  natsOptions* opts = nullptr;
  if (natsStatus s = natsOptions_Create(&opts); s != NATS_OK) {
    return FromNats("NATS options", s);
  }
  std::vector<const char*> urls;
  for (const std::string& url : options.urls) urls.push_back(url.c_str());
  natsStatus s = natsOptions_SetServers(opts, urls.data(), urls.size());
  if (s == NATS_OK) s = natsOptions_SetName(opts, options.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 100);
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
  if (s != NATS_OK) {
    natsOptions_Destroy(opts);
    return absl::InvalidArgumentError(
        FromNats("the NATS options (--nats_url, --nats_credentials, "
                 "--nats_tls_*)",
                 s)
            .message());
  }
  return opts;
}

// A name's entry in the catalog: a model's stream, or a shared alias's
// model (alias_of), as of `revision`.
struct CatalogEntry {
  storage::v1::Replication value;
  uint64_t revision = 0;
};

// The catalog's entry for `key`; none if the name is free.
absl::StatusOr<std::optional<CatalogEntry>> ReadCatalog(
    kvStore* catalog, const std::string& key) {
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, catalog, key.c_str());
  if (s == NATS_NOT_FOUND) return std::nullopt;
  if (s != NATS_OK) {
    return FromNats(absl::StrCat("looking ", Quoted(key), " up in the catalog"),
                    s);
  }
  CatalogEntry entry;
  entry.revision = kvEntry_Revision(e);
  const bool parsed =
      entry.value.ParseFromArray(kvEntry_Value(e), kvEntry_ValueLen(e));
  kvEntry_Destroy(e);
  if (!parsed) {
    return absl::DataLossError(absl::StrCat("the catalog's entry for ",
                                            Quoted(key), " does not decode"));
  }
  return entry;
}

// ALREADY_EXISTS for a name `entry` holds.
absl::Status Taken(absl::string_view name, const CatalogEntry& entry) {
  if (!entry.value.alias_of().empty()) {
    return absl::AlreadyExistsError(
        absl::StrCat(Quoted(name), " is a shared alias (of replicated model ",
                     Quoted(entry.value.alias_of()), "); choose another name"));
  }
  return absl::AlreadyExistsError(
      absl::StrCat("replicated model ", Quoted(name), " already exists"));
}

// How often a change of a shared alias is tried again when the name
// changed between reading and writing it.
constexpr int kAliasTries = 5;

// Opens the catalog bucket, creating it if there is none.
natsStatus OpenCatalog(JetStreamLog::Handles& h, int replicas) {
  return OpenBucket(h.js, kCatalog, replicas, &h.catalog);
}

}  // namespace

absl::StatusOr<std::unique_ptr<JetStreamLog>> JetStreamLog::Connect(
    const NatsOptions& options, int catalog_replicas, absl::Time deadline) {
  if (options.urls.empty()) {
    return absl::InvalidArgumentError("no NATS server given (--nats_url)");
  }
  absl::StatusOr<natsOptions*> opts = MakeOptions(options);
  if (!opts.ok()) return opts.status();
  auto handles = std::make_unique<Handles>();
  handles->acks = std::make_shared<PublishAcks>();
  handles->acks_id = Register(handles->acks);
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.PublishAsync.AckHandler = OnPublishAck;
  js_options.PublishAsync.AckHandlerClosure =
      reinterpret_cast<void*>(static_cast<uintptr_t>(handles->acks_id));
  absl::Status last;
  // The cluster may be starting: its JetStream answers once a meta leader
  // is elected.
  while (true) {
    natsStatus s = handles->connection == nullptr
                       ? natsConnection_Connect(&handles->connection, *opts)
                       : NATS_OK;
    if (s == NATS_OK && handles->js == nullptr) {
      s = natsConnection_JetStream(&handles->js, handles->connection,
                                   &js_options);
    }
    if (s == NATS_OK && handles->catalog == nullptr) {
      s = OpenCatalog(*handles, catalog_replicas);
    }
    if (s == NATS_OK && handles->snapshot_index == nullptr) {
      s = OpenSnapshots(*handles, catalog_replicas);
    }
    if (s == NATS_OK) break;
    last = FromNats(
        absl::StrCat("connecting to NATS at ", options.urls.front()), s);
    if (absl::Now() + absl::Milliseconds(200) > deadline) {
      natsOptions_Destroy(*opts);
      MutexLock lock(AcksMutex());
      LiveAcks().erase(handles->acks_id);
      return absl::UnavailableError(last.message());
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  natsOptions_Destroy(*opts);
  return std::unique_ptr<JetStreamLog>(new JetStreamLog(std::move(handles)));
}

absl::Status JetStreamLog::EnsureStream(const Replication& replication) {
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {replication.subject.c_str()};
  config.Name = replication.stream.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Replicas = replication.replicas;
  config.Duplicates = absl::ToInt64Nanoseconds(absl::Minutes(2));
  jsStreamInfo* info = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&info, handles_->js, &config, nullptr, &js_error);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return absl::OkStatus();
  }
  if (js_error != JSStreamNameExistErr) {
    return FromNats(
        absl::StrCat("creating stream ", Quoted(replication.stream)), s,
        js_error);
  }
  s = js_GetStreamInfo(&info, handles_->js, replication.stream.c_str(), nullptr,
                       &js_error);
  if (s != NATS_OK) {
    return FromNats(absl::StrCat("reading stream ", Quoted(replication.stream)),
                    s, js_error);
  }
  bool takes = false;
  for (int i = 0; i < info->Config->SubjectsLen; ++i) {
    takes = takes || replication.subject == info->Config->Subjects[i];
  }
  jsStreamInfo_Destroy(info);
  if (takes) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "stream ", Quoted(replication.stream),
      " exists and does not take subject ", Quoted(replication.subject),
      "; name another stream, or add the subject to it"));
}

void JetStreamLog::Publish(const Replication& replication,
                           absl::string_view data, absl::string_view call,
                           absl::Time deadline, Published done) {
  const std::string what =
      absl::StrCat("publishing to ", Quoted(replication.subject));
  // Headers and framing take little; the payload must fit what the
  // servers take in one message.
  const int64_t most = natsConnection_GetMaxPayload(handles_->connection);
  if (most > 0 && data.size() + kHeaderRoom > static_cast<uint64_t>(most)) {
    return done(absl::ResourceExhaustedError(
        absl::StrCat(what, ": the record is ", data.size(),
                     " bytes, and NATS takes messages of at most ", most,
                     " (its max_payload); send fewer examples per request")));
  }
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, replication.subject.c_str(), nullptr,
                                data.data(), data.size());
  if (s == NATS_OK) s = natsMsgHeader_Set(msg, kFormatHeader, kRecordFormat);
  const std::string token(call);
  if (s == NATS_OK && !token.empty()) {
    s = natsMsgHeader_Set(msg, kCallHeader, token.c_str());
  }
  if (s != NATS_OK) {
    natsMsg_Destroy(msg);
    return done(FromNats(what, s));
  }
  PublishAcks& acks = *handles_->acks;
  natsMsg* const key = msg;
  {
    MutexLock lock(acks.mu);
    if (acks.closed) {
      natsMsg_Destroy(msg);
      return done(Unavailable(
          absl::StrCat(what, ": the connection to NATS is closed")));
    }
    acks.pending[key] = {std::move(done), replication.subject};
  }
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = MillisUntil(std::min(deadline, absl::Now() + kAckWait));
  // On success the library holds the message (msg is null) until the
  // acknowledgement, which may come before this returns.
  s = js_PublishMsgAsync(handles_->js, &msg, &options);
  if (s == NATS_OK) return;
  std::optional<PublishAcks::Pending> failed;
  {
    MutexLock lock(acks.mu);
    if (auto it = acks.pending.find(key); it != acks.pending.end()) {
      failed = std::move(it->second);
      acks.pending.erase(it);
    }
  }
  natsMsg_Destroy(msg);  // after its key is gone: the address may be reused
  if (failed.has_value()) {
    failed->done(FromNats(what, s));
  }
}

absl::Status JetStreamLog::Trim(const Replication& replication,
                                uint64_t before) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Subject = replication.subject.c_str();
  options.Stream.Purge.Sequence = before;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  const natsStatus s = js_PurgeStream(handles_->js, replication.stream.c_str(),
                                      &options, &js_error);
  if (s == NATS_OK) return absl::OkStatus();
  return FromNats(absl::StrCat("trimming ", Quoted(replication.subject),
                               " in stream ", Quoted(replication.stream)),
                  s, js_error);
}

absl::StatusOr<std::unique_ptr<LogReader>> JetStreamLog::Read(
    const Replication& replication, uint64_t from, absl::string_view reader) {
  const std::string durable =
      absl::StrCat(reader, "__",
                   absl::StrReplaceAll(replication.subject,
                                       {{".", "_"}, {"*", "_"}, {">", "_"}}));
  jsErrCode js_error = static_cast<jsErrCode>(0);
  // The reader starts where this server's replica is, not where the
  // consumer was left.
  js_DeleteConsumer(handles_->js, replication.stream.c_str(), durable.c_str(),
                    nullptr, &js_error);
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = replication.stream.c_str();
  options.Config.DeliverPolicy = js_DeliverByStartSequence;
  options.Config.OptStartSeq = std::max<uint64_t>(1, from);
  options.Config.AckPolicy = js_AckNone;
  options.Config.MaxWaiting = 16;
  natsSubscription* sub = nullptr;
  natsStatus s =
      js_PullSubscribe(&sub, handles_->js, replication.subject.c_str(),
                       durable.c_str(), nullptr, &options, &js_error);
  if (s != NATS_OK) {
    return FromNats(
        absl::StrCat("following stream ", Quoted(replication.stream)), s,
        js_error);
  }
  // A consumer left from before whose deletion failed (its leader was
  // away) would be bound instead, and read on from where it was, skipping
  // records: use only a consumer that starts at `from` and has delivered
  // nothing.
  jsConsumerInfo* info = nullptr;
  s = natsSubscription_GetConsumerInfo(&info, sub, nullptr, &js_error);
  const bool fresh = s == NATS_OK &&
                     info->Config->DeliverPolicy == js_DeliverByStartSequence &&
                     info->Config->OptStartSeq == options.Config.OptStartSeq &&
                     info->Delivered.Consumer == 0;
  const uint64_t pending = s == NATS_OK ? info->NumPending : 0;
  if (info != nullptr) jsConsumerInfo_Destroy(info);
  if (!fresh) {
    natsSubscription_Destroy(sub);
    return absl::UnavailableError(
        absl::StrCat("the consumer ", Quoted(durable), " of stream ",
                     Quoted(replication.stream), " is not at position ", from,
                     "; it is replaced on the next try"));
  }
  return std::unique_ptr<LogReader>(
      new JetStreamReader(handles_->connection, sub, pending));
}

absl::StatusOr<uint64_t> JetStreamLog::Claim(absl::string_view model,
                                             const Replication& replication,
                                             absl::Time creating_until,
                                             uint64_t over) {
  storage::v1::Replication r;
  ToProto(replication, r);
  r.set_creating_until_micros(absl::ToUnixMicros(creating_until));
  const std::string value = r.SerializeAsString();
  const std::string key(model);
  uint64_t revision = 0;
  natsStatus s = over == 0
                     ? kvStore_Create(&revision, handles_->catalog, key.c_str(),
                                      value.data(), value.size())
                     : kvStore_Update(&revision, handles_->catalog, key.c_str(),
                                      value.data(), value.size(), over);
  if (s == NATS_OK) return revision;
  absl::StatusOr<std::optional<CatalogEntry>> entry =
      ReadCatalog(handles_->catalog, key);
  if (entry.ok() && entry->has_value()) return Taken(model, **entry);
  return FromNats(absl::StrCat("claiming ", Quoted(model), " in the catalog"),
                  s);
}

absl::Status JetStreamLog::Release(absl::string_view model) {
  const std::string key(model);
  natsStatus s = kvStore_Delete(handles_->catalog, key.c_str());
  if (s == NATS_OK) return absl::OkStatus();
  return FromNats(absl::StrCat("releasing ", Quoted(model)), s);
}

absl::Status JetStreamLog::CheckFree(absl::string_view name) {
  absl::StatusOr<std::optional<CatalogEntry>> entry =
      ReadCatalog(handles_->catalog, std::string(name));
  if (!entry.ok()) return entry.status();
  return entry->has_value() ? Taken(name, **entry) : absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CatalogWatch>> JetStreamLog::WatchCatalog() {
  kvWatcher* watcher = nullptr;
  natsStatus s = kvStore_WatchAll(&watcher, handles_->catalog, nullptr);
  if (s != NATS_OK) return FromNats("watching the catalog", s);
  return std::unique_ptr<CatalogWatch>(new JetStreamWatch(watcher));
}

absl::StatusOr<AliasChange> JetStreamLog::PutAlias(absl::string_view alias,
                                                   absl::string_view model,
                                                   const AliasCheck& check) {
  storage::v1::Replication value;
  value.set_alias_of(std::string(model));
  const std::string bytes = value.SerializeAsString();
  const std::string key(alias);
  absl::Status last;
  for (int attempt = 0; attempt < kAliasTries; ++attempt) {
    absl::StatusOr<std::optional<CatalogEntry>> entry =
        ReadCatalog(handles_->catalog, key);
    if (!entry.ok()) return entry.status();
    AliasChange change;
    if (entry->has_value()) {
      if ((*entry)->value.alias_of().empty()) return Taken(alias, **entry);
      change.previous = (*entry)->value.alias_of();
    }
    if (absl::Status s = check(change.previous); !s.ok()) return s;
    // Only over the entry read: a change meanwhile fails it, and it is
    // read and checked again.
    const natsStatus s =
        entry->has_value()
            ? kvStore_Update(&change.revision, handles_->catalog, key.c_str(),
                             bytes.data(), bytes.size(), (*entry)->revision)
            : kvStore_Create(&change.revision, handles_->catalog, key.c_str(),
                             bytes.data(), bytes.size());
    if (s == NATS_OK) return change;
    last = FromNats(absl::StrCat("setting alias ", Quoted(alias)), s);
  }
  return last;
}

absl::StatusOr<AliasChange> JetStreamLog::DropAlias(absl::string_view alias) {
  const std::string key(alias);
  // The bucket's own subject for the key, as the key-value API writes it.
  const std::string subject = absl::StrCat("$KV.", kCatalog, ".", key);
  absl::Status last;
  for (int attempt = 0; attempt < kAliasTries; ++attempt) {
    absl::StatusOr<std::optional<CatalogEntry>> entry =
        ReadCatalog(handles_->catalog, key);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value() || (*entry)->value.alias_of().empty()) {
      return absl::NotFoundError(
          absl::StrCat("alias ", Quoted(alias), " does not exist"));
    }
    AliasChange change;
    change.previous = (*entry)->value.alias_of();
    // A deletion marker, as kvStore_Delete writes, but only over the
    // entry read (the C client's Delete takes no expected revision).
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, nullptr, 0);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "KV-Operation", "DEL");
    jsPubOptions options;
    jsPubOptions_Init(&options);
    options.ExpectLastSubjectSeq = (*entry)->revision;
    jsPubAck* ack = nullptr;
    jsErrCode js_error = static_cast<jsErrCode>(0);
    if (s == NATS_OK) {
      s = js_PublishMsg(&ack, handles_->js, msg, &options, &js_error);
    }
    natsMsg_Destroy(msg);
    if (s == NATS_OK) {
      change.revision = ack->Sequence;
      jsPubAck_Destroy(ack);
      return change;
    }
    last =
        FromNats(absl::StrCat("deleting alias ", Quoted(alias)), s, js_error);
  }
  return last;
}

}  // namespace halfspace
