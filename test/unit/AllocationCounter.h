//===- AllocationCounter.h - counts heap allocations ------------*- C++ -*-===//
//
// A test binary linking AllocationCounter.cpp counts every heap allocation
// of the process, so a test can check that a forward pass allocates
// nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_ALLOCATIONCOUNTER_H
#define TFM_TEST_UNIT_ALLOCATIONCOUNTER_H

#include <cstdint>

namespace tfm::test {

/// Heap allocations so far: calls of malloc, calloc, realloc,
/// aligned_alloc, posix_memalign and memalign (operator new among them).
uint64_t allocationCount();

} // namespace tfm::test

#endif // TFM_TEST_UNIT_ALLOCATIONCOUNTER_H
