// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// One section per diagnostic of the tfm verifiers (TfmOps.cpp), plus a few
// that ODS and the builtin verifiers emit for tfm ops. Errors reported from
// inferReturnTypes are always followed by the interface's own
// "failed to infer returned types".

//===----------------------------------------------------------------------===//
// tfm.param
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'tfm.param' op type must be a statically shaped f32 tensor, got 'tensor<?x4xf32>'}}
tfm.param @p : tensor<?x4xf32>

// -----

// expected-error @+1 {{'tfm.param' op type must be a statically shaped f32 tensor, got 'tensor<4x4xf16>'}}
tfm.param @p : tensor<4x4xf16>

// -----

// expected-error @+1 {{'tfm.param' op type must be a statically shaped f32 tensor, got 'f32'}}
tfm.param @p : f32

// -----

// expected-error @+1 {{'tfm.param' op type must be a statically shaped f32 tensor, got 'tensor<*xf32>'}}
tfm.param @p : tensor<*xf32>

// -----

func.func @param_in_func() {
  // expected-error @+1 {{'tfm.param' op expects parent op 'builtin.module'}}
  tfm.param @p : tensor<4xf32>
  return
}

// -----

// A weight format is a GEMM weight's: a matrix of floats.
// expected-error @+1 {{'tfm.param' op `format` applies to a rank-2 GEMM weight ([out, in]), got 'tensor<32xf32>'}}
tfm.param @bias {format = #tfm.weight_format<int8>} : tensor<32xf32>

// -----

// expected-error @+1 {{'tfm.param' op `format` applies to a rank-2 GEMM weight ([out, in]), got 'tensor<8x3xf32>' of key-block ids}}
tfm.param @pattern {block_ids, format = #tfm.weight_format<bf16>} : tensor<8x3xf32>

// -----

// expected-error @+1 {{expected '<'}}
tfm.param @w {format = #tfm.weight_format} : tensor<8x3xf32>

// -----

// expected-error @+2 {{expected ::mlir::tfm::WeightFormat to be one of: bf16, f16, int8}}
// expected-error @+1 {{failed to parse Tfm_WeightFormatAttr parameter 'value' which is to be a `::mlir::tfm::WeightFormat`}}
tfm.param @w {format = #tfm.weight_format<int4>} : tensor<8x3xf32>

// -----

// expected-note @+1 {{see existing symbol definition here}}
tfm.param @p : tensor<4xf32>
// expected-error @+1 {{redefinition of symbol named 'p'}}
tfm.param @p : tensor<8xf32>

// -----

//===----------------------------------------------------------------------===//
// tfm.weight
//===----------------------------------------------------------------------===//

tfm.param @p : tensor<4xf32>
func.func @weight_missing() -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.weight' op @missing does not name a tfm.param}}
  %0 = tfm.weight @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_a_param() {
  return
}
func.func @weight_of_func() -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.weight' op @not_a_param does not name a tfm.param}}
  %0 = tfm.weight @not_a_param : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tfm.param @"layers.0.linear1.weight" : tensor<64x32xf32>
func.func @weight_type_mismatch() -> tensor<32x64xf32> {
  // expected-error @+1 {{'tfm.weight' op result type 'tensor<32x64xf32>' does not match the type 'tensor<64x32xf32>' declared by @layers.0.linear1.weight}}
  %0 = tfm.weight @"layers.0.linear1.weight" : tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}

// -----

tfm.param @p : tensor<4xf32>
func.func @weight_f16() -> tensor<4xf16> {
  // expected-error @+1 {{'tfm.weight' op result #0 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %0 = tfm.weight @p : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.embedding
//===----------------------------------------------------------------------===//

func.func @embedding_table_rank(%ids: tensor<?x?xi32>, %t: tensor<100xf32>) -> tensor<?x?xf32> {
  // expected-error @+2 {{'tfm.embedding' op table must be [vocab_size, d_model], got 'tensor<100xf32>'}}
  // expected-error @+1 {{'tfm.embedding' op failed to infer returned types}}
  %0 = tfm.embedding %ids, %t : (tensor<?x?xi32>, tensor<100xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @embedding_table_rank3(%ids: tensor<?x?xi32>, %t: tensor<100x4x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+2 {{'tfm.embedding' op table must be [vocab_size, d_model], got 'tensor<100x4x8xf32>'}}
  // expected-error @+1 {{'tfm.embedding' op failed to infer returned types}}
  %0 = tfm.embedding %ids, %t : (tensor<?x?xi32>, tensor<100x4x8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @embedding_float_ids(%ids: tensor<?x?xf32>, %t: tensor<100x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.embedding' op operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = tfm.embedding %ids, %t : (tensor<?x?xf32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @embedding_wrong_result(%ids: tensor<?x?xi32>, %t: tensor<100x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.embedding' op inferred type(s) 'tensor<?x?x32xf32>' are incompatible with return type(s) of operation 'tensor<?x?x64xf32>'}}
  // expected-error @+1 {{'tfm.embedding' op failed to infer returned types}}
  %0 = tfm.embedding %ids, %t : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.position_encoding
//===----------------------------------------------------------------------===//

func.func @position_rank(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op input must be [..., seq, d_model] (rank >= 2), got 'tensor<32xf32>'}}
  %0 = tfm.position_encoding <sinusoidal> %x : tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @learned_without_table(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op learned positions need a position table operand}}
  %0 = tfm.position_encoding <learned> %x : tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @sinusoidal_with_table(%x: tensor<?x?x32xf32>, %t: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op sinusoidal positions take no table operand}}
  %0 = tfm.position_encoding <sinusoidal> %x, %t : tensor<?x?x32xf32>, tensor<64x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @position_table_width(%x: tensor<?x?x32xf32>, %t: tensor<64x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op position table must be [?, 32], got 'tensor<64x16xf32>'}}
  %0 = tfm.position_encoding <learned> %x, %t : tensor<?x?x32xf32>, tensor<64x16xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @position_table_rank(%x: tensor<?x?x32xf32>, %t: tensor<64x1x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op position table must be [?, 32], got 'tensor<64x1x32xf32>'}}
  %0 = tfm.position_encoding <learned> %x, %t : tensor<?x?x32xf32>, tensor<64x1x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @position_seq_too_long(%x: tensor<2x128x32xf32>, %t: tensor<64x32xf32>) -> tensor<2x128x32xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op sequence length 128 exceeds the 64 rows of the position table}}
  %0 = tfm.position_encoding <learned> %x, %t : tensor<2x128x32xf32>, tensor<64x32xf32>
  return %0 : tensor<2x128x32xf32>
}

// -----

