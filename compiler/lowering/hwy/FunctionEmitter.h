//===- FunctionEmitter.h - one func.func -> Highway C++ ---------*- C++ -*-===//
//
// Internal to the Highway backend.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_HWY_FUNCTIONEMITTER_H
#define TFM_LOWERING_HWY_FUNCTIONEMITTER_H

#include "tfm/Codegen/Codegen.h"
#include "tfm/IR/TfmOps.h"

#include "tfm/Lowering/HighwayEmitter.h"
#include "tfm/Lowering/ModelGlue.h"
#include "tfm/Transforms/AttentionTiling.h"
#include "tfm/Transforms/GemmTiling.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/IndentedOstream.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace tfm::hwy {

/// One dimension of a tensor in generated code: a C++ expression of type
/// int64_t and the largest value it can take (what the arena is sized for).
struct Dim {
  std::string expr;
  int64_t max;
  bool isStatic;
};
using Dims = llvm::SmallVector<Dim, 4>;

/// The runtime kernel that applies `activation` to a row in place
/// (activation-inl.h).
llvm::StringRef activationKernel(mlir::tfm::Activation activation);

/// A tensor in generated code: a pointer expression and its dimensions
/// (row-major, contiguous).
struct Buffer {
  std::string ptr;
  Dims dims;
};

/// A weight [segments * segmentRows, k] packed for the GEMM micro-kernel:
/// each segment of rows split into panels of k::kPanel (32) output columns,
/// zero-padded, panel after panel. Segments let a stacked weight (Q, K, V of
/// in_proj) be used whole or in parts.
using ::tfm::PackSpec;

/// Where a grouped GEMM's rows go when they scatter back to their tokens
/// (tfm.grouped_linear's `scatter`): GEMM row r, times `weights[r]`, is
/// added to row `tokens[r]` of `dest` (rows `destStride` floats apart);
/// C++ expressions of the group's first pair.
struct GemmScatter {
  std::string tokens, weights, dest;
  int64_t destStride;
};

/// What the callers of an emitted function need to know about it.
struct FunctionSummary {
  std::string name;
  /// The dynamic dimensions of its tensor arguments, in signature order, as
  /// (argument, dimension).
  std::vector<std::pair<unsigned, unsigned>> dynamicArgDims;
  /// Its results' dimensions, over the names of those parameters.
  std::vector<Dims> resultDims;
  /// Arena bytes it takes at the maxima, callees included.
  size_t peakBytes = 0;

  /// For each argument: the packed layout it expects, if it is a GEMM
  /// weight (`param` unused).
  std::vector<std::optional<PackSpec>> argPacking;
};

/// Facts shared by every function of a model.
struct ModelFacts {
  llvm::StringMap<unsigned> paramIndex;
  int64_t maxBatch = 1;
  int64_t maxSeqLen = 1;
  /// The packed tensors the generated code reads, in the order of
  /// `weights[numParams + j]`; filled as functions ask for them.
  std::vector<PackSpec> packs;
  /// Caches by symbol, in the order of the runtime's `caches[i]`.
  llvm::StringMap<unsigned> cacheIndex;
  /// Whether to report what each op's code fuses as MLIR remarks.
  bool remarks = false;
};

/// How a function is called: by other generated functions, or by the
/// runtime as `forward`, or as a generation step (prefill, decode).
enum class EntryKind { None, Forward, Generation };

/// Emits one function's C++ (into `out`, per Highway target).
class FunctionEmitter {
public:
  FunctionEmitter(mlir::func::FuncOp func, ModelFacts &facts,
                  llvm::StringMap<FunctionSummary> &summaries,
                  mlir::raw_indented_ostream &out)
      : func(func), facts(facts), summaries(summaries), out(out),
        textStream(text), os(textStream) {}

  mlir::LogicalResult emit(EntryKind entry);

private:
  mlir::LogicalResult emitSignature(EntryKind entry);
  mlir::LogicalResult emitOp(mlir::Operation &op);

