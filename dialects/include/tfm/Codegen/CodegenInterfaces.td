//===- CodegenInterfaces.td - what lowering asks of an op --*- tablegen -*-===//

#ifndef TFM_CODEGEN_INTERFACES_TD
#define TFM_CODEGEN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def TfmCodegen_ScratchBuffersOpInterface
    : OpInterface<"ScratchBuffersOpInterface"> {
  let cppNamespace = "::mlir::tfm::codegen";
  let description = [{
    The scratch buffers an op's Highway code takes while it runs, besides
    its results: `--tfm-plan-memory` places them in the frame
    (`#tfm_codegen.slot`), the emitter takes them by the same
    `FrameBuffer` kinds in the same order and checks each against its
    slot. The tfm dialect knows nothing of them: the tfm_codegen dialect
    attaches this interface to the tfm ops that need scratch.
  }];
  let methods = [
    InterfaceMethod<[{
        The scratch buffers, in the order the code takes them, sized for
        `bounds` (sizes saturate at UINT64_MAX).
      }],
      "::llvm::SmallVector<::mlir::tfm::codegen::ScratchBuffer>",
      "getScratchBuffers",
      (ins "const ::mlir::tfm::codegen::FrameBounds &":$bounds)>
  ];
}

#endif // TFM_CODEGEN_INTERFACES_TD
