//===- HighwayEmitter.h - tfm IR -> Highway C++ -----------------*- C++ -*-===//

#ifndef TFM_LOWERING_HIGHWAYEMITTER_H
#define TFM_LOWERING_HIGHWAYEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tfm {

/// Facts about the generated code that the driver reports with `-v`.
struct HighwayEmitStats {
  size_t arenaBytes = 0;
  size_t functions = 0;
  /// The C++ of `static double matmulFlops(const tfm::rt::InputView *)`:
  /// the matmul FLOPs of one forward pass for given inputs (the LLVM
  /// backend's glue reports the same count).
  std::string matmulFlops;
};

/// The data caches of the CPU the generated code is for, in bytes: they
/// decide the GEMMs' L2 blocks and which weight panels are prefetched into
/// L1. The defaults are those of the machine the benchmarks run on (AMD Zen
/// 5: 48 KiB L1d, 1 MiB L2).
struct CacheSizes {
  int64_t l1Bytes = 48 * 1024;
  int64_t l2Bytes = 1024 * 1024;
};

/// This machine's L1d and L2 sizes, from the C library (CPUID on x86);
/// where it does not know one, the default above.
CacheSizes hostCacheSizes();

/// Prints `module` (tfm IR as the frontend builds it) as one C++ file that
/// uses Highway with dynamic dispatch and defines `tfm::rt::kModel` and the C
/// API functions `<cName>_create/_forward/_destroy`. Highway compiles the
/// file once per SIMD target by including itself as "<fileName>", so it must
/// be saved under that name and compiled with its folder on the include
/// path. Errors are MLIR diagnostics on the offending op. With `remarks`,
/// each op whose code fuses work (projections into one GEMM, attention in
/// the flash form, activations and biases into GEMM stores) gets an MLIR
/// remark that says what was fused and what was not, and why.
mlir::LogicalResult emitHighwayCpp(mlir::ModuleOp module, llvm::StringRef cName,
                                   llvm::StringRef fileName,
                                   llvm::raw_ostream &os,
                                   HighwayEmitStats *stats = nullptr,
                                   bool remarks = false, CacheSizes cache = {});

/// `name` made into a C identifier: other characters become '_', and a
/// leading digit gets a '_' in front.
std::string cIdentifier(llvm::StringRef name);

} // namespace tfm

#endif // TFM_LOWERING_HIGHWAYEMITTER_H
