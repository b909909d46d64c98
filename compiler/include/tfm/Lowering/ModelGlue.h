//===- ModelGlue.h - the tables every backend's C++ glue shares -*- C++ -*-===//
//
// Whatever lowers the computation, the runtime learns about a compiled model
// from `tfm::rt::kModel` (runtime/include/tfm/runtime/Model.h): its weights,
// their default initialisation and packing, its inputs, caches, entry points,
// and the C API under the model's name. Both backends print that part with
// this one emitter.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_LOWERING_MODELGLUE_H
#define TFM_LOWERING_MODELGLUE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

/// A weight rearranged once after loading into GEMM panels: `segments`
/// stacked blocks of `segmentRows` output rows (in_proj's Q, K, V), each
/// packed in panels of `panelCols` output columns (zero-padded) holding
/// every k, the width the GEMMs read where the code runs with 512-, 256-
/// and 128-bit vectors (the Highway backend's register tiles; the LLVM
/// backend's 32 on every target).
struct PackSpec {
  unsigned param;
  int64_t segments, segmentRows, k;
  std::array<int64_t, 3> panelCols = {32, 32, 32};
  /// Each value rounded to bfloat16 as it is packed: the weight of GEMMs
  /// with `bf16_inputs`.
  bool bf16 = false;
  /// What a panel element is: a float, or the 16 bits of a bf16 or f16
  /// value (a weight whose values that format holds exactly: its
  /// `weight_format`), half the bytes; or (an int8 weight) an 8-bit value
  /// of a block of 32 k's that shares one scale per column: a quarter of
  /// the bytes and, after the panel's values, its scales as floats.
  enum class Element { F32, BF16, F16, I8 };
  Element element = Element::F32;

  /// The k's that share an int8 scale (contract section 10).
  static constexpr int64_t kInt8Block = 32;

  /// The bytes of one panel of `cols` columns.
  int64_t panelBytes(int64_t cols) const {
    switch (element) {
    case Element::F32:
      return cols * k * 4;
    case Element::BF16:
    case Element::F16:
      return cols * k * 2;
    case Element::I8:
      return cols * k + (k + kInt8Block - 1) / kInt8Block * cols * 4;
    }
    return cols * k * 4;
  }

  int64_t floats(int64_t cols) const {
    int64_t bytes =
        segments * ((segmentRows + cols - 1) / cols) * panelBytes(cols);
    return (bytes + 3) / 4;
  }
  /// The floats of the widest layout: room for whichever target packs.
  int64_t maxFloats() const {
    int64_t most = 0;
    for (int64_t cols : panelCols)
      most = std::max(most, floats(cols));
    return most;
  }
  /// Whether the panel width depends on the target that runs.
  bool perTarget() const {
    return panelCols[0] != panelCols[1] || panelCols[1] != panelCols[2];
  }
  bool sameLayout(const PackSpec &o) const {
    return segments == o.segments && segmentRows == o.segmentRows && k == o.k &&
           panelCols == o.panelCols && bf16 == o.bf16 && element == o.element;
  }
};

struct ModelGlue {
  mlir::ModuleOp module;
  std::string cName;
  /// @forward: its arguments are the inputs, its result the output.
  mlir::func::FuncOp entry;
  size_t arenaBytes = 0;
  std::vector<PackSpec> packs;
  /// C++ defining `static double matmulFlops(const tfm::rt::InputView *in)`.
  std::string flopsDefinition;
  /// `forwardDispatch` and, when `generation`, `prefillDispatch` and
  /// `decodeDispatch` are defined before the glue, in tfm_generated.
  bool generation = false;
  /// `int64_t vectorBitsDispatch()` (the vector width of the target the
  /// dispatch runs: 512, 256 or 128) and `const char *limitSimd(const char
  /// *isa)` (ModelInfo::limitSimd) are defined before the glue; needed
  /// when a pack's panel width depends on the target.
  bool vectorBits = false;
  /// Why the code writes none of the attention maps the module's
  /// tfm.attention_maps names (tfm.attention's weights_to), or empty when
  /// it writes them (ModelInfo::attentionMapsUnsupported).
  std::string attentionMapsUnsupported;
};

/// C++ defining `static double matmulFlops(const tfm::rt::InputView *in)`:
/// the FLOPs of @forward's matrix products (each op's
/// MatmulFlopsOpInterface, through the functions it calls) for its inputs'
/// sizes; a helper `flops_NAME` before it for each function called. Errors
/// are diagnostics at the op whose sizes cannot be followed.
mlir::FailureOr<std::string> emitMatmulFlops(mlir::ModuleOp module);

/// `name` made into a C identifier: other characters become '_', and a
/// leading digit gets a '_' in front.
std::string cIdentifier(llvm::StringRef name);

/// Prints, inside an open `namespace tfm_generated {`, the weight, input,
/// cache and packing tables; closes the namespace; then defines
/// `tfm::rt::kModel` and the C API functions `<cName>_*`.
void emitModelGlue(const ModelGlue &glue, llvm::raw_ostream &out);

} // namespace tfm

#endif // TFM_LOWERING_MODELGLUE_H
