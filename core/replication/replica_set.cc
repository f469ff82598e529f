#include "core/replication/replica_set.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "core/storage/log_record.h"

namespace halfspace {
namespace {

constexpr int kReadBatch = 256;
constexpr absl::Duration kReadWait = absl::Milliseconds(200);
constexpr absl::Duration kRetryWait = absl::Milliseconds(200);
// A claim whose creator gave up this long ago, and whose model a replica
// that has read its whole stream since does not hold, is abandoned: its
// creation was never stored (a later one, delayed in a client's buffer,
// would carry another model's creation id and be skipped).
constexpr absl::Duration kAbandonedAfter = absl::Seconds(10);
// How often a follower settles the calls waiting on it past their deadline.
constexpr absl::Duration kSweepEvery = absl::Milliseconds(100);
// After the log failed to keep a snapshot, the next try waits: first
// kFirstShareRetry (a stream's leader is elected in seconds), then twice as
// long after each failure, up to kLastShareRetry, so that a log that does
// not answer neither holds the sharer up every second nor leaves the stream
// untrimmed long after it is back.
constexpr absl::Duration kFirstShareRetry = absl::Seconds(1);
constexpr absl::Duration kLastShareRetry = absl::Seconds(60);

std::chrono::steady_clock::time_point SteadyDeadline(absl::Time deadline) {
  const absl::Duration left = std::clamp(
      deadline - absl::Now(), absl::ZeroDuration(), absl::Hours(24 * 365));
  return std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(left);
}

}  // namespace

struct ReplicaSet::Follower {
  std::string model;
  Replication replication;
  std::thread thread;
  std::atomic<bool> stop{false};
  // guarded by ReplicaSet::mu_
  uint64_t revision = 0;      // of the catalog's claim it follows
  absl::Time creating_until;  // when that claim's creator gives up
  uint64_t position = 0;
  uint64_t lag_records = 0;      // as the log last said
  int64_t last_time_micros = 0;  // of the last record applied; 0: none yet
  // Why it does not read its stream now (it has not yet, or the last try
  // failed); empty while it reads. Since when it has not read it.
  std::string stalled = "it has not read its stream yet";
  absl::Time read_at = absl::Now();
  // The position of the shared snapshot as last read or written; 0 if
  // not known.
  uint64_t shared = 0;
  // No snapshot is shared before then: the log failed the last try.
  absl::Time share_after = absl::InfinitePast();
  absl::Duration share_retry = kFirstShareRetry;  // after the next failure
};

// A change published here, until this replica applies it or it fails.
// Settled once: by the follower that applies it, the log that could not
// store it, or the set when its deadline passes or it stops following.
struct ReplicaSet::Waiter {
  std::string model;
  std::string token;  // the call token its record carries
  absl::Time deadline;
  Applied done;
  std::atomic<bool> settled{false};
  std::atomic<uint64_t> stored_at{0};  // its sequence, once the log said
  AppliedBatch applied;                // filled by the follower that applies it

  // Calls `done` with `result` unless it was settled before. Touches
  // nothing but the waiter: the log's threads call it, and may outlive
  // the set.
  void Settle(absl::StatusOr<AppliedBatch> result) {
    if (!settled.exchange(true)) done(std::move(result));
  }
};

ReplicaSet::ReplicaSet(ModelRegistry* registry, ReplicatedLog* log,
                       ReplicaOptions options)
    : registry_(registry),
      log_(log),
      options_(std::move(options)),
      incarnation_([] {
        std::random_device random;
        return (uint64_t{random()} << 32) ^ random();
      }()) {}

ReplicaSet::~ReplicaSet() {
  stop_.store(true);
  if (watcher_.joinable()) watcher_.join();
  if (sharer_.joinable()) sharer_.join();
  std::vector<std::shared_ptr<Follower>> followers;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    for (auto& [name, f] : followers_) followers.push_back(f);
  }
  for (const std::shared_ptr<Follower>& f : followers) {
    f->stop.store(true);
    if (f->thread.joinable()) f->thread.join();
  }
  SettleWaiters("", absl::InfiniteFuture(), [](const Waiter&) {
    return absl::UnavailableError("this server is shutting down");
  });
}

