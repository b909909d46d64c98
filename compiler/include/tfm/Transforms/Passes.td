//===- Passes.td - tfm passes -------------------------------*- tablegen -*-===//
//
// The passes tfm-compile runs between the frontend and a backend (the
// `tfm-optimize` pipeline); each one runs alone in tfm-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TRANSFORMS_PASSES_TD
#define TFM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmFuseResidualNorm : Pass<"tfm-fuse-residual-norm"> {
  let summary = "fuse a residual tfm.add and the tfm.layer_norm of its sum";
  let description = [{
    Rewrites `%s = tfm.add %a, %b` followed by `tfm.layer_norm %s` into one
    `tfm.add_layer_norm %a, %b`, which normalises each row as it sums it
    (the sum is written once and not read back from memory). The sum stays
    a result for the other readers of `%s`: in a pre-norm layer the next
    residual connection reads it.

    Not fused, with the reason as a remark (`remarks=true`): a layer norm
    whose input is not a `tfm.add`, and a `tfm.add` whose sum no layer norm
    reads; also a pair whose norm weights are defined after the sum's other
    readers, which no single position could serve.
  }];
  let dependentDialects = ["mlir::tfm::TfmDialect"];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "report each fusion done and not done as an MLIR remark">,
  ];
}

#endif // TFM_TRANSFORMS_PASSES_TD
