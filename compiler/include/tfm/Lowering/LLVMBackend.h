//===- LLVMBackend.h - tfm through MLIR's own dialects to LLVM --*- C++ -*-===//

#ifndef TFM_LOWERING_LLVMBACKEND_H
#define TFM_LOWERING_LLVMBACKEND_H

#include "tfm/IR/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "tfm/Lowering/LLVMPasses.h.inc"

/// The panels [segments * ceil(rows/32), K, 32] a weight [N, K] is packed
/// into for the vectorised GEMM (rows = N / segments, each segment padded).
RankedTensorType packedPanelsType(RankedTensorType weight, int64_t segments);

/// The argument of `f` marked as the packed form of argument `arg`.
std::optional<unsigned> packedArgumentOf(func::FuncOp f, unsigned arg);

/// One pattern per tfm op that computes (not weights or caches).
void populateTfmToLinalgPatterns(RewritePatternSet &patterns);

/// tfm IR (after tfm-optimize) -> the LLVM dialect: every LLVM backend pass
/// and the upstream ones between them, in order; the entry passes (the
/// calling convention the C++ glue follows) then the lowering passes.
void buildLowerToLLVMPipeline(OpPassManager &pm);
void buildLLVMEntryPasses(OpPassManager &pm);
void buildLLVMLoweringPasses(OpPassManager &pm);

/// Every dialect, interface and pass the lowering uses (upstream
/// bufferization and conversion interfaces included).
void registerLLVMBackendDependencies(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "tfm/Lowering/LLVMPasses.h.inc"

/// Registers the LLVM backend's passes and the `tfm-lower-to-llvm` pipeline.
void registerLLVMBackendPassesAndPipelines();

} // namespace mlir::tfm

namespace tfm {

/// The C++ glue of an LLVM-backend model: `tfm::rt::kModel`, the weight
/// tables, the C API, and for each entry point (@forward; @prefill and
/// @decode when there are caches) an adapter from the runtime's call to the
/// generated `_mlir_ciface_NAME` (memref descriptors built from the
/// runtime's pointers and shapes). `declarations` is the tfm module with its
/// tfm.param and tfm.kv_cache ops; `entries` the module after
/// tfm-weights-to-arguments.
llvm::Expected<std::string> emitLLVMGlue(mlir::ModuleOp declarations,
                                         mlir::ModuleOp entries,
                                         llvm::StringRef cName);

/// The prefix of the functions tfm-outline-parallel-loops makes: the
/// dispatch `<prefix>K` (defined by the glue) and the body `<prefix>K_body`.
inline constexpr llvm::StringLiteral kParallelLoopPrefix = "__tfm_parallel_";

/// The prefix of the runtime services the lowered code calls, defined by
/// the glue under `tfm_<cName>_<name>` as the dispatch functions are:
/// `<prefix>attention_weights_wanted(slot) -> index` (nonzero while the
/// executable's --dump-attention collects map `slot`) and
/// `<prefix>attention_weights_write(slot, memref<?x?x?x?xf32>)` (the map's
/// weights, [batch, heads, queries, keys]).
inline constexpr llvm::StringLiteral kRuntimeCallPrefix = "__tfm_runtime_";

/// The glue's definitions of the parallel loops' dispatch functions that
/// `lowered` (the LLVM dialect, after tfm-outline-parallel-loops) declares:
/// each runs its loop's body for every index on the thread pool of the call
/// in progress (append it to emitLLVMGlue's text).
llvm::Expected<std::string> emitLLVMParallelGlue(mlir::ModuleOp lowered,
                                                 llvm::StringRef cName);

/// The symbol under which the object exports entry point `entry`'s C
/// interface (`_mlir_ciface_<entry>` renamed): `tfm_<cName>_<entry>`. Every
/// other function of the object is internal; the parallel loops' dispatch
/// functions it calls are `tfm_<cName>___tfm_parallel_<K>`, the runtime
/// services `tfm_<cName>___tfm_runtime_<name>`.
std::string entrySymbol(llvm::StringRef cName, llvm::StringRef entry);

/// Translates `module` (LLVM dialect) to LLVM IR and writes an object file
/// for this CPU (`native`) or baseline x86-64; or, with `emitIR`, the LLVM
/// IR as text.
llvm::Error emitLLVMCode(mlir::ModuleOp module, llvm::StringRef cName,
                         bool native, bool emitIR, llvm::raw_ostream &os);

} // namespace tfm

#endif // TFM_LOWERING_LLVMBACKEND_H
