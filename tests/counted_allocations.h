// Counts every allocation of the test binary whose one test file includes
// this header (it replaces the global operator new and delete, so it may be
// included by one file of a binary only): the bytes held now, and the most
// held since the peak was last reset, so that memory is measured, not
// assumed.

#ifndef HALFSPACE_TESTS_COUNTED_ALLOCATIONS_H_
#define HALFSPACE_TESTS_COUNTED_ALLOCATIONS_H_

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

// Under AddressSanitizer, libraries built without it (gRPC's) allocate with
// the sanitizer's operator new, and a replacement here would free what it
// never allocated: a test binary of such libraries defines
// HALFSPACE_ALLOCATIONS_ACROSS_LIBRARIES first, and then, under ASan,
// nothing is replaced and nothing counted (kCounted is false).
#if defined(__SANITIZE_ADDRESS__) && \
    defined(HALFSPACE_ALLOCATIONS_ACROSS_LIBRARIES)
#define HALFSPACE_COUNT_ALLOCATIONS 0
#else
#define HALFSPACE_COUNT_ALLOCATIONS 1
#endif

namespace halfspace::allocations {

inline constexpr bool kCounted = HALFSPACE_COUNT_ALLOCATIONS;
inline std::atomic<int64_t> live{0};
inline std::atomic<int64_t> peak{0};

// The bytes allocated with operator new and not yet freed.
inline int64_t Live() { return live.load(); }

// The most held at once while `call` ran, above what was held before.
template <typename Call>
int64_t PeakGrowth(Call call) {
  const int64_t before = live.load();
  peak.store(before);
  call();
  return peak.load() - before;
}

}  // namespace halfspace::allocations

#if HALFSPACE_COUNT_ALLOCATIONS
void* operator new(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  const int64_t bytes = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t now = halfspace::allocations::live.fetch_add(bytes) + bytes;
  int64_t peak = halfspace::allocations::peak.load(std::memory_order_relaxed);
  while (now > peak &&
         !halfspace::allocations::peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  halfspace::allocations::live.fetch_sub(
      static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
#endif

#endif  // HALFSPACE_TESTS_COUNTED_ALLOCATIONS_H_