func.func @position_result_type(%x: tensor<?x?x32xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfm.position_encoding' op failed to verify that all of {input, result} have same type}}
  %0 = "tfm.position_encoding"(%x) <{kind = #tfm.position<sinusoidal>, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<?x?x32xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.rotary
//===----------------------------------------------------------------------===//

func.func @rotary_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tfm.rotary' op input must be [..., seq, dk] (rank >= 2), got 'tensor<8xf32>'}}
  %0 = tfm.rotary <half> %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @rotary_odd(%x: tensor<1x4x?x7xf32>) -> tensor<1x4x?x7xf32> {
  // expected-error @+1 {{'tfm.rotary' op rotary embedding needs an even, static head size, got 7}}
  %0 = tfm.rotary <interleaved> %x : tensor<1x4x?x7xf32>
  return %0 : tensor<1x4x?x7xf32>
}

// -----

func.func @rotary_dynamic(%x: tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32> {
  // expected-error @+1 {{'tfm.rotary' op rotary embedding needs an even, static head size, got ?}}
  %0 = tfm.rotary <half> %x : tensor<1x4x?x?xf32>
  return %0 : tensor<1x4x?x?xf32>
}

// -----

func.func @rotary_base_zero(%x: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+1 {{'tfm.rotary' op base must be positive, got 0.000000e+00}}
  %0 = tfm.rotary <half> %x {base = 0.0 : f32} : tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @rotary_base_negative(%x: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+1 {{'tfm.rotary' op base must be positive, got -1.000000e+04}}
  %0 = tfm.rotary <half> %x {base = -1.0e+04 : f32} : tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @rotary_bad_style(%x: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{custom op 'tfm.rotary' expected ::mlir::tfm::RopeStyle to be one of: half, interleaved}}
  // expected-error @+1 {{custom op 'tfm.rotary' failed to parse Tfm_RopeStyleAttr parameter 'value' which is to be a `::mlir::tfm::RopeStyle`}}
  %0 = tfm.rotary <diagonal> %x : tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

// The position offset is an index (the custom form takes its type as given).
func.func @rotary_offset_type(%x: tensor<1x4x?x8xf32>, %p: i32) -> tensor<1x4x?x8xf32> {
  // expected-error @+1 {{'tfm.rotary' op operand #1 must be index, but got 'i32'}}
  %0 = "tfm.rotary"(%x, %p) <{base = 1.000000e+04 : f32, style = #tfm.rope<half>}> : (tensor<1x4x?x8xf32>, i32) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

// An offset does not lift the rule on the head size.
func.func @rotary_offset_odd(%x: tensor<1x4x?x7xf32>, %p: index) -> tensor<1x4x?x7xf32> {
  // expected-error @+1 {{'tfm.rotary' op rotary embedding needs an even, static head size, got 7}}
  %0 = tfm.rotary <half> %x offset %p : tensor<1x4x?x7xf32>
  return %0 : tensor<1x4x?x7xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.linear
//===----------------------------------------------------------------------===//

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<64x32xf32>) -> tensor<f32> {
  // expected-error @+2 {{'tfm.linear' op input must be [..., in_features] (rank >= 1), got 'tensor<f32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = "tfm.linear"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<f32>, tensor<64x32xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The residual epilogue adds a tensor of the result's shape.
func.func @linear_residual_shape(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %r: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.linear' op residual must be [?, ?, 64], got 'tensor<?x?x32xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w residual %r : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_residual_rank(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %r: tensor<?x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.linear' op residual must be [?, ?, 64], got 'tensor<?x64xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w, %b activation <relu> residual %r : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// Not one of the activations.
func.func @linear_unknown_activation(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{expected ::mlir::tfm::Activation to be one of: relu, gelu, gelu_tanh}}
  // expected-error @+1 {{failed to parse Tfm_ActivationAttr parameter 'value'}}
  %0 = tfm.linear %x, %w activation <swish> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_weight_rank(%x: tensor<?x?x32xf32>, %w: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+2 {{'tfm.linear' op weight must be [out_features, in_features], got 'tensor<32xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = "tfm.linear"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linear_features(%x: tensor<?x?x16xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.linear' op input has 16 features but the weight expects 32}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w : (tensor<?x?x16xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_bias(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.linear' op bias must be [64], got 'tensor<32xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_bias_rank(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<1x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.linear' op bias must be [64], got 'tensor<1x64xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<1x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_wrong_result(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+2 {{'tfm.linear' op inferred type(s) 'tensor<?x?x64xf32>' are incompatible with return type(s) of operation 'tensor<?x?x32xf32>'}}
  // expected-error @+1 {{'tfm.linear' op failed to infer returned types}}
  %0 = tfm.linear %x, %w : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.split_heads / tfm.merge_heads
//===----------------------------------------------------------------------===//

func.func @split_heads_rank(%x: tensor<32xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op input must be [..., seq, d_model] (rank >= 2), got 'tensor<32xf32>'}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into 4 heads : tensor<32xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @split_heads_zero(%x: tensor<?x?x32xf32>) -> tensor<?x0x?x0xf32> {
  // expected-error @+2 {{'tfm.split_heads' op num_heads must be positive, got 0}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into 0 heads : tensor<?x?x32xf32> -> tensor<?x0x?x0xf32>
  return %0 : tensor<?x0x?x0xf32>
}

// -----

func.func @split_heads_negative(%x: tensor<?x?x32xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op num_heads must be positive, got -4}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into -4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_dynamic(%x: tensor<?x?x?xf32>) -> tensor<?x4x?x?xf32> {
  // expected-error @+2 {{'tfm.split_heads' op d_model (the last dimension) must be static}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into 4 heads : tensor<?x?x?xf32> -> tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}

// -----

func.func @split_heads_divisible(%x: tensor<?x?x32xf32>) -> tensor<?x5x?x6xf32> {
  // expected-error @+2 {{'tfm.split_heads' op d_model 32 is not divisible by 5 heads}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into 5 heads : tensor<?x?x32xf32> -> tensor<?x5x?x6xf32>
  return %0 : tensor<?x5x?x6xf32>
}

// -----

func.func @split_heads_wrong_result(%x: tensor<?x?x32xf32>) -> tensor<?x?x4x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op inferred type(s) 'tensor<?x4x?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x?x4x8xf32>'}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x into 4 heads : tensor<?x?x32xf32> -> tensor<?x?x4x8xf32>
  return %0 : tensor<?x?x4x8xf32>
}

// -----

// `part P of N` is one piece of syntax; the generic form can set one
// attribute without the other.
func.func @split_heads_part_without_parts(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op `part` and `parts` come together}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = "tfm.split_heads"(%x) <{num_heads = 4 : i64, part = 1 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_parts_without_part(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op `part` and `parts` come together}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = "tfm.split_heads"(%x) <{num_heads = 4 : i64, parts = 3 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_part_missing_of(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{custom op 'tfm.split_heads' expected 'of'}}
  %0 = tfm.split_heads %x part 1 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// Blocks count from 0: the last of 3 is 2.
func.func @split_heads_part_past_end(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op part 3 of 3 does not name a block}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 3 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_part_negative(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op part -1 of 3 does not name a block}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part -1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_no_parts(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op part 0 of 0 does not name a block}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 0 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_negative_parts(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op part 0 of -3 does not name a block}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of -3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @split_heads_parts_divisible(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op the 96 features do not split into 5 equal blocks}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 5 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// Not stacked rows at all: a [..., d_model] input.
func.func @split_heads_not_stacked(%x: tensor<?x?x32xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op the 32 features do not split into 3 equal blocks}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 3 into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// So many blocks that blocks x heads x dk would overflow: the rule divides,
// it never multiplies.
func.func @split_heads_huge_parts(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op the 96 features do not split into 9223372036854775807 equal blocks}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 9223372036854775807 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// 96 is 3 x 32, but a block of 32 features does not split into 5 heads.
func.func @split_heads_part_not_divisible(%x: tensor<?x?x96xf32>) -> tensor<?x5x?x6xf32> {
  // expected-error @+2 {{'tfm.split_heads' op d_model 32 is not divisible by 5 heads}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 1 of 3 into 5 heads : tensor<?x?x96xf32> -> tensor<?x5x?x6xf32>
  return %0 : tensor<?x5x?x6xf32>
}

// -----

// So many heads that 3 x heads would overflow: the rule divides a block
// by the heads and never multiplies, so no wrap-around hides the error.
func.func @split_heads_part_huge_heads(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op d_model 32 is not divisible by 6148914691236517206 heads}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 2 of 3 into 6148914691236517206 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A block of one is no block: its types infer (the whole input), the
// verifier rejects it.
func.func @split_heads_part_of_one(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x24xf32> {
  // expected-error @+1 {{'tfm.split_heads' op `part 0 of 1` is the whole input: leave it out}}
  %0 = tfm.split_heads %x part 0 of 1 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x24xf32>
  return %0 : tensor<?x4x?x24xf32>
}

// -----

// The heads split one block's features, not all of them.
func.func @split_heads_part_result_width(%x: tensor<?x?x96xf32>) -> tensor<?x4x?x24xf32> {
  // expected-error @+2 {{'tfm.split_heads' op inferred type(s) 'tensor<?x4x?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x4x?x24xf32>'}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x24xf32>
  return %0 : tensor<?x4x?x24xf32>
}

// -----

// The leading dimensions carry over as they are: a batch of 2 is not ?.
func.func @split_heads_part_result_batch(%x: tensor<2x?x96xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.split_heads' op inferred type(s) 'tensor<2x4x?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 3 into 4 heads : tensor<2x?x96xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @merge_heads_rank(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+2 {{'tfm.merge_heads' op input must be [..., heads, seq, dk] (rank >= 3), got 'tensor<?x32xf32>'}}
  // expected-error @+1 {{'tfm.merge_heads' op failed to infer returned types}}
  %0 = tfm.merge_heads %x : tensor<?x32xf32> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

func.func @merge_heads_dynamic_heads(%x: tensor<1x?x?x8xf32>) -> tensor<1x?x?xf32> {
  // expected-error @+2 {{'tfm.merge_heads' op heads and dk must be static, got 'tensor<1x?x?x8xf32>'}}
  // expected-error @+1 {{'tfm.merge_heads' op failed to infer returned types}}
  %0 = tfm.merge_heads %x : tensor<1x?x?x8xf32> -> tensor<1x?x?xf32>
  return %0 : tensor<1x?x?xf32>
}

// -----

func.func @merge_heads_dynamic_dk(%x: tensor<1x4x?x?xf32>) -> tensor<1x?x?xf32> {
  // expected-error @+2 {{'tfm.merge_heads' op heads and dk must be static, got 'tensor<1x4x?x?xf32>'}}
  // expected-error @+1 {{'tfm.merge_heads' op failed to infer returned types}}
  %0 = tfm.merge_heads %x : tensor<1x4x?x?xf32> -> tensor<1x?x?xf32>
  return %0 : tensor<1x?x?xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.slice_rows
//===----------------------------------------------------------------------===//

func.func @slice_rows_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tfm.slice_rows' op input and result must have the same rank (>= 1), got 'tensor<f32>' and 'tensor<f32>'}}
  %0 = tfm.slice_rows %x from 0 : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @slice_rows_rank(%w: tensor<96x32xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op input and result must have the same rank (>= 1), got 'tensor<96x32xf32>' and 'tensor<64xf32>'}}
  %0 = tfm.slice_rows %w from 32 : tensor<96x32xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

func.func @slice_rows_dynamic_input(%w: tensor<?x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op the rows of input and result must be static, got 'tensor<?x32xf32>' and 'tensor<64x32xf32>'}}
  %0 = tfm.slice_rows %w from 32 : tensor<?x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @slice_rows_dynamic_result(%w: tensor<96x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op the rows of input and result must be static, got 'tensor<96x32xf32>' and 'tensor<?x32xf32>'}}
  %0 = tfm.slice_rows %w from 32 : tensor<96x32xf32> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

func.func @slice_rows_columns(%w: tensor<96x32xf32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op dimension 1 differs: input 'tensor<96x32xf32>', result 'tensor<64x16xf32>'}}
  %0 = tfm.slice_rows %w from 32 : tensor<96x32xf32> -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

// The other dimensions are the input's exactly: a ? stays a ?.
func.func @slice_rows_columns_dynamic(%w: tensor<96x?xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op dimension 1 differs: input 'tensor<96x?xf32>', result 'tensor<64x32xf32>'}}
  %0 = tfm.slice_rows %w from 32 : tensor<96x?xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @slice_rows_inner_dim(%t: tensor<6x4x8xf32>) -> tensor<3x4x2xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op dimension 2 differs: input 'tensor<6x4x8xf32>', result 'tensor<3x4x2xf32>'}}
  %0 = tfm.slice_rows %t from 0 : tensor<6x4x8xf32> -> tensor<3x4x2xf32>
  return %0 : tensor<3x4x2xf32>
}

// -----

func.func @slice_rows_past_end(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op rows from 33 (64 of them) are not within the 96 rows of the input}}
  %0 = tfm.slice_rows %w from 33 : tensor<96x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @slice_rows_negative(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op rows from -1 (64 of them) are not within the 96 rows of the input}}
  %0 = tfm.slice_rows %w from -1 : tensor<96x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

// At least one row.
func.func @slice_rows_empty(%w: tensor<96x32xf32>) -> tensor<0x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op the result must take at least one row, got 'tensor<0x32xf32>'}}
  %0 = tfm.slice_rows %w from 0 : tensor<96x32xf32> -> tensor<0x32xf32>
  return %0 : tensor<0x32xf32>
}

// -----

func.func @slice_rows_more_than_input(%b: tensor<32xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op rows from 0 (64 of them) are not within the 32 rows of the input}}
  %0 = tfm.slice_rows %b from 0 : tensor<32xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

func.func @slice_rows_no_offset(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op requires attribute 'offset'}}
  %0 = "tfm.slice_rows"(%w) : (tensor<96x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @slice_rows_missing_from(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{custom op 'tfm.slice_rows' expected 'from'}}
  %0 = tfm.slice_rows %w 32 : tensor<96x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.attention
//===----------------------------------------------------------------------===//

func.func @attention_query_rank(%q: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{'tfm.attention' op query must be [..., seq, dk] (rank >= 2), got 'tensor<8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %q, %q : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @attention_rank_mismatch(%q: tensor<1x4x?x8xf32>, %k: tensor<4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op query, key and value must have the same rank, got 'tensor<1x4x?x8xf32>', 'tensor<4x?x8xf32>', 'tensor<4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <scaled_dot> %q, %k, %k : (tensor<1x4x?x8xf32>, tensor<4x?x8xf32>, tensor<4x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_value_rank(%q: tensor<1x4x?x8xf32>, %v: tensor<1x4x?x8x1xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op query, key and value must have the same rank, got 'tensor<1x4x?x8xf32>', 'tensor<1x4x?x8xf32>', 'tensor<1x4x?x8x1xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <scaled_dot> %q, %q, %v : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8x1xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_leading_dim(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op leading dimension 1 differs: query 4, key 2, value 4}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <scaled_dot> %q, %k, %q : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_leading_dim_value(%q: tensor<?x4x?x8xf32>, %k: tensor<2x4x?x8xf32>, %v: tensor<3x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op leading dimension 0 differs: query ?, key 2, value 3}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <scaled_dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<3x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_head_size(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32> {
  // expected-error @+2 {{'tfm.attention' op query head size 8 does not match key head size 16}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %k, %k : (tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  return %0 : tensor<1x4x?x16xf32>
}

// -----

func.func @attention_kv_length(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x6x8xf32>, %v: tensor<1x4x7x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+2 {{'tfm.attention' op key length 6 does not match value length 7}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %k, %v : (tensor<1x4x5x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x7x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @attention_params_rank2(%q: tensor<?x8xf32>, %w: tensor<1x8x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op score <bilinear> has per-head parameters: query must be [..., heads, seq, dk]}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <bilinear> %q, %q, %q params(%w) : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x8x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_dot_with_param(%q: tensor<1x4x?x8xf32>, %w: tensor<4x8x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op score <dot> takes no parameters, got 1}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %q, %q params(%w) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_scaled_dot_with_param(%q: tensor<1x4x?x8xf32>, %w: tensor<4x8x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op score <scaled_dot> takes no parameters, got 2}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q params(%w, %w) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_bilinear_no_param(%q: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op score <bilinear> takes 1 parameter(s) (weight [heads, dk, dk]), got 0}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <bilinear> %q, %q, %q : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_two_params(%q: tensor<1x4x?x8xf32>, %w: tensor<4x16x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op score <additive> takes 3 parameter(s) (w_key [heads, A, dk], w_query [heads, A, dk], v [heads, A]), got 2}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%w, %w) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_bilinear_weight(%q: tensor<1x4x?x8xf32>, %w: tensor<4x8x16xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op bilinear score weight must be [4, 8, 8], got 'tensor<4x8x16xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <bilinear> %q, %q, %q params(%w) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x16xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_bilinear_heads(%q: tensor<1x4x?x8xf32>, %w: tensor<2x8x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op bilinear score weight must be [4, 8, 8], got 'tensor<2x8x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <bilinear> %q, %q, %q params(%w) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<2x8x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_w_key(%q: tensor<1x4x?x8xf32>, %wk: tensor<4x16x4xf32>, %wq: tensor<4x16x8xf32>, %v: tensor<4x16xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score w_key must be [4, 16, 8], got 'tensor<4x16x4xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %v) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x4xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_w_key_rank(%q: tensor<1x4x?x8xf32>, %wk: tensor<16x8xf32>, %wq: tensor<4x16x8xf32>, %v: tensor<4x16xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score w_key must be [4, 16, 8], got 'tensor<16x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %v) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_inner_zero(%q: tensor<1x4x?x8xf32>, %wk: tensor<4x0x8xf32>, %v: tensor<4x0xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score inner size (A) must be positive}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wk, %v) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x0x8xf32>, tensor<4x0x8xf32>, tensor<4x0xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_w_query(%q: tensor<1x4x?x8xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x12x8xf32>, %v: tensor<4x16xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score w_query must be [4, 16, 8], got 'tensor<4x12x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %v) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x12x8xf32>, tensor<4x16xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_additive_v(%q: tensor<1x4x?x8xf32>, %wk: tensor<4x16x8xf32>, %v: tensor<4x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score v must be [4, 16], got 'tensor<4x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wk, %v) : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_wrong_result(%q: tensor<1x4x?x8xf32>, %v: tensor<1x4x?x16xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op inferred type(s) 'tensor<1x4x?x16xf32>' are incompatible with return type(s) of operation 'tensor<1x4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %q, %v : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

func.func @attention_bad_score(%q: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{expected ::mlir::tfm::ScoreKind to be one of: dot, scaled_dot, bilinear, additive}}
  // expected-error @+1 {{failed to parse Tfm_ScoreKindAttr parameter 'value' which is to be a `::mlir::tfm::ScoreKind`}}
  %0 = "tfm.attention"(%q, %q, %q) <{score = #tfm.score<cosine>}> : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

// The offset places the query rows for the mask: nothing to place without
// one.
func.func @attention_offset_not_causal(%q: tensor<?x4x?x8xf32>, %p: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.attention' op `offset` places the queries for the mask; without a mask it means nothing}}
  %0 = tfm.attention <dot> %q, %q, %q offset %p : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_offset_not_causal_generic(%q: tensor<?x4x?x8xf32>, %w: tensor<4x8x8xf32>, %p: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.attention' op `offset` places the queries for the mask; without a mask it means nothing}}
  %0 = "tfm.attention"(%q, %q, %q, %w, %p) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>, score = #tfm.score<bilinear>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_offset_type(%q: tensor<?x4x?x8xf32>, %p: i64) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.attention' op operand #3 must be index, but got 'i64'}}
  %0 = tfm.attention <dot> %q, %q, %q causal offset %p : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, i64) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// The generic form counts each group of operands: here the offset is not
// counted.
func.func @attention_segment_sizes(%q: tensor<?x4x?x8xf32>, %p: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.attention' op operand count (4) does not match with the total size (3) specified in attribute 'operandSegmentSizes'}}
  %0 = "tfm.attention"(%q, %q, %q, %p) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// ... and without operandSegmentSizes it counts none.
func.func @attention_no_segment_sizes(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.attention' op operand count (3) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
  %0 = "tfm.attention"(%q, %q, %q) <{score = #tfm.score<dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.multi_head_attention
//===----------------------------------------------------------------------===//

func.func @mha_query_rank(%x: tensor<32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op query must be [..., seq, d_model] (rank >= 2), got 'tensor<32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @mha_zero_heads(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op num_heads must be positive, got 0}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 0 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_negative_heads(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op num_heads must be positive, got -2}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads -2 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_dynamic_d_model(%x: tensor<?x?x?xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op d_model (the last dimension) must be static}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x?xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @mha_not_divisible(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op d_model 32 is not divisible by 3 heads}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 3 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_memory_batch(%x: tensor<2x?x32xf32>, %m: tensor<3x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<2x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op memory must be [2, ?, 32], got 'tensor<3x?x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<2x?x32xf32>, tensor<3x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
  return %0 : tensor<2x?x32xf32>
}

// -----

func.func @mha_memory_d_model(%x: tensor<?x?x32xf32>, %m: tensor<?x?x64xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op memory must be [?, ?, 32], got 'tensor<?x?x64xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_memory_rank(%x: tensor<?x?x32xf32>, %m: tensor<?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op memory must be [?, ?, 32], got 'tensor<?x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_memory_causal(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a mask applies to self-attention only; attention over memory sees every key}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_memory_rope(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op rotary positions apply to self-attention only}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_in_proj_weight(%x: tensor<?x?x32xf32>, %wi: tensor<32x96xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op in_proj_weight must be [96, 32], got 'tensor<32x96xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<32x96xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_in_proj_bias(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<32xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op in_proj_bias must be [96], got 'tensor<32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_out_proj_weight(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x64xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op out_proj_weight must be [32, 32], got 'tensor<32x64xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_out_proj_bias(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<1x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op out_proj_bias must be [32], got 'tensor<1x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<1x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_bilinear_no_param(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op score <bilinear> takes 1 parameter(s) (weight [heads, dk, dk]), got 0}}
  %0 = tfm.multi_head_attention <bilinear> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_bilinear_weight(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<8x4x4xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op bilinear score weight must be [4, 8, 8], got 'tensor<8x4x4xf32>'}}
  %0 = tfm.multi_head_attention <bilinear> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<8x4x4xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_additive_one_param(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %wk: tensor<4x16x8xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op score <additive> takes 3 parameter(s) (w_key [heads, A, dk], w_query [heads, A, dk], v [heads, A]), got 1}}
  %0 = tfm.multi_head_attention <additive> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_additive_v(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %wk: tensor<4x16x8xf32>, %v: tensor<16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op additive score v must be [4, 16], got 'tensor<16xf32>'}}
  %0 = tfm.multi_head_attention <additive> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk, %wk, %v) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_dot_with_param(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x8x8xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op score <dot> takes no parameters, got 1}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x8x8xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_rope_odd_dk(%x: tensor<?x?x12xf32>, %wi: tensor<36x12xf32>, %bi: tensor<36xf32>, %wo: tensor<12x12xf32>, %bo: tensor<12xf32>) -> tensor<?x?x12xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op rotary positions need an even head size, got dk = 3}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x?x12xf32>, tensor<36x12xf32>, tensor<36xf32>, tensor<12x12xf32>, tensor<12xf32>) -> tensor<?x?x12xf32>
  return %0 : tensor<?x?x12xf32>
}

// -----

func.func @mha_rope_base_without_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op rope_base is set but rope is not}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) {rope_base = 5.0e+05 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_rope_base_zero(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op rope_base must be positive, got 0.000000e+00}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) {rope = #tfm.rope<interleaved>, rope_base = 0.0 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_rope_base_negative(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op rope_base must be positive, got -1.000000e+04}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) {rope = #tfm.rope<half>, rope_base = -1.0e+04 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_result_type(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<2x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op failed to verify that all of {query, result} have same type}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
  return %0 : tensor<2x?x32xf32>
}

// -----

func.func @mha_rope_base_type(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{custom op 'tfm.multi_head_attention' 'tfm.multi_head_attention' op attribute 'rope_base' failed to satisfy constraint: 32-bit float attribute}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>, rope_base = 1.0e+04 : f64} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.softmax
//===----------------------------------------------------------------------===//

func.func @softmax_dim_high(%x: tensor<1x4x?xf32>) -> tensor<1x4x?xf32> {
  // expected-error @+1 {{'tfm.softmax' op dim 3 is out of range for rank 3}}
  %0 = tfm.softmax %x {dim = 3 : i64} : tensor<1x4x?xf32>
  return %0 : tensor<1x4x?xf32>
}

// -----

func.func @softmax_dim_low(%x: tensor<1x4x?xf32>) -> tensor<1x4x?xf32> {
  // expected-error @+1 {{'tfm.softmax' op dim -4 is out of range for rank 3}}
  %0 = tfm.softmax %x {dim = -4 : i64} : tensor<1x4x?xf32>
  return %0 : tensor<1x4x?xf32>
}

// -----

func.func @softmax_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tfm.softmax' op dim -1 is out of range for rank 0}}
  %0 = tfm.softmax %x : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_result_type(%x: tensor<1x4xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'tfm.softmax' op requires the same type for all operands and results}}
  %0 = "tfm.softmax"(%x) <{dim = -1 : i64}> : (tensor<1x4xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.layer_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tfm.layer_norm' op input must be [..., d_model] (rank >= 1), got 'tensor<f32>'}}
  %0 = tfm.layer_norm %x, %g, %g : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_gamma(%x: tensor<?x?x32xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op gamma must be [32], got 'tensor<16xf32>'}}
  %0 = tfm.layer_norm %x, %g, %b : tensor<?x?x32xf32>, tensor<16xf32>, tensor<32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @layer_norm_beta(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<1x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op beta must be [32], got 'tensor<1x32xf32>'}}
  %0 = tfm.layer_norm %x, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<1x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @layer_norm_eps_zero(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op eps must be positive, got 0.000000e+00}}
  %0 = tfm.layer_norm %x, %g, %g {eps = 0.0 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @layer_norm_eps_negative(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op eps must be positive, got -1.000000e-05}}
  %0 = tfm.layer_norm %x, %g, %g {eps = -1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.ffn
//===----------------------------------------------------------------------===//

func.func @ffn_scalar(%x: tensor<f32>, %w: tensor<1x1xf32>, %b: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tfm.ffn' op input must be [..., d_model] (rank >= 1), got 'tensor<f32>'}}
  %0 = tfm.ffn <relu> %x, %w, %b, %w, %b : (tensor<f32>, tensor<1x1xf32>, tensor<1xf32>, tensor<1x1xf32>, tensor<1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @ffn_w1(%x: tensor<?x?x32xf32>, %w1: tensor<64x16xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w1 must be [64, 32], got 'tensor<64x16xf32>'}}
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_w1_rank(%x: tensor<?x?x32xf32>, %w1: tensor<64x32x1xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w1 must be [64, 32], got 'tensor<64x32x1xf32>'}}
  %0 = tfm.ffn <gelu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32x1xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_b1(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op b1 must be [64], got 'tensor<32xf32>'}}
  %0 = tfm.ffn <gelu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_w2(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<64x32xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w2 must be [32, 64], got 'tensor<64x32xf32>'}}
  %0 = tfm.ffn <gelu_tanh> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_b2(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op b2 must be [32], got 'tensor<64xf32>'}}
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_gated_dynamic_w1(%x: tensor<?x?x32xf32>, %w1: tensor<?x32xf32>, %w2: tensor<32x24xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op gated: w1 must have a static, even number of rows (the gate rows, then as many up rows), got 'tensor<?x32xf32>'}}
  %0 = tfm.ffn <silu> gated %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<32x24xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_gated_odd_w1(%x: tensor<?x?x32xf32>, %w1: tensor<33x32xf32>, %w2: tensor<32x?xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op gated: w1 must have a static, even number of rows (the gate rows, then as many up rows), got 'tensor<33x32xf32>'}}
  %0 = tfm.ffn <silu> gated %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<33x32xf32>, tensor<32x?xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_dynamic_d_ff(%x: tensor<?x?x32xf32>, %w1: tensor<?x16xf32>, %w2: tensor<32x?xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w1 must be [?, 32], got 'tensor<?x16xf32>'}}
  %0 = tfm.ffn <relu> %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<?x16xf32>, tensor<32x?xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_result_type(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.ffn' op failed to verify that all of {input, result} have same type}}
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.moe
//===----------------------------------------------------------------------===//

func.func @moe_scalar(%x: tensor<f32>, %g: tensor<2x1xf32>, %w: tensor<1x1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tfm.moe' op input must be [..., d_model] (rank >= 1), got 'tensor<f32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w, %w) linear2(%w, %w) : (tensor<f32>, tensor<2x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @moe_no_experts(%x: tensor<?x?x32xf32>, %g: tensor<0x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op needs at least one expert (linear1 and linear2 weights)}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1() linear2() : (tensor<?x?x32xf32>, tensor<0x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_linear2_count(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op has 2 linear1 weights but 1 linear2 weights}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// The biases come together (linear1's and linear2's)...
func.func @moe_bias_alone(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op biases come per expert and together: 2 of each or none, got 2 and 0}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) bias(%b1, %b1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// ...one of each per expert.
func.func @moe_bias_count(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op biases come per expert and together: 2 of each or none, got 1 and 1}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) bias(%b1) linear2(%w2, %w2) bias(%b2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_top_zero(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op top 0 must be from 1 to the 2 experts}}
  %0 = tfm.moe <relu> %x, %g top 0 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_top_too_many(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op top 3 must be from 1 to the 2 experts}}
  %0 = tfm.moe <relu> %x, %g top 3 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Expert weights are packed at load: their shapes are static.
func.func @moe_dynamic_weight(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<?x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op expert weights must have static shapes, got 'tensor<?x32xf32>'}}
  %0 = tfm.moe <silu> gated %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_weight_rank(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32x1xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op expert weights must be [rows, columns], got 'tensor<64x32x1xf32>' and 'tensor<32x64xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32x1xf32>, tensor<64x32x1xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// d_model comes from the weights when the input leaves it open.
func.func @moe_d_model(%x: tensor<?x?x?xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<16x64xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfm.moe' op linear2 weight must be [32, 64], got 'tensor<16x64xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x?xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// The router has a row of d_model per expert.
func.func @moe_gate(%x: tensor<?x?x32xf32>, %g: tensor<3x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op gate must be [2, 32], got 'tensor<3x32xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Every expert has expert 0's weight types.
func.func @moe_expert_differs(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w1b: tensor<48x32xf32>, %w2: tensor<32x64xf32>, %w2b: tensor<32x48xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op expert 1's weights 'tensor<48x32xf32>', 'tensor<32x48xf32>' differ from expert 0's 'tensor<64x32xf32>', 'tensor<32x64xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1b) linear2(%w2, %w2b) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<48x32xf32>, tensor<32x64xf32>, tensor<32x48xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_linear1(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x16xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op linear1 weight must be [64, 32], got 'tensor<64x16xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A gated expert's linear1 holds the gate's rows, then the up projection's:
// 2 d_ff of them.
func.func @moe_gated_linear1(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op linear1 weight must be [128, 32], got 'tensor<64x32xf32>'}}
  %0 = tfm.moe <silu> gated %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_linear2(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<16x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op linear2 weight must be [32, 64], got 'tensor<16x64xf32>'}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_linear1_bias(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op linear1 bias must be [64], got 'tensor<32xf32>'}}
  %0 = tfm.moe <gelu> %x, %g top 1 linear1(%w1, %w1) bias(%b1, %b1) linear2(%w2, %w2) bias(%b2, %b2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Each expert's biases check on their own: expert 1's linear2 bias here.
func.func @moe_linear2_bias(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>, %b2b: tensor<64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.moe' op linear2 bias must be [32], got 'tensor<64xf32>'}}
  %0 = tfm.moe <gelu> %x, %g top 1 linear1(%w1, %w1) bias(%b1, %b1) linear2(%w2, %w2) bias(%b2, %b2b) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @moe_result_type(%x: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.moe' op failed to verify that all of {input, result} have same type}}
  %0 = tfm.moe <relu> %x, %g top 1 linear1(%w1, %w1) linear2(%w2, %w2) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.route_experts
//===----------------------------------------------------------------------===//

func.func @route_experts_scalar(%l: tensor<f32>) {
  // expected-error @+1 {{'tfm.route_experts' op logits must be [..., experts] (rank >= 1), got 'tensor<f32>'}}
  %t, %w, %s = tfm.route_experts %l top 1 : tensor<f32> -> tensor<1xi32>, tensor<1xf32>, tensor<2xi32>
  return
}

// -----

// The number of experts fixes `starts`: it is static.
func.func @route_experts_dynamic(%l: tensor<?x?xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op logits need a static number of experts, got 'tensor<?x?xf32>'}}
  %t, %w, %s = tfm.route_experts %l top 1 : tensor<?x?xf32> -> tensor<?x1xi32>, tensor<?x1xf32>, tensor<?xi32>
  return
}

// -----

func.func @route_experts_top_zero(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op top 0 must be from 1 to the 4 experts}}
  %t, %w, %s = tfm.route_experts %l top 0 : tensor<?x?x4xf32> -> tensor<?x?x0xi32>, tensor<?x?x0xf32>, tensor<5xi32>
  return
}

// -----

func.func @route_experts_top_too_many(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op top 5 must be from 1 to the 4 experts}}
  %t, %w, %s = tfm.route_experts %l top 5 : tensor<?x?x4xf32> -> tensor<?x?x5xi32>, tensor<?x?x5xf32>, tensor<5xi32>
  return
}

// -----

// A token's k pairs: the logits' rows, the last dimension top_k.
func.func @route_experts_tokens(%l: tensor<2x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op tokens must be [2, ?, 2], got 'tensor<2x?x4xi32>'}}
  %t, %w, %s = tfm.route_experts %l top 2 : tensor<2x?x4xf32> -> tensor<2x?x4xi32>, tensor<2x?x2xf32>, tensor<5xi32>
  return
}

