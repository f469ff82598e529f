// Mutexes that clang's thread-safety analysis understands, over the
// standard library's.
//
// A member guarded by one says so (ABSL_GUARDED_BY(mu_)), and a function
// that expects it held says so (ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)); built
// with clang and -Wthread-safety, a read or write of the member without
// the mutex is a compile error. absl::Mutex carries the same annotations,
// but these go through pthreads, which ThreadSanitizer models even with an
// uninstrumented Abseil (Debian's is), so the TSan build sees every lock.
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

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "absl/base/thread_annotations.h"

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

// Many readers or one writer.
class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }
  // For the analysis only: the caller holds the mutex, exclusively.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  std::shared_mutex mu_;
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
