//===- AttentionTiling.h - the tiles of a blocked attention -----*- C++ -*-===//
//
// The choice tfm-select-attention-tiling records on each dot-product
// tfm.attention and the Highway backend follows.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_ATTENTIONTILING_H
#define TFM_TRANSFORMS_ATTENTIONTILING_H

#include <cstdint>
#include <string>

namespace mlir::tfm {

/// What #tfm_codegen.attention_tiling holds, and why.
struct AttentionTiling {
  /// Query rows per task where the code runs with 512-, 256- or 128-bit
  /// vectors.
  int64_t queryRows512 = 8;
  int64_t queryRows256 = 2;
  int64_t queryRows128 = 2;
  /// Keys per block: one online-softmax update per row and block.
  int64_t keyBlock = 64;
  /// The reasons, for a remark.
  std::string why;
};

/// The tiles of a blocked attention of at most `maxQueryRows` query rows
/// and `maxKeys` keys (a negative bound: unknown): 8 query rows per task
/// with AVX-512, 2 with narrower vectors, at most maxQueryRows; blocks of
/// 64 keys, or of maxKeys rounded up to a multiple of 16 where fewer.
AttentionTiling chooseAttentionTiling(int64_t maxQueryRows, int64_t maxKeys);

} // namespace mlir::tfm

#endif // TFM_TRANSFORMS_ATTENTIONTILING_H