void ReplicaSet::SettleWaiters(
    absl::string_view model, absl::Time now,
    const std::function<absl::Status(const Waiter&)>& why) {
  std::vector<std::shared_ptr<Waiter>> settled;
  {
    MutexLock lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      const std::shared_ptr<Waiter>& w = it->second;
      const bool chosen =
          (model.empty() || w->model == model) && now >= w->deadline;
      if (chosen && !w->settled.load()) settled.push_back(w);
      if (chosen || w->settled.load()) {
        waiters_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const std::shared_ptr<Waiter>& w : settled) w->Settle(why(*w));
}

void ReplicaSet::Start() {
  if (options_.snapshot_every > 0) {
    // Its own thread: a log that does not answer holds up no one else.
    sharer_ = std::thread([this] {
      while (!stop_.load()) {
        ShareSnapshots();
        for (int i = 0; i < 10 && !stop_.load(); ++i) {
          absl::SleepFor(absl::Milliseconds(100));
        }
      }
    });
  }
  // The watch is opened, and opened again after an error, by the thread:
  // a cluster slow to answer (a leader being elected) delays following,
  // never the server's start.
  watcher_ = std::thread([this, w = std::shared_ptr<CatalogWatch>()]() mutable {
    std::vector<std::string> listed;
    bool listing = true;
    while (!stop_.load()) {
      if (w == nullptr) {
        absl::StatusOr<std::unique_ptr<CatalogWatch>> again =
            log_->WatchCatalog();
        if (!again.ok()) {
          absl::SleepFor(kRetryWait);
          continue;
        }
        w = *std::move(again);
        listing = true;
        listed.clear();
      }
      absl::StatusOr<std::optional<CatalogChange>> change = w->Next(kReadWait);
      if (!change.ok()) {
        w = nullptr;
        continue;
      }
      if (!change->has_value()) continue;
      CatalogChange& c = **change;
      if (c.listed_all) {
        // A replica or shared alias the catalog no longer lists is of a
        // model or alias deleted meanwhile.
        auto unlisted = [&](const std::string& name) {
          return std::find(listed.begin(), listed.end(), name) == listed.end();
        };
        if (listing) {
          for (const ModelRegistry::Replica& r : registry_->Replicas()) {
            if (unlisted(r.name)) Unfollow(r.name, 0);
          }
          for (const auto& [alias, model] : registry_->SharedAliases()) {
            if (unlisted(alias)) registry_->DropSharedAlias(alias);
          }
        }
        listing = false;
        continue;
      }
      if (listing && (c.replication.has_value() || !c.alias_of.empty())) {
        listed.push_back(c.model);
      }
      if (c.replication.has_value()) {
        Follow(c.model, *c.replication, c.revision, c.creating_until);
      } else if (!c.alias_of.empty()) {
        if (absl::Status s = registry_->PutSharedAlias(c.model, c.alias_of);
            !s.ok() && options_.report) {
          options_.report(c.model, 0, s);
        }
      } else if (registry_->SharedAliases().count(c.model) > 0) {
        registry_->DropSharedAlias(c.model);
      } else {
        Unfollow(c.model, c.revision);
      }
      MutexLock lock(mu_);
      catalog_revision_ = std::max(catalog_revision_, c.revision);
      applied_.SignalAll();
    }
  });
}

absl::StatusOr<std::string> ReplicaSet::SetAlias(
    absl::string_view alias, absl::string_view model,
    const std::optional<std::string>& expected, absl::Time deadline) {
  absl::StatusOr<AliasChange> change = log_->PutAlias(
      alias, model, [&](absl::string_view previous) -> absl::Status {
        if (absl::Status s = CheckExpectedAlias(alias, previous, expected);
            !s.ok()) {
          return s;
        }
        return previous.empty() ? registry_->CheckNewAlias(alias)
                                : absl::OkStatus();
      });
  if (!change.ok()) return change.status();
  if (absl::Status s = WaitForCatalog(change->revision, deadline); !s.ok()) {
    return s;
  }
  return change->previous;
}

absl::StatusOr<std::string> ReplicaSet::DeleteAlias(absl::string_view alias,
                                                    absl::Time deadline) {
  absl::StatusOr<AliasChange> change = log_->DropAlias(alias);
  if (!change.ok()) return change.status();
  if (absl::Status s = WaitForCatalog(change->revision, deadline); !s.ok()) {
    return s;
  }
  return change->previous;
}

absl::Status ReplicaSet::WaitForCatalog(uint64_t revision,
                                        absl::Time deadline) {
  const auto until = SteadyDeadline(deadline);
  MutexLock lock(mu_);
  while (catalog_revision_ < revision) {
    if (stopping_) {
      return absl::UnavailableError("this server is shutting down");
    }
    if (!applied_.WaitUntil(mu_, until)) {
      return absl::DeadlineExceededError(
          absl::StrCat("the catalog stored the change (revision ", revision,
                       "), but this server has read it only to revision ",
                       catalog_revision_, " yet"));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<ReplicaSet::Follower> ReplicaSet::Find(
    absl::string_view model) const {
  MutexLock lock(mu_);
  auto it = followers_.find(model);
  return it == followers_.end() ? nullptr : it->second;
}

void ReplicaSet::Follow(const std::string& model,
                        const Replication& replication, uint64_t revision,
                        absl::Time creating_until) {
  // Whether `r` is where this model's records are, rather than another
  // model's of the name.
  auto same = [&](const Replication& r) {
    return r.stream == replication.stream && r.subject == replication.subject &&
           r.creation == replication.creation;
  };
  bool earlier = false;  // a follower of an earlier model of the name
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    if (auto it = followers_.find(model); it != followers_.end()) {
      if (same(it->second->replication)) {
        it->second->revision = std::max(it->second->revision, revision);
        return;
      }
      earlier = true;
    }
  }
  if (earlier) Unfollow(model, revision);
  uint64_t position = 0;
  for (const ModelRegistry::Replica& r : registry_->Replicas()) {
    if (r.name != model) continue;
    if (same(r.replication)) {
      position = r.position;
    } else {
      registry_->DropReplica(model);  // of an earlier model of the name
    }
  }
  MutexLock lock(mu_);
  // A follower being stopped may still apply the batch it read: the new
  // one starts once it has ended, so that one follower applies at a time.
  while (retiring_.count(model) > 0 && !stopping_) applied_.Wait(mu_);
  if (stopping_) return;
  if (auto it = followers_.find(model); it != followers_.end()) {
    it->second->revision = std::max(it->second->revision, revision);
    return;
  }
  auto follower = std::make_shared<Follower>();
  follower->revision = revision;
  follower->creating_until = creating_until;
  follower->model = model;
  follower->replication = replication;
  follower->position = position;
  Follower* f = follower.get();
  followers_[model] = follower;
  follower->thread = std::thread([this, f] { FollowLoop(*f); });
  applied_.SignalAll();
}

void ReplicaSet::Unfollow(const std::string& model, uint64_t revision) {
  std::shared_ptr<Follower> follower;
  {
    MutexLock lock(mu_);
    auto it = followers_.find(model);
    if (it != followers_.end()) {
      if (it->second->revision > revision) return;  // a later claim's
      follower = it->second;
      followers_.erase(it);
      retiring_.insert(model);
    }
  }
  if (follower != nullptr) {
    follower->stop.store(true);
    if (follower->thread.joinable()) follower->thread.join();
  }
  registry_->DropReplica(model);
  SettleWaiters(model, absl::InfiniteFuture(), [&](const Waiter&) {
    return absl::UnavailableError(
        absl::StrCat("this server no longer follows model ", Quoted(model)));
  });
  MutexLock lock(mu_);
  if (follower != nullptr) retiring_.erase(retiring_.find(model));
  applied_.SignalAll();
}

void ReplicaSet::FollowLoop(Follower& f) {
  std::unique_ptr<LogReader> reader;
  uint64_t position;
  {
    MutexLock lock(mu_);
    position = f.position;
  }
  bool stalled = false;                          // reported, and not read since
  absl::Time next_sweep = absl::InfinitePast();  // of waiters past deadline
  auto stall = [&](const absl::Status& why) {
    if (!stalled && options_.stalled) options_.stalled(f.model, why);
    stalled = true;
    reader = nullptr;  // reopened from the position
    {
      MutexLock lock(mu_);
      f.stalled = std::string(why.message());
    }
    absl::SleepFor(kRetryWait);
  };
  while (!f.stop.load()) {
    if (reader == nullptr) {
      absl::StatusOr<uint64_t> joined = FromSnapshot(f, position, false);
      if (!joined.ok()) {
        stall(joined.status());
        continue;
      }
      position = *joined;
      absl::StatusOr<std::unique_ptr<LogReader>> opened =
          log_->Read(f.replication, position + 1, options_.reader);
      if (!opened.ok()) {
        stall(opened.status());
        continue;
      }
      reader = *std::move(opened);
      MutexLock lock(mu_);
      f.lag_records = reader->Pending();
    }
    absl::StatusOr<std::vector<LogMessage>> messages =
        reader->Next(kReadBatch, kReadWait);
    if (!messages.ok()) {
      stall(messages.status());
      continue;
    }
    stalled = false;
    int64_t applied_time = 0;  // of the last record applied in this batch
    for (const LogMessage& m : *messages) {
      if (m.sequence <= position) continue;  // redelivered
      if (m.sequence > position + 1) {
        // Records skipped: of other subjects of the stream, or trimmed
        // below a snapshot this replica must start from instead.
        absl::StatusOr<uint64_t> joined = FromSnapshot(f, position, true);
        if (!joined.ok()) {
          stall(joined.status());  // read again from the position
          break;
        }
        position = *joined;
        if (m.sequence <= position) continue;
      }
      Apply(f, m);
      position = m.sequence;
      applied_time = m.time_micros;
    }
    if (const absl::Time now = absl::Now(); now >= next_sweep) {
      next_sweep = now + kSweepEvery;
      SettleWaiters(f.model, now, [&](const Waiter& w) {
        const uint64_t stored = w.stored_at.load();
        if (stored == 0) {
          return absl::UnavailableError(absl::StrCat(
              "the log has not confirmed the record by the deadline; it may "
              "still be stored in stream ",
              Quoted(f.replication.stream)));
        }
        return absl::DeadlineExceededError(
            absl::StrCat("the record is stored at position ", stored,
                         " of stream ", Quoted(f.replication.stream),
                         " but this replica has not applied it yet"));
      });
    }
    MutexLock lock(mu_);
    if (reader != nullptr) {  // read to the end of the batch
      f.stalled.clear();
      f.read_at = absl::Now();
      f.lag_records = reader->Pending();
    }
    if (applied_time != 0) f.last_time_micros = applied_time;
    if (position != f.position) {
      f.position = position;
      applied_.SignalAll();
    }
  }
}

absl::StatusOr<uint64_t> ReplicaSet::FromSnapshot(Follower& f,
                                                  uint64_t position, bool gap) {
  absl::StatusOr<std::optional<SnapshotInfo>> kept = log_->SnapshotOf(f.model);
  if (!kept.ok()) {
    // Without a word of the snapshot, a gap may hide trimmed records.
    if (gap) return kept.status();
    return position;
  }
  if (!kept->has_value()) return position;
  const SnapshotInfo info = **kept;
  const bool trimmed = position + 1 < info.trimmed_below;
  if (info.position <= position || (position > 0 && !trimmed)) {
    return position;  // the stream holds what this replica needs
  }
  absl::StatusOr<std::pair<SnapshotInfo, std::string>> read =
      log_->ReadSnapshot(f.model);
  absl::Status s = read.status();
  if (s.ok()) {
    s = registry_->InstallReplica(read->first.position, f.model, read->second,
                                  f.replication);
  }
  if (!s.ok()) {
    if (options_.report) options_.report(f.model, info.position, s);
    // A replica with nothing trimmed from under it reads the stream.
    if (trimmed) return s;
    return position;
  }
  if (options_.joined) options_.joined(f.model, read->first.position);
  MutexLock lock(mu_);
  f.shared = std::max(f.shared, read->first.position);
  f.position = read->first.position;
  applied_.SignalAll();
  return read->first.position;
}

void ReplicaSet::ShareSnapshots() {
  const uint64_t every = options_.snapshot_every;
  std::vector<std::shared_ptr<Follower>> followers;
  {
    MutexLock lock(mu_);
    for (auto& [name, f] : followers_) followers.push_back(f);
  }
  for (const std::shared_ptr<Follower>& f : followers) {
    if (f->stop.load()) continue;
    absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(f->model);
    if (!model.ok()) continue;
    uint64_t shared;
    {
      MutexLock lock(mu_);
      if (absl::Now() < f->share_after) continue;
      shared = f->shared;
    }
    if ((*model)->lsn() < shared + every) continue;
    ShareSnapshot(*f);
  }
}

void ReplicaSet::ShareSnapshot(Follower& f) {
  const uint64_t every = options_.snapshot_every;
  auto failed = [&](const absl::Status& why) {
    if (options_.unshared) options_.unshared(f.model, why);
    MutexLock lock(mu_);
    f.share_after = absl::Now() + f.share_retry;
    f.share_retry = std::min(2 * f.share_retry, kLastShareRetry);
  };
  absl::StatusOr<std::optional<SnapshotInfo>> kept = log_->SnapshotOf(f.model);
  if (!kept.ok()) return failed(kept.status());
  const uint64_t previous = kept->has_value() ? (*kept)->position : 0;
  absl::StatusOr<std::pair<uint64_t, std::string>> file =
      registry_->ReplicaFile(f.model);
  if (!file.ok()) return;
  if (file->first < previous + every) {
    MutexLock lock(mu_);
    f.shared = std::max(f.shared, previous);  // another server's is recent
    return;
  }
  // The records since the previous snapshot stay in the stream, so that a
  // replica a little behind reads on rather than loading the whole state.
  const SnapshotInfo info{file->first, previous > 0 ? previous + 1 : 0};
  const absl::Status put =
      log_->PutSnapshot(f.model, info, file->second, options_.reader);
  if (!put.ok()) {
    if (!absl::IsAborted(put)) failed(put);
    return;
  }
  {
    MutexLock lock(mu_);
    f.shared = std::max(f.shared, info.position);
    f.share_retry = kFirstShareRetry;
  }
  if (info.trimmed_below > 0) {
    absl::Status trimmed = log_->Trim(f.replication, info.trimmed_below);
    if (!trimmed.ok() && options_.unshared) {
      options_.unshared(f.model, trimmed);  // the next snapshot trims it
    }
  }
}

void ReplicaSet::Apply(Follower& f, const LogMessage& m) {
  std::shared_ptr<Waiter> waiter;
  if (!m.call.empty()) {
    MutexLock lock(mu_);
    auto it = waiters_.find(m.call);
    if (it != waiters_.end()) {
      waiter = std::move(it->second);
      waiters_.erase(it);
    }
  }
  std::string produced;
  absl::string_view payload = m.data;
  absl::Status s;
  bool applies = true;
  if (m.format == MessageFormat::kProducer) {
    s = ProducerRecord(f, m, produced);
    payload = produced;
    applies = !produced.empty();
  }
  if (s.ok() && applies) {
    AppliedBatch* out = waiter != nullptr ? &waiter->applied : nullptr;
    s = registry_->ApplyReplicated(
        m.sequence, f.model, f.replication.creation, payload,
        [this, out](Model& model, TrainBatch& batch, const Trainer& trainer) {
          return options_.learn(model, batch, trainer, out);
        });
  }
  if (!s.ok() && options_.report) options_.report(f.model, m.sequence, s);
  if (waiter == nullptr) return;
  // The replica may have skipped the record: it is unavailable, or the
  // model is gone.
  if (s.ok()) {
    absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(f.model);
    const bool deletes = !model.ok() && absl::IsNotFound(model.status());
    if (!model.ok() && !deletes) {
      s = absl::UnavailableError(model.status().message());
    }
  }
  if (!s.ok()) return waiter->Settle(s);
  waiter->applied.position = m.sequence;
  waiter->Settle(std::move(waiter->applied));
}

absl::Status ReplicaSet::ProducerRecord(const Follower& f, const LogMessage& m,
                                        std::string& record) {
  // How the examples' labels read depends on the model's kind; a replica
  // without the model (unavailable, deleted) applies nothing of it.
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(f.model);
  if (!model.ok()) return absl::OkStatus();
  absl::StatusOr<ProducerBatch> batch =
      options_.read_producer(m.format_name, m.data, (*model)->multiclass());
  if (!batch.ok()) return batch.status();
  for (const absl::Status& part : batch->left_out) {
    if (options_.report) options_.report(f.model, m.sequence, part);
  }
  TrainBatch train;
  train.source = batch->source;
  train.first_sequence = batch->first_sequence;
  train.request = batch->request;
  train.now_micros = m.time_micros;
  record = TrainRecord(train);
  return absl::OkStatus();
}

std::string ReplicaSet::NextToken() {
  return absl::StrCat(options_.reader, "-", absl::Hex(incarnation_), "-",
                      ++calls_);
}

void ReplicaSet::Publish(const std::string& model,
                         const Replication& replication,
                         absl::string_view record, absl::Time deadline,
                         Applied done) {
  auto waiter = std::make_shared<Waiter>();
  waiter->model = model;
  waiter->deadline = deadline;
  waiter->done = std::move(done);
  {
    MutexLock lock(mu_);
    if (!stopping_ && followers_.contains(model)) {
      waiter->token = NextToken();
      waiters_[waiter->token] = waiter;
    }
  }
  if (waiter->token.empty()) {
    return waiter->Settle(absl::UnavailableError(
        absl::StrCat("this server does not follow model ", Quoted(model))));
  }
  log_->Publish(replication, record, waiter->token, deadline,
                [waiter](absl::StatusOr<uint64_t> sequence) {
                  if (sequence.ok()) {
                    waiter->stored_at.store(*sequence);
                  } else {
                    waiter->Settle(sequence.status());
                  }
                });
}

absl::StatusOr<AppliedBatch> ReplicaSet::PublishAndWait(
    const std::string& model, const Replication& replication,
    absl::string_view record, absl::Time deadline) {
  struct Result {
    Mutex mu;
    CondVar settled;
    std::optional<absl::StatusOr<AppliedBatch>> value ABSL_GUARDED_BY(mu);
  };
  auto result = std::make_shared<Result>();
  Publish(model, replication, record, deadline,
          [result](absl::StatusOr<AppliedBatch> applied) {
            MutexLock lock(result->mu);
            result->value = std::move(applied);
            result->settled.SignalAll();
          });
  MutexLock lock(result->mu);
  while (!result->value.has_value()) result->settled.Wait(result->mu);
  return *std::move(result->value);
}

absl::StatusOr<std::shared_ptr<Model>> ReplicaSet::Create(
    absl::string_view name, const ModelSpec& spec,
    const std::vector<std::string>& classes, absl::Time deadline) {
  if (!IsReplicated(spec)) {
    return absl::InvalidArgumentError("the spec names no stream");
  }
  ModelSpec drawn = spec;
  {
    MutexLock lock(mu_);
    drawn.replication.creation = NextToken();
  }
  const Replication& replication = drawn.replication;
  absl::StatusOr<std::string> record =
      registry_->CreationRecord(name, drawn, classes);
  if (!record.ok()) return record.status();
  if (absl::Status s = log_->EnsureStream(replication); !s.ok()) return s;
  absl::StatusOr<uint64_t> claim = log_->Claim(name, replication, deadline);
  if (absl::IsAlreadyExists(claim.status())) {
    if (std::optional<uint64_t> abandoned = Abandoned(name)) {
      claim = log_->Claim(name, replication, deadline, *abandoned);
      if (claim.ok() && options_.taken_over) {
        options_.taken_over(name, *abandoned);
      }
    }
  }
  if (!claim.ok()) return claim.status();
  // An earlier model of the name left its records and its snapshot: a
  // replica that reads the stream from the start must not bring that
  // model back meanwhile.
  absl::Status cleared = log_->Trim(replication, 0);
  if (cleared.ok()) cleared = log_->DropSnapshot(name);
  if (!cleared.ok()) {
    log_->Release(name).IgnoreError();
    return cleared;
  }
  const std::string model(name);
  Follow(model, replication, *claim, deadline);
  absl::StatusOr<AppliedBatch> applied =
      PublishAndWait(model, replication, *record, deadline);
  if (!applied.ok()) {
    if (absl::IsUnavailable(applied.status())) {
      log_->Release(name).IgnoreError();
    }
    return applied.status();
  }
  return registry_->Get(name);
}

std::optional<uint64_t> ReplicaSet::Abandoned(absl::string_view model) const {
  uint64_t revision;
  {
    MutexLock lock(mu_);
    auto it = followers_.find(model);
    if (it == followers_.end()) return std::nullopt;
    const Follower& f = *it->second;
    // Read to the stream's end well after the creator gave up.
    if (!f.stalled.empty() || f.lag_records > 0 ||
        f.read_at < f.creating_until + kAbandonedAfter) {
      return std::nullopt;
    }
    revision = f.revision;
  }
  for (const ModelRegistry::Replica& r : registry_->Replicas()) {
    if (r.name == model) return std::nullopt;  // created
  }
  return revision;
}

absl::Status ReplicaSet::CheckUnclaimed(absl::string_view model) const {
  absl::Status s = log_->CheckFree(model);
  if (!absl::IsAlreadyExists(s)) return s;
  return absl::AlreadyExistsError(absl::StrCat(
      s.message(), " (this server may not have caught up with it yet)"));
}

absl::Status ReplicaSet::NotHeldYet(absl::string_view name,
                                    absl::Status status) const {
  if (!absl::IsNotFound(status) || name.empty()) return status;
  // An alias whose model is gone says so.
  if (registry_->Aliases().count(name) > 0) return status;
  if (!absl::IsNotFound(registry_->Lookup(name).status())) return status;
  if (!absl::IsAlreadyExists(log_->CheckFree(name))) return status;
  return absl::UnavailableError(absl::StrCat(
      "the catalog lists ", Quoted(name),
      ", but this server does not hold it yet (it is catching up with the "
      "catalog and the model's stream); retry, here or on another replica"));
}

void ReplicaSet::Train(const Model& model, const TrainBatch& batch,
                       absl::Time deadline, Applied done) {
  Publish(model.name(), model.spec().replication, TrainRecord(batch), deadline,
          std::move(done));
}

absl::StatusOr<AppliedBatch> ReplicaSet::Learn(const Model& model,
                                               const TrainBatch& batch,
                                               absl::Time deadline) {
  return PublishAndWait(model.name(), model.spec().replication,
                        TrainRecord(batch), deadline);
}

absl::Status ReplicaSet::Remember(const Model& model,
                                  const RememberBatch& batch,
                                  absl::Time deadline) {
  return PublishAndWait(model.name(), model.spec().replication,
                        RememberRecord(batch), deadline)
      .status();
}

absl::Status ReplicaSet::SetWeights(const Model& model,
                                    absl::string_view class_label,
                                    absl::Span<const double> w, double b,
                                    absl::Time deadline) {
  return PublishAndWait(model.name(), model.spec().replication,
                        SetWeightsRecord(class_label, w, b), deadline)
      .status();
}

absl::Status ReplicaSet::RollBack(const Model& model, absl::Time deadline) {
  if (absl::Status s = model.CanRollBack(); !s.ok()) return s;
  return PublishAndWait(model.name(), model.spec().replication,
                        RollBackRecord(), deadline)
      .status();
}

absl::Status ReplicaSet::SetDrift(const Model& model, const DriftOptions& drift,
                                  absl::Time deadline) {
  if (absl::Status s = model.CanSetDrift(drift); !s.ok()) return s;
  return PublishAndWait(model.name(), model.spec().replication,
                        SetDriftRecord(drift), deadline)
      .status();
}

absl::Status ReplicaSet::Delete(absl::string_view name, absl::Time deadline) {
  absl::StatusOr<std::shared_ptr<Model>> model = registry_->Get(name);
  std::optional<Replication> replication;
  if (model.ok()) {
    if (IsReplicated((*model)->spec())) {
      replication = (*model)->spec().replication;
    }
  } else {
    for (const ModelRegistry::Replica& r : registry_->Replicas()) {
      if (r.name == name) replication = r.replication;
    }
  }
  if (!replication.has_value()) {
    return model.ok() ? absl::FailedPreconditionError("not replicated")
                      : model.status();
  }
  if (absl::Status s = registry_->CheckUnaliased(name); !s.ok()) return s;
  const std::string key(name);
  absl::StatusOr<AppliedBatch> applied =
      PublishAndWait(key, *replication, DeleteRecord(), deadline);
  if (!applied.ok() && !absl::IsUnavailable(applied.status())) {
    return applied.status();
  }
  uint64_t revision = 0;
  {
    MutexLock lock(mu_);
    if (auto it = followers_.find(key); it != followers_.end()) {
      revision = it->second->revision;
    }
  }
  if (absl::Status s = log_->Release(name); !s.ok()) return s;
  Unfollow(key, revision);
  // A failure leaves the snapshot to the next model of the name, which
  // drops it before it starts.
  log_->DropSnapshot(name).IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Model>> ReplicaSet::Rebuild(
    absl::string_view name, absl::Time deadline) {
  const std::string model(name);
  std::optional<Replication> replication;
  uint64_t revision = 0;
  absl::Time creating_until;
  {
    MutexLock lock(mu_);
    if (auto it = followers_.find(model); it != followers_.end()) {
      replication = it->second->replication;
      revision = it->second->revision;
      creating_until = it->second->creating_until;
    }
  }
  if (!replication.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this server does not follow a replicated model ", Quoted(model)));
  }
  if (registry_->Get(model).ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the replica of ", Quoted(model),
                     " is available; only an unavailable one is rebuilt"));
  }
  Unfollow(model, revision);
  Follow(model, *replication, revision, creating_until);
  const auto until = SteadyDeadline(deadline);
  MutexLock lock(mu_);
  while (true) {
    absl::StatusOr<std::shared_ptr<Model>> rebuilt = registry_->Get(model);
    if (rebuilt.ok()) return rebuilt;
    if (stopping_ || !applied_.WaitUntil(mu_, until)) {
      return absl::DeadlineExceededError(
          absl::StrCat("the replica of ", Quoted(model),
                       " is not rebuilt yet: ", rebuilt.status().message()));
    }
  }
}

absl::Status ReplicaSet::WaitFor(absl::string_view model, uint64_t position,
                                 absl::Time deadline) {
  const auto until = SteadyDeadline(deadline);
  MutexLock lock(mu_);
  while (true) {
    if (stopping_) {
      return absl::UnavailableError("this server is shutting down");
    }
    // A follower may be about to start (the catalog is read meanwhile).
    auto it = followers_.find(model);
    const uint64_t at = it == followers_.end() ? 0 : it->second->position;
    if (at >= position) return absl::OkStatus();
    if (!applied_.WaitUntil(mu_, until)) {
      return absl::DeadlineExceededError(
          absl::StrCat("this replica of ", Quoted(model), " is at position ",
                       at, ", not yet ", position));
    }
  }
}

ReplicaSet::Lag ReplicaSet::LagOf(absl::string_view model) const {
  MutexLock lock(mu_);
  auto it = followers_.find(model);
  if (it == followers_.end()) {
    Lag lag;
    lag.stalled = "this server does not follow the model's stream yet";
    return lag;
  }
  const Follower& f = *it->second;
  Lag lag;
  lag.position = f.position;
  lag.records = f.lag_records;
  lag.stalled = f.stalled;
  const absl::Time now = absl::Now();
  if (lag.records > 0) {
    // Since the first record not applied was stored: no later than the
    // last one applied, or than this run's start of reading.
    const absl::Time since = f.last_time_micros > 0
                                 ? absl::FromUnixMicros(f.last_time_micros)
                                 : f.read_at;
    lag.seconds =
        absl::ToDoubleSeconds(std::max(now - since, absl::ZeroDuration()));
  }
  if (!lag.stalled.empty()) {
    lag.seconds = std::max(lag.seconds, absl::ToDoubleSeconds(now - f.read_at));
  }
  return lag;
}

}  // namespace halfspace
