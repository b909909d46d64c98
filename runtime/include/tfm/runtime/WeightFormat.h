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

/// The scale of an int8 block (WeightFormat::Int8) of `n` values at `x`:
/// max |x| / 127.
float int8BlockScale(const float *x, int64_t n);

/// `x` as an int8 value of a block whose scale is `scale`: rint(x / scale)
/// held to [-127, 127] (0 when the scale is 0, and for a NaN); times
/// `scale`, the value the weight keeps.
int8_t int8Value(float x, float scale);

/// The scale of an int8 block whose `n` values at `converted` are already
/// the values it keeps (each q x s in f32, as convertWeight leaves them):
/// one whose products give every value back, the q's being
/// int8Value(value, scale) (the block's own s, or a neighbour of it with
/// the same products). What packs an int8 weight's panels reads.
float int8ScaleOfConverted(const float *converted, int64_t n);

/// Rounds the [rows, cols] weight `w` in place to the values `format`
/// keeps. False for f16 when a value rounds beyond 65504 (or is infinite):
/// `*at` is then its index, the values before it converted, it and the
/// rest as they were.
bool convertWeight(float *w, int64_t rows, int64_t cols, WeightFormat format,
                   size_t *at);

} // namespace tfm::rt

#endif // TFM_RUNTIME_WEIGHTFORMAT_H
