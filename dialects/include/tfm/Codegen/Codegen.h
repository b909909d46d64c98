//===- Codegen.h - the tfm_codegen dialect ----------------------*- C++ -*-===//
//
// The lowering configuration of tfm ops (see CodegenDialect.td): its
// attributes, the discardable attributes that carry them, and the scratch
// buffers ops declare for the frame plan.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CODEGEN_H
#define TFM_CODEGEN_CODEGEN_H

#include "tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include <cstdint>
#include <optional>

#include "tfm/Codegen/CodegenEnums.h.inc"

namespace mlir::tfm::codegen {

/// The largest values of the dynamic dimensions of a function's tensors:
/// the frontend's tensors are [batch, seq, ...], only those two are
/// dynamic.
struct FrameBounds {
  int64_t maxBatch = 1;
  int64_t maxSeqLen = 1;

  /// The largest value of dimension `i` of the ranked tensor `type`: a
  /// dynamic one is the batch (dimension 0) or a sequence ([batch, seq, d]
  /// and per-head [batch, heads, seq, dk] alike).
  uint64_t dim(Type type, unsigned i) const;
  /// The most elements of the ranked tensor `type` (saturating).
  uint64_t elements(Type type) const;
};

/// The module's tfm.max_batch and tfm.max_seq_len, if both are positive
/// i64s.
std::optional<FrameBounds> moduleFrameBounds(ModuleOp module);

/// One scratch buffer an op's code takes: what it holds, and its floats at
/// the bounds' maxima.
struct ScratchBuffer {
  FrameBuffer kind;
  uint64_t floats;
};

/// A tfm.feature_map call that maps at least this many rows (batch x
/// sequence) transposes each W_h once, into its features_transposed
/// scratch, and maps blocks of rows as one register-tiled product with it;
/// a call with fewer (a decode step's) takes each row's dot products with
/// W_h's rows, as the transposition would cost more than they do. An op
/// whose calls never have that many takes no such scratch.
constexpr uint64_t kFeatureMapTransposeRows = 32;

} // namespace mlir::tfm::codegen

// The attributes before the dialect: its discardable-attribute helpers
// return them.
#define GET_ATTRDEF_CLASSES
#include "tfm/Codegen/CodegenAttrs.h.inc"

#include "tfm/Codegen/CodegenDialect.h.inc"

#include "tfm/Codegen/CodegenInterfaces.h.inc"

namespace mlir::tfm::codegen {

/// The discardable attributes, by the names the dialect gives them.
using GemmTilingName = TfmCodegenDialect::GemmTilingAttrHelper;
using AttentionTilingName = TfmCodegenDialect::AttentionTilingAttrHelper;
using FrameName = TfmCodegenDialect::FrameAttrHelper;
using FrameFloatsName = TfmCodegenDialect::FrameFloatsAttrHelper;
using InPlaceName = TfmCodegenDialect::InPlaceAttrHelper;

/// An op's `tfm_codegen.gemm_tiling` / `tfm_codegen.attention_tiling`, or
/// null.
inline GemmTilingAttr getGemmTiling(Operation *op) {
  return op->getAttrOfType<GemmTilingAttr>(GemmTilingName::getNameStr());
}
inline AttentionTilingAttr getAttentionTiling(Operation *op) {
  return op->getAttrOfType<AttentionTilingAttr>(
      AttentionTilingName::getNameStr());
}
/// An op's `tfm_codegen.frame` slots (none when it has no frame).
SmallVector<FrameSlotAttr> getFrameSlots(Operation *op);
/// A function's `tfm_codegen.frame_floats`, if planned.
std::optional<int64_t> getFrameFloats(Operation *func);
/// Whether tfm-plan-memory marked a tfm.rotary `tfm_codegen.in_place`.
inline bool isRotatedInPlace(Operation *op) {
  return op->hasAttr(InPlaceName::getNameStr());
}

} // namespace mlir::tfm::codegen

#endif // TFM_CODEGEN_CODEGEN_H
