//===- AllocationCounter.cpp - counts heap allocations --------------------===//
//
// Every allocator of the C library is counted (malloc, calloc, realloc,
// aligned_alloc, posix_memalign, memalign): operator new of libstdc++
// allocates through malloc, and the runtime's arena and aligned buffers
// through std::aligned_alloc. Without sanitizers the test binary defines
// them, over glibc's own entry points (__libc_*); under AddressSanitizer,
// which defines them itself, its allocation hook counts instead.
//
//===----------------------------------------------------------------------===//

#include "AllocationCounter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

namespace {
std::atomic<uint64_t> allocations{0};
void count() { allocations.fetch_add(1, std::memory_order_relaxed); }
} // namespace

uint64_t tfm::test::allocationCount() { return allocations.load(); }

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFM_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TFM_TEST_ASAN 1
#endif

#ifdef TFM_TEST_ASAN

#include <sanitizer/allocator_interface.h>

namespace {
void onMalloc(const volatile void *, size_t) { count(); }
void onFree(const volatile void *) {}
// Installed before main, so every allocation the tests make is seen.
[[maybe_unused]] const int installed =
    __sanitizer_install_malloc_and_free_hooks(onMalloc, onFree);
} // namespace

#else

extern "C" {
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void __libc_free(void *p);

void *malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void *calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void *aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void *memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
  count();
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void *p = __libc_memalign(alignment, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}
void free(void *p) { __libc_free(p); }
}

#endif
