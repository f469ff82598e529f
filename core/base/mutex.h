// Mutexes that clang's thread-safety analysis understands: Mutex over the
// standard library's, SharedMutex over Abseil's (below).
//
// A member guarded by one says so (ABSL_GUARDED_BY(mu_)), and a function
// that expects it held says so (ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)); built
// with clang and -Wthread-safety, a read or write of the member without
// the mutex is a compile error. The standard library's go through pthreads,
// which ThreadSanitizer models even with an uninstrumented Abseil (Debian's
// is), so the TSan build takes them for every lock.
//
//   Mutex mu_;                    MutexLock lock(mu_);
//   SharedMutex mu_;              ReaderMutexLock / WriterMutexLock
//   CondVar cv_;                  while (!ready_) cv_.Wait(mu_);
//
// A lock that outlives one function (Model::Writer holds its model's for
// the Writer's life) cannot be followed by the analysis: there the
// function says what it assumes with AssertHeld(), which checks nothing at
// run time.

#ifndef HALFSPACE_CORE_BASE_MUTEX_H_
#define HALFSPACE_CORE_BASE_MUTEX_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace halfspace {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // For the analysis only: the caller holds the mutex.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Many readers or one writer, in 8 bytes: absl::Mutex, which lets no new
// reader in while a writer waits. A server keeps one per model, and for a
// model of a hundred weights std::shared_mutex's 56 bytes are 7% of it. Built
// with ThreadSanitizer, it is std::shared_mutex instead (see above: TSan
// sees through pthreads, not Debian's Abseil).
//
// A thread must not take a SharedMutex it holds, not even shared: behind a
// waiting writer, its second ReaderLock would wait for itself. Built with
// AddressSanitizer (as every test runs once), taking one again aborts.
class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    Taking();
#ifdef ABSL_HAVE_THREAD_SANITIZER
    mu_.lock();
#else
    mu_.Lock();
#endif
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    mu_.unlock();
#else
    mu_.Unlock();
#endif
    Released();
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    Taking();
#ifdef ABSL_HAVE_THREAD_SANITIZER
    mu_.lock_shared();
#else
    mu_.ReaderLock();
#endif
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    mu_.unlock_shared();
#else
    mu_.ReaderUnlock();
#endif
    Released();
  }
  // For the analysis only: the caller holds the mutex, exclusively.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
  // The SharedMutexes this thread holds.
  static std::vector<const SharedMutex*>& Held() {
    thread_local std::vector<const SharedMutex*> held;
    return held;
  }
  void Taking() {
    std::vector<const SharedMutex*>& held = Held();
    if (std::find(held.begin(), held.end(), this) != held.end()) {
      std::fprintf(stderr,
                   "SharedMutex %p taken again by a thread that "
                   "holds it\n",
                   static_cast<const void*>(this));
      std::abort();
    }
    held.push_back(this);
  }
  void Released() {
    std::vector<const SharedMutex*>& held = Held();
    auto it = std::find(held.begin(), held.end(), this);
    if (it != held.end()) held.erase(it);
  }
#else
  void Taking() {}
  void Released() {}
#endif

#ifdef ABSL_HAVE_THREAD_SANITIZER
  std::shared_mutex mu_;
#else
  absl::Mutex mu_;
#endif
};

// Holds a Mutex, or a SharedMutex exclusively, for its scope.
template <typename M>
class ABSL_SCOPED_LOCKABLE ExclusiveLock {
 public:
  explicit ExclusiveLock(M& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.Lock();
  }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;
  ~ExclusiveLock() ABSL_UNLOCK_FUNCTION() { mu_.Unlock(); }

 private:
  M& mu_;
};
using MutexLock = ExclusiveLock<Mutex>;
using WriterMutexLock = ExclusiveLock<SharedMutex>;

// Holds a SharedMutex for its scope, shared with other readers.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) ABSL_SHARED_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_.ReaderLock();
  }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_.ReaderUnlock(); }

 private:
  SharedMutex& mu_;
};

// A condition to wait for under a Mutex. Waits may wake without a signal:
// wait in a loop on the condition itself.
class CondVar {
 public:
  // Releases `mu`, waits for a signal and takes `mu` again.
  void Wait(Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, but gives up at `deadline`: false once it has passed.
  bool WaitUntil(Mutex& mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool signalled =
        cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CORE_BASE_MUTEX_H_