  mlir::LogicalResult emitLinear(mlir::tfm::LinearOp op);
  mlir::LogicalResult emitEmbedding(mlir::tfm::EmbeddingOp op);
  mlir::LogicalResult emitPositions(mlir::tfm::PositionEncodingOp op);
  mlir::LogicalResult emitSliceRows(mlir::tfm::SliceRowsOp op);
  mlir::LogicalResult emitSplitHeads(mlir::tfm::SplitHeadsOp op);
  mlir::LogicalResult emitMergeHeads(mlir::tfm::MergeHeadsOp op);
  mlir::LogicalResult emitRotary(mlir::tfm::RotaryOp op);
  mlir::LogicalResult
  emitSequenceProjection(mlir::tfm::SequenceProjectionOp op);
  mlir::LogicalResult emitCacheAppend(mlir::tfm::CacheAppendOp op);
  mlir::LogicalResult emitCacheRead(mlir::tfm::CacheReadOp op);
  mlir::LogicalResult emitCacheWindow(mlir::tfm::CacheWindowOp op);
  mlir::LogicalResult emitAttention(mlir::tfm::AttentionOp op);
  mlir::LogicalResult emitFeatureMap(mlir::tfm::FeatureMapOp op);
  mlir::LogicalResult emitLinearAttention(mlir::tfm::LinearAttentionOp op);
  mlir::LogicalResult emitLayerNorm(mlir::tfm::LayerNormOp op);
  mlir::LogicalResult emitTakeLast(mlir::tfm::TakeLastOp op);
  mlir::LogicalResult emitAdd(mlir::tfm::AddOp op);
  mlir::LogicalResult emitAddLayerNorm(mlir::tfm::AddLayerNormOp op);
  mlir::LogicalResult emitGlu(mlir::tfm::GluOp op);
  mlir::LogicalResult emitRouteExperts(mlir::tfm::RouteExpertsOp op);
  mlir::LogicalResult emitGatherRows(mlir::tfm::GatherRowsOp op);
  mlir::LogicalResult emitGroupedLinear(mlir::tfm::GroupedLinearOp op);
  mlir::LogicalResult emitCausalConv1d(mlir::tfm::CausalConv1dOp op);
  mlir::LogicalResult emitSelectiveScan(mlir::tfm::SelectiveScanOp op);
  mlir::LogicalResult emitCall(mlir::func::CallOp op);
  mlir::LogicalResult emitReturn(mlir::func::ReturnOp op);

  /// Records which arguments are GEMM weights, and in which layout.
  mlir::LogicalResult findPackedArguments();
  /// The packed form of weight `v` (an argument or a tfm.weight: the
  /// linear's own, or the stacked weight a tfm.slice_rows takes its rows
  /// from) in `layout` (its segments and panel widths; param and k are
  /// v's).
  std::string packedWeight(mlir::Value v, const PackSpec &layout);

  /// out[r, c] = sum_k x[r, k] W[c, k] (+ bias[c]) (then act) (+
  /// residual[r, c]) for `rows` rows and the `segments`
  /// x `segmentRows` columns of packed W, starting at W's segment
  /// `firstSegment`; bias[0] is the first of those columns'. Rows of x and
  /// out are `xStride` and `outStride` floats apart, rows of `residual`
  /// (when not empty) `outStride` too. The panels are taken in the order
  /// `tiling` says (from tfm-select-gemm-tiling).
  void emitMatmul(llvm::StringRef what, const std::string &rows,
                  const std::string &x, int64_t xStride,
                  const std::string &packedW, int64_t firstSegment,
                  int64_t segments, int64_t segmentRows, int64_t k,
                  const std::string &bias, const std::string &out,
                  int64_t outStride, std::optional<mlir::tfm::Activation> act,
                  const std::string &residual,
                  mlir::tfm::codegen::GemmTilingAttr tiling, bool bf16Inputs,
                  PackSpec::Element element,
                  const GemmScatter *scatter = nullptr);

  /// A strided view of per-head rows ([batch, heads, seq, dk]): element
  /// (b, h, i, c) is at ptr + b*batchStride + h*headStride + i*rowStride +
  /// c*featureStride. Rows are contiguous (featureStride 1) but for the
  /// keys of a cache, which its type stores transposed (rowStride 1).
  struct HeadView {
    std::string ptr;
    std::string batchStride;
    std::string headStride;
    int64_t rowStride;
    int64_t featureStride = 1;
    /// The head index in generated code: `h`, or which key/value head query
    /// head `h` reads (grouped-query attention).
    std::string head = "h";
    /// The address of row `row` of head `head` of sequence b, as C++.
    std::string at(llvm::StringRef row) const;
  };
  /// A per-head value in generated code: where its elements are and its
  /// dimensions.
  struct Heads {
    HeadView view;
    Dim batch, seq;
    int64_t heads, dk;
  };
  /// The per-head rows (features contiguous) `value` holds, or an error at
  /// `op`, which `verb`s them.
  mlir::FailureOr<Heads> headRows(mlir::Operation *op, mlir::Value value,
                                  llvm::StringRef verb);
  /// Rotates the rows of `view` in place (positions from `offset`).
  void emitRotaryRows(const HeadView &view, const Heads &shape,
                      mlir::tfm::RopeStyle style, float base,
                      const std::string &offset);
  /// The attention core of `op` into `out`; returns the tiles its blocked
  /// form takes (`op`'s tiling; additive scores have none).
  mlir::FailureOr<mlir::tfm::AttentionTiling>
  emitAttentionCore(mlir::tfm::AttentionOp op, const Heads &q, const Heads &k,
                    const Heads &v, const HeadView &out);

