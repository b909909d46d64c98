//===- AllocationCounter.h - counts heap allocations ------------*- C++ -*-===//
//
// The test binary replaces the global operator new, so a test can check that
// a forward pass allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_ALLOCATIONCOUNTER_H
#define TFM_TEST_UNIT_ALLOCATIONCOUNTER_H

#include <cstdint>

namespace tfm::test {

/// Calls of operator new (any form but the aligned ones) so far.
uint64_t allocationCount();

} // namespace tfm::test

#endif // TFM_TEST_UNIT_ALLOCATIONCOUNTER_H
