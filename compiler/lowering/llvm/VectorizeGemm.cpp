//===- VectorizeGemm.cpp - register-blocked, vectorised GEMMs -------------===//
//
// Each `tfm.gemm` contraction (x [lead..., blocks, 8, K] times packed panels
// [P, K, 32]; convert-tfm-to-linalg padded the rows to whole blocks of 8)
// becomes a loop nest around an 8 x 32 register tile: one block of 8 rows,
// one panel of 32 columns, and k one at a time, vectorised so the
// accumulators stay in 16 zmm registers (AVX-512) across the k loop. The
// steps are upstream transform ops, the script below.
//
//===----------------------------------------------------------------------===//

#include "TransformScript.h"
#include "tfm/Lowering/LLVMBackend.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMVECTORIZEGEMM
#include "tfm/Lowering/LLVMPasses.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Tiles of 8 rows (one row block: every block is full, convert-tfm-to-linalg
/// pads the rows) x 1 panel x 32 columns, in one scf.forall over the leading
/// dimensions, row blocks and panels (each tile writes its own part of the
/// result: tfm-outline-parallel-loops runs them on the thread pool; the
/// pass then puts the panels outermost, see panelsOutermost); the unit
/// dimensions folded away; k one step at a time; vectorised, the
/// accumulator hoisted.
constexpr const char *kScript = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %gemms = transform.structured.match ops{["linalg.generic"]} attributes{tfm.gemm = @OUTER@ : i64} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %gemms : !transform.any_op {
    ^bb0(%gemm: !transform.any_op):
      %tile, %tiles = transform.structured.tile_using_forall %gemm tile_sizes [@ONES@1, 8, 1, 32, 0]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      transform.yield
    }
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_reshapes
    } : !transform.any_op
    // The register tiles, 8 x 32 over all of k (the only static 8 x 32
    // generics there are), one k at a time.
    %tiles = transform.structured.match ops{["linalg.generic"]} filter_result_type = tensor<8x32xf32> in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %tiles : !transform.any_op {
    ^bb0(%t: !transform.any_op):
      %kTile, %kLoop = transform.structured.tile_using_for %t tile_sizes [0, 0, 1]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      transform.yield
    }
    transform.foreach %funcs : !transform.any_op {
    ^bb0(%func: !transform.any_op):
      %vectorized = transform.structured.vectorize_children_and_apply_patterns %func
          : (!transform.any_op) -> !transform.any_op
      transform.apply_patterns to %vectorized {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      transform.apply_cse to %vectorized : !transform.any_op
      %loops = transform.structured.match ops{["scf.for"]} in %vectorized : (!transform.any_op) -> !transform.any_op
      transform.foreach %loops : !transform.any_op {
      ^bb0(%loop: !transform.any_op):
        transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
        transform.yield
      }
      transform.apply_cse to %vectorized : !transform.any_op
      transform.yield
    }
    transform.yield
  }
}
)mlir";

/// kScript for GEMMs with `outer` leading dimensions before the rows.
std::string scriptFor(int64_t outer) {
  std::string script = kScript, ones;
  for (int64_t i = 0; i < outer; ++i)
    ones += "1, ";
  auto replace = [&](StringRef key, const std::string &value) {
    size_t at = script.find(key.str());
    script.replace(at, key.size(), value);
  };
  replace("@ONES@", ones);
  replace("@OUTER@", std::to_string(outer));
  return script;
}

/// The tile loop (lead..., row blocks, panels) as (panels, lead..., row
/// blocks): consecutive iterations, which run one after the other on a
/// thread, then share a panel of weights (K x 32 floats, read from L2 by
/// every row block) instead of streaming all the weights from memory for
/// each row block. Iterations are independent: only their order changes.
void panelsOutermost(RewriterBase &rewriter, scf::ForallOp loop) {
  int64_t rank = loop.getRank();
  auto rotate = [&](SmallVector<OpFoldResult> values) {
    std::rotate(values.begin(), values.end() - 1, values.end());
    return values;
  };
  rewriter.setInsertionPoint(loop);
  auto rotated = scf::ForallOp::create(
      rewriter, loop.getLoc(), rotate(loop.getMixedLowerBound()),
      rotate(loop.getMixedUpperBound()), rotate(loop.getMixedStep()),
      loop.getOutputs(), std::nullopt);
  Block *body = rotated.getBody();
  rewriter.eraseOp(body->getTerminator());
  SmallVector<Value> arguments;
  for (int64_t d = 0; d < rank; ++d)
    arguments.push_back(body->getArgument((d + 1) % rank));
  for (BlockArgument output : rotated.getRegionIterArgs())
    arguments.push_back(output);
  rewriter.mergeBlocks(loop.getBody(), body, arguments);
  rewriter.replaceOp(loop, rotated.getResults());
}

struct VectorizeGemmPass
    : mlir::tfm::impl::TfmVectorizeGemmBase<VectorizeGemmPass> {
  void runOnOperation() override {
    // One script per number of leading dimensions (x's rank) present.
    llvm::SmallSetVector<int64_t, 2> outers;
    getOperation()->walk([&](linalg::GenericOp g) {
      if (auto mark = g->getAttr("tfm.gemm")) {
        int64_t outer = g.getNumLoops() - 5;
        g->setAttr("tfm.gemm", IntegerAttr::get(
                                   IntegerType::get(&getContext(), 64), outer));
        outers.insert(outer);
      }
    });
    for (int64_t outer : outers) {
      OwningOpRef<ModuleOp> script =
          parseTransformScript(&getContext(), scriptFor(outer));
      if (!script || failed(applyTransformScript(getOperation(), *script)))
        return signalPassFailure();
    }
    // The script's tile loops are the foralls around a contraction (the
    // attention's block loop has none and is one-dimensional).
    SmallVector<scf::ForallOp> tileLoops;
    getOperation()->walk([&](scf::ForallOp loop) {
      bool hasTile = false;
      loop.getBody()->walk([&](vector::ContractionOp) { hasTile = true; });
      if (hasTile && loop.getRank() >= 2)
        tileLoops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp loop : tileLoops)
      panelsOutermost(rewriter, loop);
  }
};

} // namespace