  /// The buffer of `value`, a result of the op being emitted: the
  /// function's result pointer when `value` is what it returns, else its
  /// planned frame slot (tfm-plan-memory's `result<i>`).
  Buffer allocate(mlir::Value value, Dims dims);
  /// The op's next planned scratch slot, which must be a `kind` (what the
  /// op declares, codegen::ScratchBuffersOpInterface) and hold `count`
  /// floats (`maxCount` at the maxima).
  std::string scratch(mlir::tfm::codegen::FrameBuffer kind,
                      const std::string &count, int64_t maxCount);
  /// Whether the memory plan gives the op being emitted a scratch slot of
  /// `kind`: where the op's scratch model decides whether its code takes
  /// one, the code follows that decision rather than making it again.
  bool planned(mlir::tfm::codegen::FrameBuffer kind) const;
  /// `float *name = frame + offset;` for the op's planned slot of `kind`
  /// (result `index` for a result), which must hold `maxCount` floats.
  void frameBuffer(const std::string &name,
                   mlir::tfm::codegen::FrameBuffer kind, unsigned index,
                   int64_t maxCount);
  /// Before emitting `op`: its planned slots; after it: whether its code
  /// took exactly those.
  void beginOpPlan(mlir::Operation &op);
  mlir::LogicalResult endOpPlan(mlir::Operation &op);
  std::string fresh(llvm::StringRef hint);
  /// What emitAttentionCore's code fuses for `score` (and `mask`: what it
  /// skips), in tiles of `tiling`.
  void describeAttentionCore(llvm::raw_ostream &what,
                             mlir::tfm::ScoreKind score,
                             mlir::tfm::MaskAttr mask,
                             const mlir::tfm::AttentionTiling &tiling);
  /// With `facts.remarks`: a remark at `op` saying what its code fuses.
  void remark(mlir::Operation *op, const llvm::Twine &what);

  mlir::func::FuncOp func;
  ModelFacts &facts;
  llvm::StringMap<FunctionSummary> &summaries;
  mlir::raw_indented_ostream &out;
  /// The function's text, written to `out` once its frame size is known.
  std::string text;
  llvm::raw_string_ostream textStream;
  mlir::raw_indented_ostream os;

  /// The function's frame (tfm_codegen.frame_floats) and the op's slots in it
  /// (tfm_codegen.frame), as tfm-plan-memory placed them.
  int64_t frameFloats = 0;
  llvm::SmallVector<mlir::tfm::codegen::FrameSlotAttr> opSlots;
  /// The op's slots its code has taken; the first mismatch with the plan.
  llvm::SmallVector<bool> slotTaken;
  std::string planError;
  /// Values that live in the frame.
  llvm::DenseSet<mlir::Value> frameValues;
  /// What the callees take above this function's frame, at most.
  size_t calleeBytes = 0;

  llvm::DenseMap<mlir::Value, Buffer> buffers;
  /// Per-head values (tfm.split_heads, tfm.rotary, tfm.cache_read and
  /// tfm.attention results): views, not buffers of their own.
  llvm::DenseMap<mlir::Value, Heads> heads;
  /// Index values (positions) as C++ int64_t expressions.
  llvm::DenseMap<mlir::Value, std::string> scalars;
  llvm::DenseMap<mlir::Value, unsigned> resultIndex;
  std::vector<std::string> resultPtrs;
  FunctionSummary summary;
  unsigned counter = 0;
};

/// `v` as C++.
std::string num(int64_t v);
/// A float literal that reads back to exactly `v`.
std::string floatLiteral(float v);
Dim staticDim(int64_t v);

/// The product of the expressions of `dims`, as C++ (`1` when empty).
std::string product(llvm::ArrayRef<Dim> dims);
int64_t maxProduct(llvm::ArrayRef<Dim> dims);

} // namespace tfm::hwy

#endif // TFM_LOWERING_HWY_FUNCTIONEMITTER_H
