//===- FakeModel.h - what FakeModel.cpp's forward pass saw ------*- C++ -*-===//

#ifndef TFM_TEST_UNIT_FAKEMODEL_H
#define TFM_TEST_UNIT_FAKEMODEL_H

#include <atomic>
#include <cstdint>

namespace tfm::test {

/// The thread count of the pool the fake model's last forward pass ran on.
extern std::atomic<int64_t> fakeForwardThreads;

} // namespace tfm::test

#endif // TFM_TEST_UNIT_FAKEMODEL_H