// -----

func.func @route_experts_weights(%l: tensor<2x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op weights must be [2, ?, 2], got 'tensor<3x?x2xf32>'}}
  %t, %w, %s = tfm.route_experts %l top 2 : tensor<2x?x4xf32> -> tensor<2x?x2xi32>, tensor<3x?x2xf32>, tensor<5xi32>
  return
}

// -----

// Where each of the E groups begins, and the number of pairs: E + 1.
func.func @route_experts_starts(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op starts must be [5], got 'tensor<4xi32>'}}
  %t, %w, %s = tfm.route_experts %l top 2 : tensor<?x?x4xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<4xi32>
  return
}

// -----

func.func @route_experts_f32_tokens(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfm.route_experts' op result #0 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x?x2xf32>'}}
  %t, %w, %s = tfm.route_experts %l top 2 : tensor<?x?x4xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<5xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfm.gather_rows
//===----------------------------------------------------------------------===//

func.func @gather_rows_scalar(%x: tensor<f32>, %t: tensor<2xi32>) {
  // expected-error @+1 {{'tfm.gather_rows' op input must be [..., d] (rank >= 1), got 'tensor<f32>'}}
  %0 = tfm.gather_rows %x, %t : (tensor<f32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

// `tokens` has the input's rows, then the slots of each.
func.func @gather_rows_tokens(%x: tensor<2x5x32xf32>, %t: tensor<2x6x2xi32>) {
  // expected-error @+1 {{'tfm.gather_rows' op tokens must be [2, 5, 2], got 'tensor<2x6x2xi32>'}}
  %0 = tfm.gather_rows %x, %t : (tensor<2x5x32xf32>, tensor<2x6x2xi32>) -> tensor<2x6x2x32xf32>
  return
}

// -----

func.func @gather_rows_no_slots(%x: tensor<?x?x32xf32>, %t: tensor<?x?xi32>) {
  // expected-error @+1 {{'tfm.gather_rows' op tokens must be [?, ?, ?], got 'tensor<?x?xi32>'}}
  %0 = tfm.gather_rows %x, %t : (tensor<?x?x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @gather_rows_result(%x: tensor<?x?x32xf32>, %t: tensor<?x?x2xi32>) {
  // expected-error @+1 {{'tfm.gather_rows' op result must be [?, ?, 2, 32], got 'tensor<?x?x32xf32>'}}
  %0 = tfm.gather_rows %x, %t : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @gather_rows_i64_tokens(%x: tensor<?x?x32xf32>, %t: tensor<?x?x2xi64>) {
  // expected-error @+1 {{'tfm.gather_rows' op operand #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x?x2xi64>'}}
  %0 = tfm.gather_rows %x, %t : (tensor<?x?x32xf32>, tensor<?x?x2xi64>) -> tensor<?x?x2x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfm.grouped_linear
//===----------------------------------------------------------------------===//

// Rows of slots: [..., slots, in_features].
func.func @grouped_linear_rank(%x: tensor<32xf32>, %s: tensor<2xi32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op input must be [..., slots, in_features] (rank >= 2), got 'tensor<32xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w) : (tensor<32xf32>, tensor<2xi32>, tensor<64x32xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @grouped_linear_no_weights(%x: tensor<?x2x32xf32>, %s: tensor<1xi32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op needs at least one weight}}
  %0 = tfm.grouped_linear %x groups %s weights() : (tensor<?x2x32xf32>, tensor<1xi32>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @grouped_linear_bias_count(%x: tensor<?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op has 2 weights but 1 biases (one per weight, or none)}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) bias(%b) : (tensor<?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x2x64xf32>
  return
}

// -----

// Where each group begins, and the end of the last: one more than weights.
func.func @grouped_linear_groups(%x: tensor<?x2x32xf32>, %s: tensor<2xi32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op groups must be [3], got 'tensor<2xi32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) : (tensor<?x2x32xf32>, tensor<2xi32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x2x64xf32>
  return
}

// -----

func.func @grouped_linear_dynamic_weight(%x: tensor<?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<?x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op weights must have static shapes (each is packed into panels), got 'tensor<?x32xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) : (tensor<?x2x32xf32>, tensor<3xi32>, tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x2x?xf32>
  return
}

// -----

func.func @grouped_linear_weight(%x: tensor<?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<64x16xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op weight 0 must be [?, 32], got 'tensor<64x16xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) : (tensor<?x2x32xf32>, tensor<3xi32>, tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<?x2x64xf32>
  return
}

// -----

// Every group's weight has weight 0's type.
func.func @grouped_linear_weights_differ(%x: tensor<?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<64x32xf32>, %w1: tensor<48x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op weight 1 is 'tensor<48x32xf32>', weight 0 'tensor<64x32xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w1) : (tensor<?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<48x32xf32>) -> tensor<?x2x64xf32>
  return
}

// -----

func.func @grouped_linear_bias(%x: tensor<?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %b1: tensor<32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op bias must be [64], got 'tensor<32xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) bias(%b, %b1) : (tensor<?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32xf32>) -> tensor<?x2x64xf32>
  return
}

// -----

// The custom form writes `scatter %tokens, %weights`; the generic form can
// give one without the other.
func.func @grouped_linear_scatter_alone(%x: tensor<?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %t: tensor<?x2xi32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op scatter takes tokens and routing weights together}}
  %0 = "tfm.grouped_linear"(%x, %s, %w, %w, %t) <{operandSegmentSizes = array<i32: 1, 1, 2, 0, 1, 0, 0>}> : (tensor<?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x2xi32>) -> tensor<?x32xf32>
  return
}

// -----

// The scatter's tokens and routing weights are the input's rows: its shape
// without in_features.
func.func @grouped_linear_scatter_tokens(%x: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %t: tensor<?x?x1xi32>, %rw: tensor<?x?x2xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op scatter tokens must be [?, ?, 2], got 'tensor<?x?x1xi32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) scatter %t, %rw : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x1xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @grouped_linear_routing_weights(%x: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x2xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op routing weights must be [?, ?, 2], got 'tensor<?x2xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) scatter %t, %rw : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x2xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// Without scatter the result rows are the (token, slot) pairs': no
// residual of the tokens to add.
func.func @grouped_linear_residual_without_scatter(%x: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %r: tensor<?x?x2x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op adds a residual only with scatter (the result rows are the tokens')}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) residual %r : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2x32xf32>) -> tensor<?x?x2x32xf32>
  return
}

// -----

func.func @grouped_linear_residual(%x: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x?x2xf32>, %r: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op residual must be [?, ?, 32], got 'tensor<?x?x64xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) scatter %t, %rw residual %r : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x64xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// Without scatter the result keeps the slots...
func.func @grouped_linear_result(%x: tensor<?x?x2x32xf32>, %s: tensor<3xi32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op result must be [?, ?, 2, 64], got 'tensor<?x?x64xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

// ...with scatter they go back to their tokens.
func.func @grouped_linear_scatter_result(%x: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<32x64xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x?x2xf32>) {
  // expected-error @+1 {{'tfm.grouped_linear' op result must be [?, ?, 32], got 'tensor<?x?x2x32xf32>'}}
  %0 = tfm.grouped_linear %x groups %s weights(%w, %w) scatter %t, %rw : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x2x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfm.add and element-type constraints
//===----------------------------------------------------------------------===//

func.func @add_mismatch(%x: tensor<?x?x32xf32>, %y: tensor<?x?x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.add' op requires the same type for all operands and results}}
  %0 = "tfm.add"(%x, %y) : (tensor<?x?x32xf32>, tensor<?x?x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @add_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'tfm.add' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %0 = tfm.add %x, %x : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @add_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{custom op 'tfm.add' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = tfm.add %x, %x : tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @add_unranked_generic(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'tfm.add' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<*xf32>'}}
  %0 = "tfm.add"(%x, %x) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @linear_f16_weight(%x: tensor<?x32xf32>, %w: tensor<64x32xf16>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'tfm.linear' op operand #1 must be ranked tensor of 32-bit float values, but got 'tensor<64x32xf16>'}}
  %0 = tfm.linear %x, %w : (tensor<?x32xf32>, tensor<64x32xf16>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @layer_norm_memref(%x: memref<4x32xf32>, %g: tensor<32xf32>) -> memref<4x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op operand #0 must be ranked tensor of 32-bit float values, but got 'memref<4x32xf32>'}}
  %0 = "tfm.layer_norm"(%x, %g, %g) <{eps = 1.0e-05 : f32}> : (memref<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> memref<4x32xf32>
  return %0 : memref<4x32xf32>
}

// -----

func.func @mha_segment_sizes(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op operand count (5) does not match with the total size (6) specified in attribute 'operandSegmentSizes'}}
  %0 = "tfm.multi_head_attention"(%x, %wi, %bi, %wo, %bo) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A dynamic d_model is fixed by gamma; beta must then agree.
func.func @layer_norm_dynamic_d_model(%x: tensor<?x?x?xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op beta must be [16], got 'tensor<32xf32>'}}
  %0 = tfm.layer_norm %x, %g, %b : tensor<?x?x?xf32>, tensor<16xf32>, tensor<32xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// A dynamic d_ff in w1 is fixed by b1; w2 must then agree.
func.func @ffn_dynamic_d_ff(%x: tensor<?x?x32xf32>, %w1: tensor<?x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x128xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w2 must be [32, 64], got 'tensor<32x128xf32>'}}
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<64xf32>, tensor<32x128xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// With a dynamic head dimension, the additive parameters must still agree on heads.
func.func @attention_additive_dynamic_heads(%q: tensor<1x?x?x8xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<2x16x8xf32>, %v: tensor<4x16xf32>) -> tensor<1x?x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op additive score w_query must be [4, 16, 8], got 'tensor<2x16x8xf32>'}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %v) : (tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>, tensor<4x16x8xf32>, tensor<2x16x8xf32>, tensor<4x16xf32>) -> tensor<1x?x?x8xf32>
  return %0 : tensor<1x?x?x8xf32>
}

// -----

// expected-error @+1 {{'tfm.param' op alias must not be empty}}
tfm.param @"src_embed.weight" {alias = ""} : tensor<8x4xf32>

//===----------------------------------------------------------------------===//
// Incremental decoding: !tfm.kv_cache, tfm.cache, cached attention,
// tfm.cache_append, tfm.cache_read
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{kv_cache sizes must be positive, got maxBatch = 1, heads = 0, maxSeq = 16, headDim = 8}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 0, maxSeq = 16, headDim = 8>

// -----

// `features` (a cache of performer's feature sums) is positive, or 0 (the
// default: a cache of positions).
// expected-error @+1 {{kv_cache features must be positive (or left out for a cache of positions), got -1}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = -1>

// -----

tfm.param @c : tensor<4xf32>
func.func @cache_not_a_cache() {
  // expected-error @+1 {{'tfm.cache' op @c does not name a tfm.kv_cache}}
  %0 = tfm.cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
  return
}

// -----

tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
func.func @cache_type_mismatch() {
  // expected-error @+1 {{'tfm.cache' op result type '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 32, headDim = 8>' does not match the type '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>' declared by @c}}
  %0 = tfm.cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 32, headDim = 8>
  return
}

// -----

func.func @mha_cache_without_position(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a cache needs a position and a position a cache}}
  %0 = "tfm.multi_head_attention"(%x, %wi, %bi, %wo, %bo, %c) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_without_cache(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op cache_read_only is set but there is no cache}}
  %0 = "tfm.multi_head_attention"(%x, %wi, %bi, %wo, %bo) <{cache_read_only, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_with_memory(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a read-only cache holds the keys and values of the memory: it replaces `memory`, not both}}
  %0 = tfm.multi_head_attention <dot> %x memory %m heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_causal(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a read-only cache is cross-attention: neither masked nor rotary}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a read-only cache is cross-attention: neither masked nor rotary}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_self_cache_not_causal(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a key/value cache in self-attention needs causal attention}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_cache_heads_mismatch(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 16>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op cache '!tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 16>' does not hold 4 heads of 8}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 16>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Softmax attention's cache holds positions: one of feature sums (of the
// right heads and head size even) is not its cache, appending or (below)
// read-only.
func.func @mha_cache_feature_sums(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>' does not hold 4 heads of 8}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_feature_sums(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>' does not hold 4 heads of 8}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_cache_access_keyword(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{expected 'at' or 'upto' after the cache}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c from %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// tfm.cache_append: keys and values are [batch, heads, n, headDim] with the
// cache's heads and headDim, and at most its maxBatch sequences and maxSeq
// positions where those are static.
func.func @cache_append_heads(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x2x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op keys must be [?, 4, ?, 8], got 'tensor<?x2x?x8xf32>'}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x2x?x8xf32>
  return %0 : index
}

// -----

func.func @cache_append_head_dim(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<1x4x1x16xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op keys must be [?, 4, ?, 8], got 'tensor<1x4x1x16xf32>'}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<1x4x1x16xf32>
  return %0 : index
}

// -----

// Rows of heads, not of d_model: the heads are split first.
func.func @cache_append_rank(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x?x32xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op keys must be [?, 4, ?, 8], got 'tensor<?x?x32xf32>'}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x?x32xf32>
  return %0 : index
}

// -----

func.func @cache_append_batch(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<3x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op keys has 3 sequences; the cache holds 2}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<3x4x?x8xf32>
  return %0 : index
}

// -----

func.func @cache_append_positions(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x4x17x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op keys has 17 positions; the cache holds 16}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x17x8xf32>
  return %0 : index
}

// -----

// Keys and values have one type (the custom form writes it once); so the
// values' own shape checks can never fail after the keys' have passed.
func.func @cache_append_values_type(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x16xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op failed to verify that all of {keys, values} have same type}}
  %0 = "tfm.cache_append"(%c, %k, %v, %p) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<2x4x16x8xf32>, tensor<2x4x16x16xf32>, index) -> index
  return %0 : index
}

