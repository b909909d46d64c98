//===- WeightFormat.h - GEMM weights rounded to 16 or 8 bits ----*- C++ -*-===//
//
// Contract section 10: a weight compiled with --weight-dtype keeps the
// values its format can hold. They are computed here, once, at load, as
// float32 values (the products the generated code runs read them).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_WEIGHTFORMAT_H
#define TFM_RUNTIME_WEIGHTFORMAT_H

#include "tfm/runtime/Model.h"

#include <cstddef>
#include <cstdint>

namespace tfm::rt {

/// `x` rounded to the nearest bfloat16 (ties to even), as a float; NaN
/// stays NaN.
float roundToBFloat16(float x);

/// `x` rounded to the nearest IEEE binary16 (ties to even, subnormals
/// included), as a float: +-infinity beyond the largest finite half.
float roundToHalf(float x);

/// The bfloat16 nearest `x` (roundToBFloat16), as its 16 bits.
uint16_t bfloat16Bits(float x);

/// The IEEE binary16 nearest `x` (roundToHalf; infinity beyond 65504), as
/// its 16 bits.
uint16_t halfBits(float x);

/// Rounds the [rows, cols] weight `w` in place to the values `format`
/// keeps. False for f16 when a value rounds beyond 65504 (or is infinite):
/// `*at` is then its index, the values before it converted, it and the
/// rest as they were.
bool convertWeight(float *w, int64_t rows, int64_t cols, WeightFormat format,
                   size_t *at);

} // namespace tfm::rt

#endif // TFM_RUNTIME_WEIGHTFORMAT_H
