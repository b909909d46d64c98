//===- TfmDialect.td - the tfm dialect ---------------------*- tablegen -*-===//
//
// The graph-level dialect of transformer building blocks. It knows nothing of
// files or CPUs: a model description becomes these ops, passes rewrite them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_DIALECT_TD
#define TFM_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::mlir::tfm";
  let summary = "Transformer building blocks at graph level";
  let description = [{
    The `tfm` dialect names the operations a transformer is made of: token
    embeddings, positional encodings (sinusoidal, learned, rotary), linear
    projections, attention with a choice of score function (dot, scaled dot,
    bilinear, additive), multi-head self- and cross-attention, softmax, layer
    norm, feed-forward blocks and residual additions.

    Ops work on ranked `f32` tensors. Batch and sequence dimensions may be
    dynamic (`?`); model dimensions (`d_model`, heads, `d_ff`) are static.
    Weights are declared once per module with `tfm.param`, named by their
    PyTorch `state_dict()` names, and read inside functions with `tfm.weight`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

#endif // TFM_DIALECT_TD