// -----

func.func @cache_append_position_type(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x4x?x8xf32>, %p: i64) -> index {
  // expected-error @+1 {{'tfm.cache_append' op operand #3 must be index, but got 'i64'}}
  %0 = "tfm.cache_append"(%c, %k, %k, %p) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, i64) -> index
  return %0 : index
}

// -----

func.func @cache_append_not_a_cache(%t: tensor<4xf32>, %k: tensor<?x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op operand #0 must be the keys and values of one attention, kept across calls, but got 'tensor<4xf32>'}}
  %0 = "tfm.cache_append"(%t, %k, %k, %p) : (tensor<4xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> index
  return %0 : index
}

// -----

// `at`, as in multi_head_attention's cache(%c at %pos).
func.func @cache_append_keyword(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{custom op 'tfm.cache_append' expected 'at'}}
  %0 = tfm.cache_append %c, %k, %k from %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
  return %0 : index
}

// -----

// A cache of feature sums holds no positions to append to (or read, below).
func.func @cache_append_feature_sums(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %k: tensor<?x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_append' op reads and writes positions; '!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>' holds feature sums (tfm.linear_attention's `sums`)}}
  %0 = tfm.cache_append %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, tensor<?x4x?x8xf32>
  return %0 : index
}

// -----

// A windowed !tfm.kv_cache keeps between 1 and maxSeq - 1 positions of a
// cache of positions; globals need a window.
// expected-error @+1 {{a windowed kv_cache keeps between 1 and maxSeq - 1 positions, got window + globals = 16 of maxSeq = 16 (leave the window out to keep every position)}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 14, globals = 2>

