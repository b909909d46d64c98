//===- GemmEmitter.cpp - GEMMs -> Highway C++ -----------------------------===//
//
// The GEMM part of FunctionEmitter: weights packed into panels, the order of
// the tasks over (row block, panel) and their prefetches (from
// #tfm_codegen.gemm_tiling), the epilogues, and tfm.linear.
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace tfm::hwy {

void FunctionEmitter::emitMatmul(
    StringRef what, const std::string &rows, const std::string &x,
    int64_t xStride, const std::string &packedW, int64_t firstSegment,
    int64_t segments, int64_t segmentRows, int64_t k, const std::string &bias,
    const std::string &out, int64_t outStride, std::optional<Activation> act,
    const std::string &residual, GemmTilingAttr tilingAttr) {
  int64_t perSegment =
      (segmentRows + kGemmPanelColumns - 1) / kGemmPanelColumns;
  int64_t panels = segments * perSegment;
  int64_t n = segments * segmentRows;
  os << "{ // " << what << ": [" << rows << ", " << k << "] x [" << n << ", "
     << k << "]^T (packed) -> [" << rows << ", " << n << "]\n";
  os.indent();
  // The order of the tasks and the prefetch (GemmTiling.h says why).
  GemmTiling tiling{{tilingAttr.getRows512(), tilingAttr.getRows256(),
                     tilingAttr.getRows128()},
                    tilingAttr.getL2Panels(),
                    tilingAttr.getPrefetch(),
                    ""};
  const int64_t width = kGemmPanelColumns, panelFloats = width * k;
  int64_t panelBytes = panelFloats * int64_t(sizeof(float));
  int64_t blockPanels = std::clamp<int64_t>(tiling.l2Panels, 1, panels);
  // The verifier holds the rows to [1, 16]; unverified IR from the C++ API
  // must not make a tile of no rows.
  for (int64_t *r :
       {&tiling.rows.rows512, &tiling.rows.rows256, &tiling.rows.rows128})
    *r = std::clamp<int64_t>(*r, 1, 16);
  os << "const int64_t rows = " << rows << ";\n";
  os << "// Register tiles (#tfm_codegen.gemm_tiling): " << tiling.rows.rows512
     << " x " << width << " on 512-bit vectors, " << tiling.rows.rows256
     << " x " << width << " on 256-bit, " << tiling.rows.rows128 << " x "
     << width << " on 128-bit.\n";
  os << "constexpr size_t tileRows = k::ForVectorBits(" << tiling.rows.rows512
     << ", " << tiling.rows.rows256 << ", " << tiling.rows.rows128 << ");\n";
  os << "const int64_t rowBlocks = (rows + int64_t(tileRows) - 1) / "
        "int64_t(tileRows);\n";
  os << "pool.parallelFor(rowBlocks * " << panels << ", [&](int64_t t) {\n";
  os.indent();
  if (blockPanels == 1) {
    // Panel-major tasks: a thread's consecutive tasks reuse one panel.
    os << "const int64_t panel = t / rowBlocks;\n";
    os << "const int64_t r0 = (t % rowBlocks) * int64_t(tileRows);\n";
  } else {
    os << "// L2 blocks of " << blockPanels << " panels ("
       << (blockPanels * panelBytes + 1023) / 1024 << " KiB of weights)\n";
    os << "const int64_t block = t / (rowBlocks * " << blockPanels
       << "), inBlock = t % (rowBlocks * " << blockPanels << ");\n";
    os << "const int64_t blockPanels = std::min<int64_t>(" << blockPanels
       << ", " << panels << " - block * " << blockPanels << ");\n";
    os << "const int64_t panel = block * " << blockPanels
       << " + inBlock % blockPanels;\n";
    os << "const int64_t r0 = (inBlock / blockPanels) * int64_t(tileRows);\n";
  }
  os << "const int64_t nRows = std::min<int64_t>(tileRows, rows - r0);\n";
  if (segments == 1) {
    os << "const int64_t col = panel * " << width << ";\n";
    os << "const int64_t cols = std::min<int64_t>(" << width << ", "
       << segmentRows << " - col);\n";
  } else {
    os << "const int64_t inSegment = (panel % " << perSegment << ") * " << width
       << ";\n";
    os << "const int64_t col = (panel / " << perSegment << ") * " << segmentRows
       << " + inSegment;\n";
    os << "const int64_t cols = std::min<int64_t>(" << width << ", "
       << segmentRows << " - inSegment);\n";
  }
  std::string biasArg = "nullptr";
  if (!bias.empty())
    biasArg = bias + " + col";
  std::string panelAt =
      packedW + " + (" + num(firstSegment * perSegment) + " + panel) * ";
  // Panel by panel, what the tiles prefetch of the next panel (the thread's
  // next tasks read it: each thread runs a contiguous range of tasks, but
  // for those it takes from a held-back thread).
  GemmPrefetch prefetch =
      blockPanels == 1 && panels > 1 ? tiling.prefetch : GemmPrefetch::None;
  std::string nextPanel = panelAt + num(panelFloats) + " + " + num(panelFloats);
  std::string prefetchArgs;
  if (prefetch == GemmPrefetch::L1) {
    os << "// The last row block prefetches the next panel into L1.\n";
    os << "const float *nextPanel = r0 + int64_t(tileRows) >= rows && panel + "
          "1 < "
       << panels << " ? " << nextPanel << " : nullptr;\n";
    prefetchArgs = ", nextPanel";
  } else if (prefetch == GemmPrefetch::L2) {
    int64_t lines = panelBytes / 64;
    os << "// Each row block prefetches its share of the next panel's " << lines
       << " lines into L2.\n";
    os << "const int64_t share = (" << lines
       << " + rowBlocks - 1) / rowBlocks, firstLine = (t % rowBlocks) * "
          "share;\n";
    os << "const bool hasNext = panel + 1 < " << panels << " && firstLine < "
       << lines << ";\n";
    os << "const float *l2At = hasNext ? " << nextPanel
       << " + firstLine * 16 : nullptr;\n";
    os << "const int64_t l2Lines = hasNext ? std::min<int64_t>(share, " << lines
       << " - firstLine) : 0;\n";
    prefetchArgs = ", nullptr, l2At, size_t(l2Lines)";
  }
  os << "k::GemmTileRows<tileRows>(nRows, " << x << " + r0 * " << xStride
     << ", " << xStride << ", " << panelAt << panelFloats << ", " << k << ", "
     << biasArg << ", " << out << " + r0 * " << outStride << " + col, "
     << outStride << ", cols" << prefetchArgs << ");\n";
  if (act) {
    os << "for (int64_t r = 0; r < nRows; ++r)\n";
    os << "  k::" << activationKernel(*act) << "(" << out << " + (r0 + r) * "
       << outStride << " + col, cols);\n";
  }
  if (!residual.empty()) {
    // The residual connection, while the tile is in cache.
    std::string at = " + (r0 + r) * " + num(outStride) + " + col";
    os << "for (int64_t r = 0; r < nRows; ++r)\n";
    os << "  k::Add(" << residual << at << ", " << out << at << ", " << out
       << at << ", cols);\n";
  }
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
}

LogicalResult FunctionEmitter::findPackedArguments() {
  summary.argPacking.assign(func.getNumArguments(), std::nullopt);
  auto mark = [&](Value v, int64_t segments, int64_t segmentRows,
                  int64_t k) -> LogicalResult {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      return success();
    PackSpec spec{0, segments, segmentRows, k};
    std::optional<PackSpec> &slot = summary.argPacking[arg.getArgNumber()];
    if (slot && !slot->sameLayout(spec))
      return func.emitError("argument ")
             << arg.getArgNumber() << " is used as two different GEMM weights";
    slot = spec;
    return success();
  };
  WalkResult result = func.walk([&](LinearOp linear) -> WalkResult {
    GemmWeight w = gemmWeight(linear);
    return failed(mark(w.packed, w.segments, w.segmentRows,
                       linear.getWeight().getType().getDimSize(1)))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::string FunctionEmitter::packedWeight(Value v, int64_t segments,
                                          int64_t segmentRows) {
  if (isa<BlockArgument>(v))
    return buffers[v].ptr; // the caller passed the packed form
  auto weight = v.getDefiningOp<WeightOp>();
  unsigned param = facts.paramIndex.lookup(weight.getParam());
  PackSpec spec{param, segments, segmentRows,
                weight.getType().getShape().back()};
  unsigned index = facts.packs.size();
  for (auto [j, existing] : llvm::enumerate(facts.packs))
    if (existing.param == param && existing.sameLayout(spec))
      index = j;
  if (index == facts.packs.size())
    facts.packs.push_back(spec);
  return "w[" + num(facts.paramIndex.size() + index) + "]";
}

std::string FunctionEmitter::packedWeight(const GemmWeight &weight) {
  return packedWeight(weight.packed, weight.segments, weight.segmentRows);
}

LogicalResult FunctionEmitter::emitLinear(LinearOp op) {
  Buffer x = buffers[op.getInput()];
  int64_t n = op.getWeight().getType().getDimSize(0);
  int64_t k = op.getWeight().getType().getDimSize(1);
  ArrayRef<Dim> lead = ArrayRef<Dim>(x.dims).drop_back();
  Dims outDims(lead.begin(), lead.end());
  outDims.push_back(staticDim(n));
  std::string bias = op.getBias() ? buffers[op.getBias()].ptr : "";
  std::string residual = op.getResidual() ? buffers[op.getResidual()].ptr : "";
  GemmWeight weight = gemmWeight(op);
  Buffer out = allocate(op.getResult(), outDims);
  std::optional<Activation> act = op.getActivation();
  std::string what = "linear";
  if (act)
    what += " + " + stringifyActivation(*act).str();
  if (!residual.empty())
    what += " + residual";
  GemmTilingAttr tiling = getGemmTiling(op);
  if (!tiling)
    return op.emitError(
        "tfm.linear has no tfm_codegen.gemm_tiling: the Highway "
        "backend follows tfm-select-gemm-tiling");
  emitMatmul(what, product(lead), x.ptr, k, packedWeight(weight),
             weight.firstSegment, weight.usedSegments, weight.segmentRows, k,
             bias, out.ptr, n, act, residual, tiling);
  if (!facts.remarks)
    return success();
  SmallVector<std::string> epilogue;
  if (!bias.empty())
    epilogue.push_back("bias");
  if (act)
    epilogue.push_back(stringifyActivation(*act).str());
  if (!residual.empty())
    epilogue.push_back("residual add");
  std::string text = "GEMM over the weight packed into 32-column panels";
  if (!epilogue.empty())
    text += "; as each register tile is stored, while in cache: " +
            llvm::join(epilogue, ", ");
  remark(op, text);
  return success();
}

} // namespace tfm::hwy
