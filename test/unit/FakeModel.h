//===- FakeModel.h - what FakeModel.cpp's forward pass saw ------*- C++ -*-===//

#ifndef TFM_TEST_UNIT_FAKEMODEL_H
#define TFM_TEST_UNIT_FAKEMODEL_H

#include <atomic>
#include <cstdint>
#include <string>

namespace tfm::test {

/// The thread count of the pool the fake model's last forward pass ran on.
extern std::atomic<int64_t> fakeForwardThreads;

/// The ISA of the fake model's last limitSimd call ("" if none): it has
/// only an AVX2 target.
extern std::string fakeSimdLimit;

} // namespace tfm::test

#endif // TFM_TEST_UNIT_FAKEMODEL_H