// -----

// expected-error @+1 {{a windowed kv_cache keeps between 1 and maxSeq - 1 positions, got window + globals = 0 of maxSeq = 16 (leave the window out to keep every position)}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 0>

// -----

// expected-error @+1 {{kv_cache window and globals must not be negative, got window = 4, globals = -1}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4, globals = -1>

// -----

// expected-error @+1 {{kv_cache globals = 2 without a window}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, globals = 2>

// -----

// expected-error @+1 {{a kv_cache of feature sums keeps no window}}
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 4, window = 4>

// -----

// A windowed cache no longer holds every position up to `length`.
func.func @cache_read_windowed(%c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, %b: index, %n: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.cache_read' op reads every position up to `length`; '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>' keeps only a window of them (tfm.cache_window)}}
  %k, %v = tfm.cache_read %c[%b, %n] : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>
  return %k : tensor<?x4x?x8xf32>
}

// -----

// tfm.cache_window gathers from a windowed cache, rows of its heads.
func.func @cache_window_not_windowed(%c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %k: tensor<?x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_window' op reads a windowed cache; '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>' keeps every position (tfm.cache_read)}}
  %wk, %wv, %o = tfm.cache_window %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
  return %o : index
}

// -----

func.func @cache_window_heads(%c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, %k: tensor<?x2x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_window' op keys must be [?, 4, ?, 8], got 'tensor<?x2x?x8xf32>'}}
  %wk, %wv, %o = tfm.cache_window %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, tensor<?x2x?x8xf32>
  return %o : index
}

