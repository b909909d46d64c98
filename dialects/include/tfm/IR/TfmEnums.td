//===- TfmEnums.td - kinds carried by tfm ops --------------*- tablegen -*-===//

#ifndef TFM_ENUMS_TD
#define TFM_ENUMS_TD

include "tfm/IR/TfmDialect.td"
include "mlir/IR/EnumAttr.td"

def Tfm_ScoreKind : I32EnumAttr<"ScoreKind", "attention score function", [
    I32EnumAttrCase<"Dot", 0, "dot">,
    I32EnumAttrCase<"ScaledDot", 1, "scaled_dot">,
    I32EnumAttrCase<"Bilinear", 2, "bilinear">,
    I32EnumAttrCase<"Additive", 3, "additive">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm";
}
def Tfm_ScoreKindAttr : EnumAttr<Tfm_Dialect, Tfm_ScoreKind, "score"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_Activation : I32EnumAttr<"Activation", "feed-forward activation", [
    I32EnumAttrCase<"Relu", 0, "relu">,
    I32EnumAttrCase<"Gelu", 1, "gelu">,
    I32EnumAttrCase<"GeluTanh", 2, "gelu_tanh">,
    // x * sigmoid(x) (SiLU, Swish-1), as LLaMA's SwiGLU gates with it.
    I32EnumAttrCase<"Silu", 3, "silu">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm";
}
def Tfm_ActivationAttr : EnumAttr<Tfm_Dialect, Tfm_Activation, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_PositionKind : I32EnumAttr<"PositionKind",
    "absolute positional encoding added to the embeddings", [
    I32EnumAttrCase<"Sinusoidal", 0, "sinusoidal">,
    I32EnumAttrCase<"Learned", 1, "learned">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm";
}
def Tfm_PositionKindAttr : EnumAttr<Tfm_Dialect, Tfm_PositionKind, "position"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_RopeStyle : I32EnumAttr<"RopeStyle", "pairing of rotary dimensions", [
    // LLaMA/NeoX: dimension i rotates with i + dk/2.
    I32EnumAttrCase<"Half", 0, "half">,
    // RoFormer/GPT-J: dimension 2i rotates with 2i + 1.
    I32EnumAttrCase<"Interleaved", 1, "interleaved">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm";
}
def Tfm_RopeStyleAttr : EnumAttr<Tfm_Dialect, Tfm_RopeStyle, "rope"> {
  let assemblyFormat = "`<` $value `>`";
}

// The format a GEMM weight's values are kept in (contract section 10); a
// weight with none is f32.
def Tfm_WeightFormat : I32EnumAttr<"WeightFormat", "format of a GEMM weight", [
    // bfloat16: each value rounded to nearest, ties to even.
    I32EnumAttrCase<"BF16", 0, "bf16">,
    // IEEE binary16: rounded to nearest, ties to even; beyond 65504 an error.
    I32EnumAttrCase<"F16", 1, "f16">,
    // Signed 8-bit values with one f32 scale per block of 32 input columns
    // of a row: s = max |w| / 127, q = w / s rounded to nearest even.
    I32EnumAttrCase<"Int8", 2, "int8">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tfm";
}
def Tfm_WeightFormatAttr : EnumAttr<Tfm_Dialect, Tfm_WeightFormat,
                                    "weight_format"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // TFM_ENUMS_TD
