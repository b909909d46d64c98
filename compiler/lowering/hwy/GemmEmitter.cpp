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
#include <array>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace tfm::hwy {

void FunctionEmitter::emitMatmul(
    StringRef what, const std::string &rows, const std::string &x,
    int64_t xStride, const std::string &packedW, int64_t firstSegment,
    int64_t segments, int64_t segmentRows, int64_t k, const std::string &bias,
    const std::string &out, int64_t outStride, std::optional<Activation> act,
    const std::string &residual, GemmTilingAttr tilingAttr, bool bf16Inputs,
    PackSpec::Element element, const GemmScatter *scatter) {
  int64_t n = segments * segmentRows;
  os << "{ // " << what << ": [" << rows << ", " << k << "] x [" << n << ", "
     << k << "]^T (packed) -> [" << rows << ", " << n << "]\n";
  os.indent();
  // The verifier holds the tiles to [1, 16] rows of 1 to 4 vectors;
  // unverified IR from the C++ API must not make a tile of no rows or a
  // panel of no columns.
  RegisterTile tiles[] = {{tilingAttr.getRows512(), tilingAttr.getCols512()},
                          {tilingAttr.getRows256(), tilingAttr.getCols256()},
                          {tilingAttr.getRows128(), tilingAttr.getCols128()}};
  const int64_t lanes[] = {16, 8, 4};
  for (auto [tile, lane] : llvm::zip(tiles, lanes)) {
    tile.rows = std::clamp<int64_t>(tile.rows, 1, 16);
    tile.cols = std::clamp<int64_t>(tile.cols / lane, 1, 4) * lane;
  }
  auto forVectorBits = [&](auto field) {
    return "k::ForVectorBits(" + num(field(tiles[0])) + ", " +
           num(field(tiles[1])) + ", " + num(field(tiles[2])) + ")";
  };
  os << "const int64_t rows = " << rows << ";\n";
  os << "// Register tiles (#tfm_codegen.gemm_tiling), rows x columns, the "
        "columns the\n// width of the panels the weight is packed in: "
     << tiles[0].rows << " x " << tiles[0].cols << " on 512-bit vectors, "
     << tiles[1].rows << " x " << tiles[1].cols << " on 256-bit, "
     << tiles[2].rows << " x " << tiles[2].cols << " on 128-bit.\n";
  os << "constexpr size_t tileRows = "
     << forVectorBits([](RegisterTile t) { return t.rows; }) << ";\n";
  os << "constexpr int64_t panelCols = "
     << forVectorBits([](RegisterTile t) { return t.cols; }) << ";\n";
  // Elements of the panel type from one panel to the next: an int8 panel's
  // values are followed by its scales (PackSpec::panelBytes).
  if (element == PackSpec::Element::I8)
    os << "constexpr int64_t panelStride = panelCols * " << k << " + (" << k
       << " + tfm::rt::kInt8Block - 1) / tfm::rt::kInt8Block * panelCols * "
       << "int64_t(sizeof(float));\n";
  else
    os << "constexpr int64_t panelStride = panelCols * " << k << ";\n";
  os << "constexpr int64_t perSegment = (" << segmentRows
     << " + panelCols - 1) / panelCols;\n";
  os << "constexpr int64_t panels = " << segments << " * perSegment;\n";
  os << "const int64_t rowBlocks = (rows + int64_t(tileRows) - 1) / "
        "int64_t(tileRows);\n";
  // The order of the tasks and the prefetch (GemmTiling.h says why).
  const int64_t l2Columns = std::max<int64_t>(tilingAttr.getL2Columns(), 0);
  const bool inBlocks = l2Columns > 0 && l2Columns < n;
  if (inBlocks) {
    os << "// L2 blocks of " << l2Columns << " weight columns ("
       << (l2Columns * k * int64_t(sizeof(float)) + 1023) / 1024
       << " KiB of weights)\n";
    os << "constexpr int64_t blockPanels = std::max<int64_t>(1, " << l2Columns
       << " / panelCols);\n";
  }
  os << "pool.parallelFor(rowBlocks * panels, [&](int64_t t) {\n";
  os.indent();
  if (!inBlocks) {
    // Panel-major tasks: a thread's consecutive tasks reuse one panel.
    os << "const int64_t panel = t / rowBlocks, rowBlock = t % rowBlocks;\n";
  } else {
    os << "const int64_t block = t / (rowBlocks * blockPanels), inBlock = t "
          "% (rowBlocks * blockPanels);\n";
    os << "const int64_t thisBlock = std::min<int64_t>(blockPanels, panels - "
          "block * blockPanels);\n";
    os << "const int64_t panel = block * blockPanels + inBlock % thisBlock;\n";
    os << "const int64_t rowBlock = inBlock / thisBlock;\n";
  }
  // Row blocks of equal size (tileRows or one fewer): no short last tile,
  // whose few accumulators would leave the FMA pipes waiting on latency.
  os << "const int64_t r0 = rowBlock * rows / rowBlocks;\n";
  os << "const int64_t nRows = (rowBlock + 1) * rows / rowBlocks - r0;\n";
  if (segments == 1) {
    os << "const int64_t col = panel * panelCols;\n";
    os << "const int64_t cols = std::min<int64_t>(panelCols, " << segmentRows
       << " - col);\n";
  } else {
    os << "const int64_t inSegment = (panel % perSegment) * panelCols;\n";
    os << "const int64_t col = (panel / perSegment) * " << segmentRows
       << " + inSegment;\n";
    os << "const int64_t cols = std::min<int64_t>(panelCols, " << segmentRows
       << " - inSegment);\n";
  }
  std::string biasArg = "nullptr";
  if (!bias.empty())
    biasArg = bias + " + col";
  // 16-bit and 8-bit panels: the same offsets in elements of their size.
  const char *panelType = element == PackSpec::Element::BF16 ? "hwy::bfloat16_t"
                          : element == PackSpec::Element::F16 ? "hwy::float16_t"
                          : element == PackSpec::Element::I8  ? "int8_t"
                                                              : "float";
  std::string panels = element == PackSpec::Element::F32
                           ? packedW
                           : "reinterpret_cast<const " +
                                 std::string(panelType) + " *>(" + packedW +
                                 ")";
  if (element == PackSpec::Element::I8)
    os << "// The weight's panels hold int8 values (a quarter of the bytes), "
          "each block of\n// tfm::rt::kInt8Block k's with one scale a column "
          "after "
          "the panel's values: the tiles\n// widen and scale them to f32 as "
          "they read them.\n";
  else if (element != PackSpec::Element::F32)
    os << "// The weight's panels hold " << panelType
       << " values (half the bytes), widened to f32 as the tiles read "
          "them.\n";
  std::string panelAt = panels + " + (" + num(firstSegment) +
                        " * perSegment + panel) * panelStride";
  // Panel by panel, what the tiles prefetch of the next panel (the thread's
  // next tasks read it: each thread runs a contiguous range of tasks, but
  // for those it takes from a held-back thread), each target its own kind.
  std::array<GemmPrefetch, 3> prefetch = {tilingAttr.getPrefetch512(),
                                          tilingAttr.getPrefetch256(),
                                          tilingAttr.getPrefetch128()};
  if (inBlocks)
    prefetch.fill(GemmPrefetch::None);
  const bool anyL1 = llvm::is_contained(prefetch, GemmPrefetch::L1);
  const bool anyL2 = llvm::is_contained(prefetch, GemmPrefetch::L2);
  const bool oneKind = llvm::all_equal(prefetch);
  // Where the targets differ, the code asks which kind its own is.
  std::string isL1 = "", isL2 = "";
  if (!oneKind) {
    auto kind = [](GemmPrefetch p) {
      return p == GemmPrefetch::L1 ? "1" : p == GemmPrefetch::L2 ? "2" : "0";
    };
    os << "// The next panel's prefetch (#tfm_codegen.gemm_tiling): "
       << stringifyGemmPrefetch(prefetch[0]) << " on 512-bit vectors, "
       << stringifyGemmPrefetch(prefetch[1]) << " on 256-bit, "
       << stringifyGemmPrefetch(prefetch[2])
       << " on 128-bit (0 none, 1 L1, 2 L2).\n";
    os << "constexpr size_t prefetchKind = k::ForVectorBits("
       << kind(prefetch[0]) << ", " << kind(prefetch[1]) << ", "
       << kind(prefetch[2]) << ");\n";
    isL1 = "prefetchKind == 1 && ";
    isL2 = "prefetchKind == 2 && ";
  }
  std::string nextPanel = panelAt + " + panelStride";
  std::string prefetchArgs;
  if (anyL1) {
    os << "// The last row block prefetches the next panel into L1.\n";
    os << "const " << panelType << " *nextPanel = " << isL1
       << "r0 + nRows >= rows && panel + 1 < panels "
          "? "
       << nextPanel << " : nullptr;\n";
    prefetchArgs = ", nextPanel";
  }
  if (anyL2) {
    os << "// Each row block prefetches its share of the next panel's lines "
          "into L2.\n";
    os << "constexpr int64_t lines = panelStride * int64_t(sizeof(" << panelType
       << ")) / 64;\n";
    os << "const int64_t share = (lines + rowBlocks - 1) / rowBlocks, "
          "firstLine = rowBlock * share;\n";
    os << "const bool hasNext = " << isL2
       << "panel + 1 < panels && firstLine < lines;\n";
    os << "const " << panelType << " *l2At = hasNext ? " << nextPanel
       << " + firstLine * "
       << (element == PackSpec::Element::F32  ? 16
           : element == PackSpec::Element::I8 ? 64
                                              : 32)
       << " : nullptr;\n";
    os << "const int64_t l2Lines = hasNext ? std::min<int64_t>(share, lines - "
          "firstLine) : 0;\n";
    prefetchArgs = std::string(anyL1 ? ", nextPanel" : ", nullptr") +
                   ", l2At, size_t(l2Lines)";
  }
  // With bf16 inputs the tile rounds the rows of x it reads (the weight
  // was rounded as it was packed).
  std::string tile =
      std::string("k::GemmTileRows<tileRows, size_t(panelCols)") +
      (bf16Inputs ? ", true" : "") + ">";
  if (bf16Inputs)
    os << "// bf16 inputs: x's values rounded to bfloat16 as the tiles read "
          "them, products summed in f32.\n";
  if (scatter) {
    // The tile goes to a buffer on the stack, then each row, times its
    // routing weight, into its token's row, while in L1.
    os << "alignas(64) float tile[tileRows * panelCols];\n";
    os << tile << "(nRows, " << x << " + r0 * " << xStride << ", " << xStride
       << ", " << panelAt << ", " << k << ", " << biasArg
       << ", tile, size_t(panelCols), cols" << prefetchArgs << ");\n";
    os << "for (int64_t r = 0; r < nRows; ++r) {\n";
    if (act)
      os << "  k::" << activationKernel(*act)
         << "(tile + r * panelCols, cols);\n";
    os << "  k::Axpy(" << scatter->weights << "[r0 + r], tile + r * panelCols, "
       << scatter->dest << " + int64_t(" << scatter->tokens << "[r0 + r]) * "
       << scatter->destStride << " + col, cols);\n";
    os << "}\n";
  } else {
    os << tile << "(nRows, " << x << " + r0 * " << xStride << ", " << xStride
       << ", " << panelAt << ", " << k << ", " << biasArg << ", " << out
       << " + r0 * " << outStride << " + col, " << outStride << ", cols"
       << prefetchArgs << ");\n";
  }
  if (act && !scatter) {
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

namespace {
/// What `op`'s weight panels hold: the 16 bits of each value when they are
/// bf16 values (--compute=bf16 rounds them so, whatever their format) or
/// f16 ones (its weight_format), int8 values and their blocks' scales for
/// an int8 weight, else floats.
template <typename GemmOp> PackSpec::Element panelElement(GemmOp op) {
  std::optional<WeightFormat> format = op.getWeightFormat();
  if (op.getBf16Inputs() || format == WeightFormat::BF16)
    return PackSpec::Element::BF16;
  if (format == WeightFormat::F16)
    return PackSpec::Element::F16;
  if (format == WeightFormat::Int8)
    return PackSpec::Element::I8;
  return PackSpec::Element::F32;
}

/// The panel widths `op`'s GEMM reads where the code runs with 512-, 256-
/// and 128-bit vectors: its register tiles' columns.
std::array<int64_t, 3> panelColumns(Operation *op) {
  GemmTilingAttr tiling = getGemmTiling(op);
  if (!tiling)
    return {32, 32, 32}; // emitLinear reports the missing tiling
  return {tiling.getCols512(), tiling.getCols256(), tiling.getCols128()};
}
} // namespace

LogicalResult FunctionEmitter::findPackedArguments() {
  summary.argPacking.assign(func.getNumArguments(), std::nullopt);
  // Each GEMM weight that is an argument, in the layout `spec`.
  auto record = [&](Value packed, const PackSpec &spec) {
    auto arg = dyn_cast<BlockArgument>(packed);
    if (!arg)
      return WalkResult::advance();
    std::optional<PackSpec> &slot = summary.argPacking[arg.getArgNumber()];
    if (slot && !slot->sameLayout(spec)) {
      func.emitError("argument ")
          << arg.getArgNumber()
          << " is used as two different GEMM weights (segments or panel "
             "widths)";
      return WalkResult::interrupt();
    }
    slot = spec;
    return WalkResult::advance();
  };
  WalkResult result = func.walk([&](Operation *op) -> WalkResult {
    if (auto linear = dyn_cast<LinearOp>(op)) {
      GemmWeight w = gemmWeight(linear);
      return record(w.packed,
                    PackSpec{0, w.segments, w.segmentRows,
                             linear.getWeight().getType().getDimSize(1),
                             panelColumns(linear), linear.getBf16Inputs(),
                             panelElement(linear)});
    }
    if (auto grouped = dyn_cast<GroupedLinearOp>(op))
      for (Value weight : grouped.getWeights()) {
        auto type = cast<RankedTensorType>(weight.getType());
        if (record(weight,
                   PackSpec{0, 1, type.getDimSize(0), type.getDimSize(1),
                            panelColumns(op), grouped.getBf16Inputs(),
                            panelElement(grouped)})
                .wasInterrupted())
          return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::string FunctionEmitter::packedWeight(Value v, const PackSpec &layout) {
  if (isa<BlockArgument>(v))
    return buffers[v].ptr; // the caller passed the packed form
  auto weight = v.getDefiningOp<WeightOp>();
  PackSpec spec = layout;
  spec.param = facts.paramIndex.lookup(weight.getParam());
  spec.k = weight.getType().getShape().back();
  unsigned index = facts.packs.size();
  for (auto [j, existing] : llvm::enumerate(facts.packs))
    if (existing.param == spec.param && existing.sameLayout(spec))
      index = j;
  if (index == facts.packs.size())
    facts.packs.push_back(spec);
  return "w[" + num(facts.paramIndex.size() + index) + "]";
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
  PackSpec layout{0,
                  weight.segments,
                  weight.segmentRows,
                  k,
                  panelColumns(op),
                  op.getBf16Inputs(),
                  panelElement(op)};
  emitMatmul(what, product(lead), x.ptr, k, packedWeight(weight.packed, layout),
             weight.firstSegment, weight.usedSegments, weight.segmentRows, k,
             bias, out.ptr, n, act, residual, tiling, op.getBf16Inputs(),
             layout.element);
  if (!facts.remarks)
    return success();
  SmallVector<std::string> epilogue;
  if (!bias.empty())
    epilogue.push_back("bias");
  if (act)
    epilogue.push_back(stringifyActivation(*act).str());
  if (!residual.empty())
    epilogue.push_back("residual add");
  std::string text =
      "GEMM over the weight packed into panels of the register tile's "
      "columns on the target that runs";
  if (!epilogue.empty())
    text += "; as each register tile is stored, while in cache: " +
            llvm::join(epilogue, ", ");
  remark(op, text);
  return success();
}

} // namespace tfm::hwy

namespace tfm::hwy {

LogicalResult FunctionEmitter::emitGroupedLinear(GroupedLinearOp op) {
  Buffer x = buffers[op.getInput()];
  auto weightType = cast<RankedTensorType>(op.getWeights()[0].getType());
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  int64_t groups = op.getNumGroups();
  GemmTilingAttr tiling = getGemmTiling(op);
  if (!tiling)
    return op.emitError(
        "tfm.grouped_linear has no tfm_codegen.gemm_tiling: the Highway "
        "backend follows tfm-select-gemm-tiling");
  bool scatter = bool(op.getTokens());
  // Without scatter the result keeps the input's rows; with it, the
  // tokens' rows (the slot dimension dropped).
  Dims outDims(x.dims.begin(), x.dims.end());
  outDims.back() = staticDim(n);
  if (scatter)
    outDims.erase(outDims.end() - 2);
  Buffer out = allocate(op.getResult(), outDims);
  std::optional<Activation> act = op.getActivation();
  PackSpec layout{
      0, 1, n, k, panelColumns(op), op.getBf16Inputs(), panelElement(op)};

  os << "{ // " << groups << " groups of rows, each through its own weight\n";
  os.indent();
  os << "const int32_t *starts = reinterpret_cast<const int32_t *>("
     << buffers[op.getStarts()].ptr << ");\n";
  os << "const float *const packed[" << groups << "] = {";
  for (auto [e, w] : llvm::enumerate(op.getWeights()))
    os << (e ? ", " : "") << packedWeight(w, layout);
  os << "};\n";
  if (!op.getBiases().empty()) {
    os << "const float *const biases[" << groups << "] = {";
    for (auto [e, b] : llvm::enumerate(op.getBiases()))
      os << (e ? ", " : "") << buffers[b].ptr;
    os << "};\n";
  }
  std::optional<GemmScatter> target;
  if (scatter) {
    // Every token's row starts as its residual (or zeros); the groups add
    // to it one after another, so each row's sum has one order.
    os << "pool.parallelFor(" << product(ArrayRef<Dim>(outDims).drop_back())
       << ", [&](int64_t r) {\n";
    if (op.getResidual())
      os << "  std::copy_n(" << buffers[op.getResidual()].ptr << " + r * " << n
         << ", " << n << ", " << out.ptr << " + r * " << n << ");\n";
    else
      os << "  k::Zero(" << out.ptr << " + r * " << n << ", " << n << ");\n";
    os << "});\n";
    os << "const int32_t *tokenOf = reinterpret_cast<const int32_t *>("
       << buffers[op.getTokens()].ptr << ");\n";
    target = GemmScatter{
        "(tokenOf + first)",
        "(" + buffers[op.getRoutingWeights()].ptr + " + first)", out.ptr, n};
  }
  os << "for (int64_t group = 0; group < " << groups << "; ++group) {\n";
  os.indent();
  os << "const int64_t first = starts[group], groupRows = starts[group + 1] - "
        "first;\n";
  os << "// A group of no rows (an expert no token chose): its weight is "
        "never read.\n";
  os << "if (groupRows <= 0)\n  continue;\n";
  std::string what = "group's linear";
  if (act)
    what += " + " + stringifyActivation(*act).str();
  if (scatter)
    what += ", scattered to its tokens";
  emitMatmul(what, "groupRows", x.ptr + " + first * " + num(k), k,
             "packed[group]", 0, 1, n, k,
             op.getBiases().empty() ? "" : "biases[group]",
             out.ptr + " + first * " + num(n), n, act, "", tiling,
             op.getBf16Inputs(), layout.element, target ? &*target : nullptr);
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "}\n";
  if (!facts.remarks)
    return success();
  std::string text = "GEMM per group over its rows only (groups with no "
                     "rows skipped), each weight packed into panels of the "
                     "register tile's columns";
  SmallVector<std::string> epilogue;
  if (!op.getBiases().empty())
    epilogue.push_back("bias");
  if (act)
    epilogue.push_back(stringifyActivation(*act).str());
  if (scatter)
    epilogue.push_back("the routing weight and the add into its token's row" +
                       std::string(op.getResidual() ? " (which starts as "
                                                      "the residual)"
                                                    : ""));
  if (!epilogue.empty())
    text += "; as each register tile is stored, while in cache: " +
            llvm::join(epilogue, ", ");
  remark(op, text);
  return success();
}

} // namespace tfm::hwy