// -----

func.func @cache_window_feature_sums(%c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 4>, %k: tensor<?x4x?x8xf32>, %p: index) -> index {
  // expected-error @+1 {{'tfm.cache_window' op reads a windowed cache; '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 4>' keeps every position (tfm.cache_read)}}
  %wk, %wv, %o = tfm.cache_window %c, %k, %k at %p : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 4>, tensor<?x4x?x8xf32>
  return %o : index
}

// -----

// A windowed cache in multi-head attention: self-attention with the
// window and the global tokens it keeps.
func.func @mha_windowed_cache_window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op windowed cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>' needs self-attention with a sliding window of 4 and 0 global tokens}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal window 3 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_windowed_cache_globals(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4, globals = 1>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op windowed cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4, globals = 1>' needs self-attention with a sliding window of 4 and 1 global tokens}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal window 4 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4, globals = 1>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Cross-attention over a read-only cache keeps every position of the memory.
func.func @mha_windowed_cache_read_only(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op windowed cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>' needs self-attention with a sliding window of 4 and 0 global tokens}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, window = 4>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// tfm.cache_read: its results are [?, heads, ?, headDim] of the cache, the
// batch and the length left open even where the cache bounds them.
func.func @cache_read_result_type(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %b: index, %n: index) -> tensor<2x4x?x8xf32> {
  // expected-error @+2 {{'tfm.cache_read' op inferred type(s) 'tensor<?x4x?x8xf32>', 'tensor<?x4x?x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x?x8xf32>', 'tensor<?x4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.cache_read' op failed to infer returned types}}
  %0:2 = "tfm.cache_read"(%c, %b, %n) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index, index) -> (tensor<2x4x?x8xf32>, tensor<?x4x?x8xf32>)
  return %0#0 : tensor<2x4x?x8xf32>
}

// -----

func.func @cache_read_one_result(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %b: index, %n: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.cache_read' op expected 2 results}}
  %0 = "tfm.cache_read"(%c, %b, %n) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index, index) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @cache_read_length_type(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %b: index, %n: i32) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.cache_read' op operand #2 must be index, but got 'i32'}}
  %0:2 = "tfm.cache_read"(%c, %b, %n) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index, i32) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>)
  return %0#0 : tensor<?x4x?x8xf32>
}

// -----

func.func @cache_read_not_a_cache(%t: tensor<4xf32>, %b: index, %n: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.cache_read' op operand #0 must be the keys and values of one attention, kept across calls, but got 'tensor<4xf32>'}}
  %0:2 = "tfm.cache_read"(%t, %b, %n) : (tensor<4xf32>, index, index) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>)
  return %0#0 : tensor<?x4x?x8xf32>
}

// -----

// The batch and the length, in that order.
func.func @cache_read_one_index(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %n: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{expected ','}}
  %k, %v = tfm.cache_read %c[%n] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  return %k : tensor<?x4x?x8xf32>
}

// -----

func.func @cache_read_feature_sums(%c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %b: index, %n: index) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.cache_read' op reads and writes positions; '!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>' holds feature sums (tfm.linear_attention's `sums`)}}
  %k, %v = tfm.cache_read %c[%b, %n] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>
  return %k : tensor<?x4x?x8xf32>
}

//===----------------------------------------------------------------------===//
// tfm.add_layer_norm
//===----------------------------------------------------------------------===//

// -----

func.func @add_layer_norm_gamma(%x: tensor<?x?x32xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op gamma must be [32], got 'tensor<16xf32>'}}
  %s, %y = tfm.add_layer_norm %x, %x, %g, %b : tensor<?x?x32xf32>, tensor<16xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @add_layer_norm_eps(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op eps must be positive, got 0}}
  %s, %y = tfm.add_layer_norm %x, %x, %g, %g {eps = 0.0 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @add_layer_norm_types(%x: tensor<?x?x32xf32>, %z: tensor<2x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op failed to verify that all of {lhs, rhs, sum, result} have same type}}
  %s, %y = "tfm.add_layer_norm"(%x, %z, %g, %g) : (tensor<?x?x32xf32>, tensor<2x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %y : tensor<?x?x32xf32>
}

// -----

// The largest offset: the message must not overflow adding the rows.
func.func @slice_rows_offset_max(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'tfm.slice_rows' op rows from 9223372036854775807 (64 of them) are not within the 96 rows of the input}}
  %0 = tfm.slice_rows %w from 9223372036854775807 : tensor<96x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @split_heads_no_features(%x: tensor<?x?x0xf32>) -> tensor<?x4x?x0xf32> {
  // expected-error @+2 {{'tfm.split_heads' op the heads of 4 would have no features}}
  // expected-error @+1 {{'tfm.split_heads' op failed to infer returned types}}
  %0 = tfm.split_heads %x part 0 of 3 into 4 heads : tensor<?x?x0xf32> -> tensor<?x4x?x0xf32>
  return %0 : tensor<?x4x?x0xf32>
}

// -----

// A cache holds [batch, heads, positions, dk]: a query without a batch
// dimension has no sequences to index it by.
func.func @mha_cache_rank2(%x: tensor<5x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %len: index) -> tensor<5x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a key/value cache needs a [batch, seq, d_model] query, got 'tensor<5x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c upto %len) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<5x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<5x32xf32>
  return %0 : tensor<5x32xf32>
}

// -----

func.func @mha_cache_rank4(%x: tensor<2x3x5x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %pos: index) -> tensor<2x3x5x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a key/value cache needs a [batch, seq, d_model] query, got 'tensor<2x3x5x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<2x3x5x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<2x3x5x32xf32>
  return %0 : tensor<2x3x5x32xf32>
}

// -----

// A mask is its rules: `causal`, `window N`, `global N`.
func.func @mask_unknown_rule(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{expected 'causal', 'window N', 'global N', 'block N' or 'random N': the rules of a mask}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<band>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_unknown_second_rule(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{expected 'causal', 'window N', 'global N', 'block N' or 'random N': the rules of a mask, got 'band'}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<causal, band>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_window_without_size(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{expected integer value}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<window>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_rule_twice(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{the mask rule 'window' is given twice}}
  %0 = tfm.attention <dot> %q, %q, %q window 2 window 3 : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_negative_window(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{a window is at least 0 keys on each side, got -1}}
  %0 = tfm.attention <dot> %q, %q, %q causal window -1 : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_negative_window_generic(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{a window is at least 0 keys on each side, got -3}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<window -3>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_global_without_window(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{global tokens are part of a sliding window: 'global' needs 'window'}}
  %0 = tfm.attention <dot> %q, %q, %q causal global 2 : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_no_global_tokens(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{global tokens are at least 1 (leave 'global' out for none), got 0}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<window 1, global 0>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @mask_without_rules(%q: tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{expected 'causal', 'window N', 'global N', 'block N' or 'random N': the rules of a mask}}
  %0 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

// A window on cross-attention: masks apply to self-attention only.
func.func @mha_memory_window(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a mask applies to self-attention only; attention over memory sees every key}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) window 2 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_read_only_window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %n: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op a read-only cache is cross-attention: neither masked nor rotary}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c upto %n) in_proj(%wi, %bi) out_proj(%wo, %bo) window 3 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @rms_norm_with_beta(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op an RMS norm has no beta (it does not centre)}}
  %0 = tfm.layer_norm rms %x, %g, %g : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @layer_norm_without_beta(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op a layer norm needs beta (`rms` for RMS norm)}}
  %0 = tfm.layer_norm %x, %g : tensor<?x?x32xf32>, tensor<32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @add_rms_norm_with_beta(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op an RMS norm has no beta (it does not centre)}}
  %s, %y = tfm.add_layer_norm rms %x, %x, %g, %g : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @rms_norm_gamma(%x: tensor<?x?x32xf32>, %g: tensor<16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.layer_norm' op gamma must be [32], got 'tensor<16xf32>'}}
  %0 = tfm.layer_norm rms %x, %g : tensor<?x?x32xf32>, tensor<16xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_gated_w1(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op w1 must be [128, 32], got 'tensor<64x32xf32>'}}
  %0 = tfm.ffn <silu> gated %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_one_bias(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{expected w1, w2 or w1, b1, w2, b2; got 3 operands}}
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @ffn_one_bias_generic(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.ffn' op b1 and b2 come together: both biases or neither}}
  %0 = "tfm.ffn"(%x, %w1, %b1, %w2) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @glu_odd(%x: tensor<?x?x63xf32>) -> tensor<?x?x31xf32> {
  // expected-error @+2 {{'tfm.glu' op the last dimension must be static and even (the gate and the up halves), got 63}}
  // expected-error @+1 {{'tfm.glu' op failed to infer returned types}}
  %0 = tfm.glu <silu> %x : tensor<?x?x63xf32> -> tensor<?x?x31xf32>
  return %0 : tensor<?x?x31xf32>
}

// -----

func.func @glu_dynamic(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+2 {{'tfm.glu' op the last dimension must be static and even (the gate and the up halves), got ?}}
  // expected-error @+1 {{'tfm.glu' op failed to infer returned types}}
  %0 = tfm.glu <gelu> %x : tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @glu_result(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+2 {{'tfm.glu' op inferred type(s) 'tensor<?x?x32xf32>' are incompatible with return type(s) of operation 'tensor<?x?x64xf32>'}}
  // expected-error @+1 {{'tfm.glu' op failed to infer returned types}}
  %0 = tfm.glu <relu> %x : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @mha_kv_heads_divide(%x: tensor<?x?x32xf32>, %wi: tensor<80x32xf32>, %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op kv_heads must divide num_heads 4, got 3}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 3 in_proj(%wi) out_proj(%wo) : (tensor<?x?x32xf32>, tensor<80x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_kv_heads_in_proj(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op in_proj_weight must be [64, 32], got 'tensor<96x32xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 in_proj(%wi) out_proj(%wo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_one_bias(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op in_proj and out_proj biases come together: both or neither}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_kv_heads_cache(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %p: index) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>' does not hold 2 heads of 8}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %p) in_proj(%wi) out_proj(%wo) causal : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @attention_heads_not_dividing(%q: tensor<1x4x?x8xf32>, %k: tensor<1x3x?x8xf32>) -> tensor<1x4x?x8xf32> {
  // expected-error @+2 {{'tfm.attention' op leading dimension 1 differs: query 4, key 3, value 3 (key heads must equal or divide query heads)}}
  // expected-error @+1 {{'tfm.attention' op failed to infer returned types}}
  %0 = tfm.attention <dot> %q, %k, %k : (tensor<1x4x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// -----

// expected-error @+1 {{'tfm.param' op takes an alias or sources, not both}}
tfm.param @"src_embed.weight" {alias = "embed.weight", sources = ["wte"]} : tensor<8x4xf32>

// -----

// expected-error @+1 {{'tfm.param' op sources must name at least one tensor}}
tfm.param @"embed.weight" {sources = []} : tensor<8x4xf32>

// -----

// expected-error @+1 {{'tfm.param' op a source must not be empty}}
tfm.param @"embed.weight" {sources = ["wte", ""]} : tensor<8x4xf32>

// -----

// expected-error @+1 {{'tfm.param' op `transposed` applies to the sources of a rank-2 weight}}
tfm.param @"linear1.weight" {transposed} : tensor<8x4xf32>

// -----

// expected-error @+1 {{'tfm.param' op `transposed` applies to the sources of a rank-2 weight}}
tfm.param @"linear1.bias" {sources = ["c_fc.bias"], transposed} : tensor<8xf32>

// -----

func.func @sequence_projection_dynamic(%k: tensor<?x4x?x8xf32>, %e: tensor<?x16xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm.sequence_projection' op projection must be a static [K, S], got 'tensor<?x16xf32>'}}
  %0 = tfm.sequence_projection %k by %e : tensor<?x4x?x8xf32>, tensor<?x16xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @sequence_projection_rank(%k: tensor<8xf32>, %e: tensor<4x16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.sequence_projection' op input must be [..., n, d] (rank >= 2), got 'tensor<8xf32>'}}
  %0 = tfm.sequence_projection %k by %e : tensor<8xf32>, tensor<4x16xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sequence_projection_too_many_rows(%k: tensor<1x4x20x8xf32>, %e: tensor<4x16xf32>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{'tfm.sequence_projection' op the input's 20 rows exceed the projection's 16 columns}}
  %0 = tfm.sequence_projection %k by %e : tensor<1x4x20x8xf32>, tensor<4x16xf32>
  return %0 : tensor<1x4x4x8xf32>
}

// -----

func.func @linformer_causal(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op linformer projects the keys and values of self-attention without a mask or a cache}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal linformer(%e, %e) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linformer_score(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op linformer takes scaled_dot scores, got dot}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %e) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linformer_f_shape(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<4x16xf32>, %f: tensor<5x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op linformer's F must be [4, 16], got 'tensor<5x16xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %f) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linformer_e_alone(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op linformer's projections come together: E and F}}
  %0 = "tfm.multi_head_attention"(%x, %wi, %bi, %wo, %bo, %e) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0>, score = #tfm.score<scaled_dot>}> : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linformer_dynamic_e(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<?x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op linformer's E must be a static [K, S], got 'tensor<?x16xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %e) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linformer_rows(%x: tensor<1x20x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<4x16xf32>) -> tensor<1x20x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op the query's 20 rows exceed linformer's 16 positions}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %e) : (tensor<1x20x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<1x20x32xf32>
  return %0 : tensor<1x20x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tfm.feature_map, tfm.linear_attention (performer)
//===----------------------------------------------------------------------===//

// tfm.feature_map's custom form names no result type: it is inferred as
// the op is parsed, and a failure is the one error (no "failed to infer
// returned types", which the generic form adds below).
// The input is per-head rows [..., heads, n, dk].
func.func @feature_map_rank(%x: tensor<?x8xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op input must be [..., heads, n, dk] (rank >= 3), got 'tensor<?x8xf32>'}}
  %0 = tfm.feature_map %x by %w : tensor<?x8xf32>, tensor<4x16x8xf32>
  return
}

// -----

// W is a static [heads, M, dk]: not of rank 2, not dynamic, no M of 0.
func.func @feature_map_features_rank(%x: tensor<?x4x?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op features must be a static [heads, M, dk] with no dimension 0, got 'tensor<16x8xf32>'}}
  %0 = tfm.feature_map %x by %w : tensor<?x4x?x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @feature_map_features_dynamic(%x: tensor<?x4x?x8xf32>, %w: tensor<4x?x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op features must be a static [heads, M, dk] with no dimension 0, got 'tensor<4x?x8xf32>'}}
  %0 = tfm.feature_map %x by %w : tensor<?x4x?x8xf32>, tensor<4x?x8xf32>
  return
}

// -----

func.func @feature_map_no_features(%x: tensor<?x4x?x8xf32>, %w: tensor<4x0x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op features must be a static [heads, M, dk] with no dimension 0, got 'tensor<4x0x8xf32>'}}
  %0 = tfm.feature_map %x by %w : tensor<?x4x?x8xf32>, tensor<4x0x8xf32>
  return
}

