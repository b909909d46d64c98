//===- LowerVectors.cpp - vector contractions -> FMAs, transfers -> loads
//--===//
//
// After bufferization: the 8 x 32 x 1 contractions tfm-vectorize-gemm left
// become outer products and then FMAs of a broadcast row element with the
// two 16-lane halves of a panel row; the 2-D accumulator reads and writes
// become 1-D loads and stores that the LLVM conversion takes. In stages, as
// upstream recommends: all the patterns in one set do not converge quickly.
//
//===----------------------------------------------------------------------===//

#include "TransformScript.h"
#include "tfm/Lowering/LLVMBackend.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMLOWERVECTORS
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr const char *kScript = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // Canonicalization gathers the accumulator's row loads into one 2-D
    // from_elements, which the LLVM conversion does not take: back to rows
    // (and no canonicalization after, which would gather them again).
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.unroll_from_elements
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    transform.yield
  }
}
)mlir";

struct LowerVectorsPass
    : mlir::tfm::impl::TfmLowerVectorsBase<LowerVectorsPass> {
  void runOnOperation() override {
    OwningOpRef<ModuleOp> script = parseTransformScript(&getContext(), kScript);
    if (!script || failed(applyTransformScript(getOperation(), *script)))
      signalPassFailure();
  }
};

} // namespace