// -----

// W_h's rows have the input rows' dk features.
func.func @feature_map_dk(%x: tensor<?x4x?x8xf32>, %w: tensor<4x16x4xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op the input's rows have 8 features, W_h's rows 4}}
  %0 = tfm.feature_map %x by %w : tensor<?x4x?x8xf32>, tensor<4x16x4xf32>
  return
}

// -----

// The input's heads divide W's (grouped-query keys): 3 does not divide 4,
// nor does 0, and more heads than W's never divide.
func.func @feature_map_heads(%x: tensor<?x3x?x8xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op the input's 3 heads must divide the features' 4}}
  %0 = tfm.feature_map %x by %w : tensor<?x3x?x8xf32>, tensor<4x16x8xf32>
  return
}

// -----

func.func @feature_map_zero_heads(%x: tensor<?x0x?x8xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op the input's 0 heads must divide the features' 4}}
  %0 = tfm.feature_map %x by %w : tensor<?x0x?x8xf32>, tensor<4x16x8xf32>
  return
}

// -----

func.func @feature_map_more_heads(%x: tensor<?x8x?x8xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.feature_map' op the input's 8 heads must divide the features' 4}}
  %0 = tfm.feature_map %x by %w : tensor<?x8x?x8xf32>, tensor<4x16x8xf32>
  return
}

// -----

// In the generic form the result type is given: it must be the inferred
// one ([..., H, n, M], not the input's).
func.func @feature_map_result(%x: tensor<?x4x?x8xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+2 {{'tfm.feature_map' op inferred type(s) 'tensor<?x4x?x16xf32>' are incompatible with return type(s) of operation 'tensor<?x4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.feature_map' op failed to infer returned types}}
  %0 = "tfm.feature_map"(%x, %w) : (tensor<?x4x?x8xf32>, tensor<4x16x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @feature_map_generic_dk(%x: tensor<?x4x?x8xf32>, %w: tensor<4x16x4xf32>) {
  // expected-error @+2 {{'tfm.feature_map' op the input's rows have 8 features, W_h's rows 4}}
  // expected-error @+1 {{'tfm.feature_map' op failed to infer returned types}}
  %0 = "tfm.feature_map"(%x, %w) : (tensor<?x4x?x8xf32>, tensor<4x16x4xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

// Linear attention: feature rows [..., heads, n, M].
func.func @linear_attention_rank(%q: tensor<?x16xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op query_features must be [..., heads, n, M] (rank >= 3), got 'tensor<?x16xf32>'}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %q, %v : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_attention_ranks(%q: tensor<?x4x?x16xf32>, %k: tensor<4x?x16xf32>, %v: tensor<?x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op query_features, key_features and value must have the same rank, got 'tensor<?x4x?x16xf32>', 'tensor<4x?x16xf32>', 'tensor<?x4x?x8xf32>'}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %k, %v : (tensor<?x4x?x16xf32>, tensor<4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

// The leading dimensions (batch, heads) of both feature operands agree...
func.func @linear_attention_key_batch(%q: tensor<2x4x?x16xf32>, %k: tensor<3x4x?x16xf32>, %v: tensor<?x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op leading dimension 0 differs: query_features 2, key_features 3}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %k, %v : (tensor<2x4x?x16xf32>, tensor<3x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<2x4x?x8xf32>
  return
}

// -----

func.func @linear_attention_key_heads(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op leading dimension 1 differs: query_features 4, key_features 2}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %k, %v : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

// ... and the value's: its batch is theirs, its heads equal or divide
// theirs.
func.func @linear_attention_value_batch(%q: tensor<2x4x?x16xf32>, %v: tensor<3x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op leading dimension 0 differs: features 2, value 3}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %q, %v : (tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<3x4x?x8xf32>) -> tensor<2x4x?x8xf32>
  return
}

// -----

func.func @linear_attention_value_heads(%q: tensor<?x4x?x16xf32>, %v: tensor<?x3x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op leading dimension 1 differs: features 4, value 3 (value heads must equal or divide the features' heads)}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %q, %v : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x3x?x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @linear_attention_more_value_heads(%q: tensor<?x2x?x16xf32>, %v: tensor<?x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op leading dimension 1 differs: features 2, value 4 (value heads must equal or divide the features' heads)}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %q, %v : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x2x?x8xf32>
  return
}

// -----

// Query and key rows have the same M features.
func.func @linear_attention_features(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x12xf32>, %v: tensor<?x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op query rows have 16 features, key rows 12}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %k, %v : (tensor<?x4x?x16xf32>, tensor<?x4x?x12xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

// A value row for each key row.
func.func @linear_attention_length(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x5x16xf32>, %v: tensor<?x4x6x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op key length 5 does not match value length 6}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %k, %v : (tensor<?x4x?x16xf32>, tensor<?x4x5x16xf32>, tensor<?x4x6x8xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

// The result is [..., H, n, dv]: the queries' rows, the value's width.
func.func @linear_attention_result(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>) {
  // expected-error @+2 {{'tfm.linear_attention' op inferred type(s) 'tensor<?x4x?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x4x?x16xf32>'}}
  // expected-error @+1 {{'tfm.linear_attention' op failed to infer returned types}}
  %0 = tfm.linear_attention %q, %q, %v : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

// An offset places causal queries among the keys; without causal it means
// nothing.
func.func @linear_attention_offset_not_causal(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %pos: index) {
  // expected-error @+1 {{'tfm.linear_attention' op `offset` places the queries for `causal`; without it every row sees every key}}
  %0 = tfm.linear_attention %q, %q, %v offset %pos : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  return
}

// -----

// Causal rows with no offset are the keys' own positions: as many rows as
// keys (where both are static).
func.func @linear_attention_causal_rows(%q: tensor<?x4x3x16xf32>, %k: tensor<?x4x5x16xf32>, %v: tensor<?x4x5x8xf32>) {
  // expected-error @+1 {{'tfm.linear_attention' op causal rows attend the keys of their own positions: 3 query rows over 5 keys}}
  %0 = tfm.linear_attention %q, %k, %v causal : (tensor<?x4x3x16xf32>, tensor<?x4x5x16xf32>, tensor<?x4x5x8xf32>) -> tensor<?x4x3x8xf32>
  return
}

// -----

// So are a decode step's with `sums`, offset or not: the sums hold the keys
// before, the call's keys are its rows' own.
func.func @linear_attention_sums_rows(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x5x16xf32>, %v: tensor<?x4x5x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op causal rows attend the keys of their own positions: 1 query rows over 5 keys}}
  %0 = tfm.linear_attention %q, %k, %v causal offset %p sums(%c) : (tensor<?x4x1x16xf32>, tensor<?x4x5x16xf32>, tensor<?x4x5x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x1x8xf32>
  return
}

// -----

// `sums` carry a causal attention from call to call: with `causal` and
// `offset` (the offset error comes first without causal).
func.func @linear_attention_sums_no_offset(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` carry a causal attention from call to call: they need `causal` and `offset`}}
  %0 = tfm.linear_attention %q, %q, %v causal sums(%c) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @linear_attention_sums_not_causal(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` carry a causal attention from call to call: they need `causal` and `offset`}}
  %0 = tfm.linear_attention %q, %q, %v sums(%c) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @linear_attention_sums_offset_not_causal(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `offset` places the queries for `causal`; without it every row sees every key}}
  %0 = tfm.linear_attention %q, %q, %v offset %p sums(%c) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x?x8xf32>
  return
}

// -----

// The cache holds feature sums (not positions), of the result's heads (the
// features' heads, not the value's), the features' M and the value's dv,
// for [batch, heads, n, M] rows (rank 4).
func.func @linear_attention_sums_positions(%q: tensor<?x4x1x16xf32>, %v: tensor<?x4x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>' do not hold the sums of the heads of 'tensor<?x4x1x8xf32>' over 16 features}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<?x4x1x16xf32>, tensor<?x4x1x16xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>) -> tensor<?x4x1x8xf32>
  return
}

// -----

func.func @linear_attention_sums_features(%q: tensor<?x4x1x16xf32>, %v: tensor<?x4x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>' do not hold the sums of the heads of 'tensor<?x4x1x8xf32>' over 16 features}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<?x4x1x16xf32>, tensor<?x4x1x16xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>) -> tensor<?x4x1x8xf32>
  return
}

// -----

func.func @linear_attention_sums_value_heads(%q: tensor<?x4x1x16xf32>, %v: tensor<?x2x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` '!tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>' do not hold the sums of the heads of 'tensor<?x4x1x8xf32>' over 16 features}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<?x4x1x16xf32>, tensor<?x4x1x16xf32>, tensor<?x2x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x1x8xf32>
  return
}

// -----

func.func @linear_attention_sums_head_dim(%q: tensor<?x4x1x16xf32>, %v: tensor<?x4x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>' do not hold the sums of the heads of 'tensor<?x4x1x8xf32>' over 16 features}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<?x4x1x16xf32>, tensor<?x4x1x16xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>) -> tensor<?x4x1x8xf32>
  return
}

// -----

func.func @linear_attention_sums_rank(%q: tensor<4x1x16xf32>, %v: tensor<4x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op `sums` '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>' do not hold the sums of the heads of 'tensor<4x1x8xf32>' over 16 features}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<4x1x16xf32>, tensor<4x1x16xf32>, tensor<4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<4x1x8xf32>
  return
}

// -----

func.func @linear_attention_sums_batch(%q: tensor<3x4x1x16xf32>, %v: tensor<3x4x1x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>) {
  // expected-error @+1 {{'tfm.linear_attention' op the step has 3 sequences; the cache holds 2}}
  %0 = tfm.linear_attention %q, %q, %v causal offset %p sums(%c) : (tensor<3x4x1x16xf32>, tensor<3x4x1x16xf32>, tensor<3x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<3x4x1x8xf32>
  return
}

// -----

// performer(%w) on tfm.multi_head_attention: self-attention (no memory, no
// read-only cache), no mask but causal (no window, causal or not), no
// linformer projections, no key padding, no attention map.
func.func @performer_cross(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_read_only_cache(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %len: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c upto %len) in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_causal_window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal window 3 performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) window 0 global 2 performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_linformer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %e: tensor<4x16xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %e) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_key_padding(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %m: tensor<?x?xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) key_padding(%m) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_weights_to(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %slot: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features map the queries and keys of self-attention with no mask but causal, no linformer, no key padding and no weights_to}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) weights_to %slot : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, index) -> tensor<?x?x32xf32>
  return
}

// -----

// Its features estimate softmax(q . k / sqrt(dk)): scaled_dot scores only.
func.func @performer_score(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer takes scaled_dot scores, got dot}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// W is a static [num_heads, M, dk], M at least 1...
func.func @performer_features_rank(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features must be a static [4, M, 8], got 'tensor<16x8xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_features_dynamic(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x?x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features must be a static [4, M, 8], got 'tensor<4x?x8xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x?x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_no_features(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x0x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features must be a static [4, M, 8], got 'tensor<4x0x8xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x0x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// ... with a W_h for each query head (not each key/value head) and rows of
// dk features.
func.func @performer_features_heads(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %w: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features must be [4, 16, 8], got 'tensor<2x16x8xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 in_proj(%wi) out_proj(%wo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<2x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_features_dk(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x4xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's features must be [4, 16, 8], got 'tensor<4x16x4xf32>'}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x4xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// Performer's cache holds feature sums, not positions: `features` = W's M,
// the query heads (not the key/value heads) and dk.
func.func @performer_positions_cache(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %p: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>' does not hold the sums of 4 heads of 16 features and 8 values}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_cache_features(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>, %p: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>' does not hold the sums of 4 heads of 16 features and 8 values}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 32>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_cache_kv_heads(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>, %p: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's cache '!tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>' does not hold the sums of 4 heads of 16 features and 8 values}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %p) in_proj(%wi) out_proj(%wo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @performer_cache_head_dim(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>, %p: index) {
  // expected-error @+1 {{'tfm.multi_head_attention' op performer's cache '!tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>' does not hold the sums of 4 heads of 16 features and 8 values}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 16, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// Padding masks (key_padding): a [batch, keys] f32 of the attention's keys.
func.func @key_padding_rank(%q: tensor<2x4x5x8xf32>, %m: tensor<2x5x1xf32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{'tfm.attention' op key_padding must be a [batch, keys] f32 tensor, got 'tensor<2x5x1xf32>'}}
  %0 = tfm.attention <dot> %q, %q, %q key_padding(%m) : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x5x1xf32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @key_padding_type(%q: tensor<2x4x5x8xf32>, %m: tensor<2x5xi32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{'tfm.attention' op operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<2x5xi32>'}}
  %0 = tfm.attention <dot> %q, %q, %q key_padding(%m) : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x5xi32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @key_padding_batch(%q: tensor<2x4x5x8xf32>, %m: tensor<3x5xf32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{'tfm.attention' op key_padding's batch 3 does not match the query's 2}}
  %0 = tfm.attention <dot> %q, %q, %q key_padding(%m) : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<3x5xf32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @key_padding_keys(%q: tensor<2x4x5x8xf32>, %k: tensor<2x4x7x8xf32>, %m: tensor<2x5xf32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{'tfm.attention' op key_padding's 5 positions do not match the 7 keys}}
  %0 = tfm.attention <dot> %q, %k, %k key_padding(%m) : (tensor<2x4x5x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x5xf32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @key_padding_no_batch(%q: tensor<5x8xf32>, %m: tensor<1x5xf32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'tfm.attention' op key_padding needs a batch: the query must be [batch, ..., seq, dk], got 'tensor<5x8xf32>'}}
  %0 = tfm.attention <dot> %q, %q, %q key_padding(%m) : (tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<1x5xf32>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @mha_key_padding_memory(%x: tensor<?x?x32xf32>, %mem: tensor<?x6x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>, %m: tensor<?x7xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op key_padding's 7 positions do not match the 6 keys}}
  %0 = tfm.multi_head_attention <dot> %x memory %mem heads 4 in_proj(%wi) out_proj(%wo) key_padding(%m) : (tensor<?x?x32xf32>, tensor<?x6x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x7xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_key_padding_cache(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %pos: index, %m: tensor<?x?xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op key_padding masks the keys of an attention without a cache or linformer's projections}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %pos) in_proj(%wi) out_proj(%wo) causal key_padding(%m) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mha_key_padding_linformer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>, %e: tensor<4x16xf32>, %m: tensor<?x?xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.multi_head_attention' op key_padding masks the keys of an attention without a cache or linformer's projections}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi) out_proj(%wo) linformer(%e, %e) key_padding(%m) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// expected-error @+1 {{mamba_state sizes must be positive, got maxBatch = 1, channels = 64, convWidth = 0, stateSize = 16}}
func.func @mamba_state_sizes(%s: !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 0, stateSize = 16>) {
  return
}

// -----

// expected-error @+1 {{'tfm.kv_cache' op attribute 'type' failed to satisfy constraint: type attribute of a buffer kept across calls (!tfm.kv_cache or !tfm.mamba_state)}}
tfm.kv_cache @state : f32

// -----

func.func @mamba_mixer_in_proj(%x: tensor<?x?x32xf32>, %win: tensor<96x32xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.mamba_mixer' op in_proj must be [128, 32], got 'tensor<96x32xf32>'}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mamba_mixer_x_proj(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %wx: tensor<16x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.mamba_mixer' op x_proj must be [18, 64], got 'tensor<16x64xf32>'}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mamba_mixer_ranks(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x4xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.mamba_mixer' op a_log must be [d_inner, d_state], dt_proj [d_inner, dt_rank] and conv_weight [d_inner, 1, width], got 'tensor<64x8xf32>', 'tensor<64x2xf32>' and 'tensor<64x4xf32>'}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mamba_mixer_dynamic(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x1x?xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.mamba_mixer' op the mixer's sizes (d_inner, d_state, dt_rank, conv width) must be static}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x?xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @mamba_mixer_state(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 3, stateSize = 8>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfm.mamba_mixer' op state '!tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 3, stateSize = 8>' does not hold 64 channels, a conv width of 4 and states of 8}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout offset %p state(%s) : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>, index, !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 3, stateSize = 8>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @causal_conv1d_state_offset(%u: tensor<?x?x64xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %s: !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.causal_conv1d' op `offset` and `state` come together: a decode step's rows start at offset and continue from the state}}
  %0 = tfm.causal_conv1d %u, %cw, %cb state(%s) : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>, !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @causal_conv1d_weight(%u: tensor<?x?x64xf32>, %cw: tensor<32x1x4xf32>, %cb: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.causal_conv1d' op weight must be [64, 1, 4], got 'tensor<32x1x4xf32>'}}
  %0 = tfm.causal_conv1d %u, %cw, %cb : (tensor<?x?x64xf32>, tensor<32x1x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @causal_conv1d_dynamic(%u: tensor<?x?x?xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfm.causal_conv1d' op the channels and the conv width must be static, got 'tensor<?x?x?xf32>' and 'tensor<64x1x4xf32>'}}
  %0 = tfm.causal_conv1d %u, %cw, %cb : (tensor<?x?x?xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @causal_conv1d_rank(%u: tensor<64xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tfm.causal_conv1d' op input must be [..., seq, C] (rank >= 2), got 'tensor<64xf32>'}}
  %0 = tfm.causal_conv1d %u, %cw, %cb : (tensor<64xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

func.func @causal_conv1d_batch(%u: tensor<3x?x64xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<3x?x64xf32> {
  // expected-error @+1 {{'tfm.causal_conv1d' op the step has 3 sequences; the state holds 2}}
  %0 = tfm.causal_conv1d %u, %cw, %cb offset %p state(%s) : (tensor<3x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<3x?x64xf32>
  return %0 : tensor<3x?x64xf32>
}

// -----

func.func @selective_scan_b(%u: tensor<?x?x64xf32>, %a: tensor<64x8xf32>, %b: tensor<?x?x4xf32>, %d: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.selective_scan' op b must be [?, ?, 8], got 'tensor<?x?x4xf32>'}}
  %0 = tfm.selective_scan %u, %u, %a, %b, %b, %d, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @selective_scan_a_log(%u: tensor<?x?x64xf32>, %a: tensor<32x8xf32>, %b: tensor<?x?x8xf32>, %d: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.selective_scan' op a_log must be [64, 8], got 'tensor<32x8xf32>'}}
  %0 = tfm.selective_scan %u, %u, %a, %b, %b, %d, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @selective_scan_dynamic(%u: tensor<?x?x64xf32>, %a: tensor<64x?xf32>, %b: tensor<?x?x?xf32>, %d: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.selective_scan' op the channels and the state size must be static, got 'tensor<?x?x64xf32>' and 'tensor<64x?xf32>'}}
  %0 = tfm.selective_scan %u, %u, %a, %b, %b, %d, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @selective_scan_state(%u: tensor<?x?x64xf32>, %a: tensor<64x8xf32>, %b: tensor<?x?x8xf32>, %d: tensor<64xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfm.selective_scan' op state '!tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>' does not hold 64 channels and states of 8}}
  %0 = tfm.selective_scan %u, %u, %a, %b, %b, %d, %u offset %p state(%s) : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>, index, !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}
