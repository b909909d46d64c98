// RUN: tfm-opt %s -split-input-file | FileCheck %s
// RUN: tfm-opt %s -split-input-file -mlir-print-op-generic | tfm-opt -split-input-file | FileCheck %s
// RUN: tfm-opt %s -split-input-file -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of every tfm op: the custom form prints back exactly, and the
// generic form parses back to the same custom form. Default-valued
// attributes (embedding scale, rotary base, softmax dim, layer_norm eps) are
// elided when they equal their default; the GENERIC lines check that the
// generic form spells enum attributes as #tfm.<kind><...> and prints defaults.

// Parameters are module-level symbols named by state_dict names; the dotted
// name is a valid bare identifier and prints unquoted. `alias` is optional.
// CHECK: tfm.param @encoder.layers.0.linear1.weight : tensor<64x32xf32>
// CHECK: tfm.param @emb : tensor<100x32xf32>
// CHECK: tfm.param @src_embed.weight {alias = "embed.weight"} : tensor<100x32xf32>
// CHECK: tfm.param @lm_head.weight {format = #tfm.weight_format<bf16>} : tensor<100x32xf32>
// CHECK: tfm.param @linear2.weight {format = #tfm.weight_format<f16>} : tensor<32x64xf32>
// CHECK: tfm.param @model.layers.0.mlp.down_proj.weight {format = #tfm.weight_format<int8>, sources = ["down"]} : tensor<32x64xf32>
// CHECK-LABEL: func.func @weight(
// CHECK-NEXT: %0 = tfm.weight @encoder.layers.0.linear1.weight : tensor<64x32xf32>
// CHECK-NEXT: %1 = tfm.weight @emb : tensor<100x32xf32>
// CHECK-NEXT: %2 = tfm.weight @src_embed.weight : tensor<100x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<64x32xf32>, tensor<100x32xf32>, tensor<100x32xf32>
// GENERIC: "tfm.param"() <{sym_name = "encoder.layers.0.linear1.weight", type = tensor<64x32xf32>}> : () -> ()
// GENERIC: "tfm.param"() <{alias = "embed.weight", sym_name = "src_embed.weight", type = tensor<100x32xf32>}> : () -> ()
// GENERIC: "tfm.param"() <{format = #tfm.weight_format<bf16>, sym_name = "lm_head.weight", type = tensor<100x32xf32>}> : () -> ()
// GENERIC: "tfm.weight"() <{param = @encoder.layers.0.linear1.weight}> : () -> tensor<64x32xf32>
tfm.param @"encoder.layers.0.linear1.weight" : tensor<64x32xf32>
tfm.param @emb : tensor<100x32xf32>
tfm.param @"src_embed.weight" {alias = "embed.weight"} : tensor<100x32xf32>
tfm.param @"lm_head.weight" {format = #tfm.weight_format<bf16>} : tensor<100x32xf32>
tfm.param @"linear2.weight" {format = #tfm.weight_format<f16>} : tensor<32x64xf32>
tfm.param @"model.layers.0.mlp.down_proj.weight" {sources = ["down"], format = #tfm.weight_format<int8>} : tensor<32x64xf32>
func.func @weight() -> (tensor<64x32xf32>, tensor<100x32xf32>, tensor<100x32xf32>) {
  %0 = tfm.weight @"encoder.layers.0.linear1.weight" : tensor<64x32xf32>
  %1 = tfm.weight @emb : tensor<100x32xf32>
  %2 = tfm.weight @"src_embed.weight" : tensor<100x32xf32>
  return %0, %1, %2 : tensor<64x32xf32>, tensor<100x32xf32>, tensor<100x32xf32>
}

// -----

// i32 and i64 ids, static and dynamic shapes; scale = 1.0 is the default and
// is elided.
// CHECK-LABEL: func.func @embedding(
// CHECK-NEXT: %0 = tfm.embedding %arg0, %arg2 : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.embedding %arg1, %arg2 {scale = 5.65685415 : f32} : (tensor<2x7xi64>, tensor<100x32xf32>) -> tensor<2x7x32xf32>
// CHECK-NEXT: %2 = tfm.embedding %arg0, %arg2 : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<2x7x32xf32>, tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "embedding"
// GENERIC: "tfm.embedding"(%arg0, %arg2) <{scale = 1.000000e+00 : f32}> : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
func.func @embedding(%ids: tensor<?x?xi32>, %ids64: tensor<2x7xi64>, %t: tensor<100x32xf32>) -> (tensor<?x?x32xf32>, tensor<2x7x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.embedding %ids, %t : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.embedding %ids64, %t {scale = 5.65685415 : f32} : (tensor<2x7xi64>, tensor<100x32xf32>) -> tensor<2x7x32xf32>
  %2 = tfm.embedding %ids, %t {scale = 1.0 : f32} : (tensor<?x?xi32>, tensor<100x32xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<2x7x32xf32>, tensor<?x?x32xf32>
}

// -----

// Sinusoidal (no table) and learned (table with at least seq rows).
// CHECK-LABEL: func.func @position(
// CHECK-NEXT: %0 = tfm.position_encoding <sinusoidal> %arg0 : tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.position_encoding <learned> %arg0, %arg1 : tensor<?x?x32xf32>, tensor<64x32xf32>
// CHECK-NEXT: %2 = tfm.position_encoding <learned> %arg2, %arg1 : tensor<2x16x32xf32>, tensor<64x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x16x32xf32>
// GENERIC-LABEL: sym_name = "position"
// GENERIC: "tfm.position_encoding"(%arg0) <{kind = #tfm.position<sinusoidal>, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// GENERIC: "tfm.position_encoding"(%arg0, %arg1) <{kind = #tfm.position<learned>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x32xf32>
func.func @position(%x: tensor<?x?x32xf32>, %t: tensor<64x32xf32>, %y: tensor<2x16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x16x32xf32>) {
  %0 = tfm.position_encoding <sinusoidal> %x : tensor<?x?x32xf32>
  %1 = tfm.position_encoding <learned> %x, %t : tensor<?x?x32xf32>, tensor<64x32xf32>
  %2 = tfm.position_encoding <learned> %y, %t : tensor<2x16x32xf32>, tensor<64x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x16x32xf32>
}

// -----

// Both pairings; base 1.0e+04 is the default and is elided. Rank 2 input.
// CHECK-LABEL: func.func @rotary(
// CHECK-NEXT: %0 = tfm.rotary <half> %arg0 : tensor<1x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.rotary <interleaved> %arg0 {base = 5.000000e+05 : f32} : tensor<1x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.rotary <half> %arg1 : tensor<?x8xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<?x8xf32>
// GENERIC-LABEL: sym_name = "rotary"
// GENERIC: "tfm.rotary"(%arg0) <{base = 1.000000e+04 : f32, style = #tfm.rope<half>}> : (tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
// GENERIC: "tfm.rotary"(%arg0) <{base = 5.000000e+05 : f32, style = #tfm.rope<interleaved>}> : (tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
func.func @rotary(%q: tensor<1x4x?x8xf32>, %k: tensor<?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<?x8xf32>) {
  %0 = tfm.rotary <half> %q : tensor<1x4x?x8xf32>
  %1 = tfm.rotary <interleaved> %q {base = 5.000000e+05 : f32} : tensor<1x4x?x8xf32>
  %2 = tfm.rotary <half> %k {base = 1.0e+04 : f32} : tensor<?x8xf32>
  return %0, %1, %2 : tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<?x8xf32>
}

// -----

// A position offset (incremental decoding: the position of the first row),
// with either pairing and with a base. It prints before the attributes; in
// the generic form it is the second operand.
// CHECK-LABEL: func.func @rotary_offset(
// CHECK-NEXT: %0 = tfm.rotary <half> %arg0 offset %arg1 : tensor<1x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.rotary <interleaved> %0 offset %arg1 {base = 5.000000e+05 : f32} : tensor<1x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.rotary <half> %arg2 offset %arg1 : tensor<?x8xf32>
// CHECK-NEXT: return %1, %2 : tensor<1x4x?x8xf32>, tensor<?x8xf32>
// GENERIC-LABEL: sym_name = "rotary_offset"
// GENERIC: "tfm.rotary"(%arg0, %arg1) <{base = 1.000000e+04 : f32, style = #tfm.rope<half>}> : (tensor<1x4x?x8xf32>, index) -> tensor<1x4x?x8xf32>
// GENERIC: "tfm.rotary"(%0, %arg1) <{base = 5.000000e+05 : f32, style = #tfm.rope<interleaved>}> : (tensor<1x4x?x8xf32>, index) -> tensor<1x4x?x8xf32>
// GENERIC: "tfm.rotary"(%arg2, %arg1) <{base = 1.000000e+04 : f32, style = #tfm.rope<half>}> : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
func.func @rotary_offset(%q: tensor<1x4x?x8xf32>, %pos: index, %k: tensor<?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<?x8xf32>) {
  %0 = tfm.rotary <half> %q offset %pos : tensor<1x4x?x8xf32>
  %1 = tfm.rotary <interleaved> %0 offset %pos {base = 5.000000e+05 : f32} : tensor<1x4x?x8xf32>
  %2 = tfm.rotary <half> %k offset %pos {base = 1.0e+04 : f32} : tensor<?x8xf32>
  return %1, %2 : tensor<1x4x?x8xf32>, tensor<?x8xf32>
}

// -----

// With and without bias, and a rank-1 input.
// CHECK-LABEL: func.func @linear(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %1 = tfm.linear %arg0, %arg1 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %2 = tfm.linear %arg3, %arg1 : (tensor<32xf32>, tensor<64x32xf32>) -> tensor<64xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>
func.func @linear(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %v: tensor<32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) {
  %0 = tfm.linear %x, %w, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = tfm.linear %x, %w : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %2 = tfm.linear %v, %w : (tensor<32xf32>, tensor<64x32xf32>) -> tensor<64xf32>
  return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>
}

// -----

// Epilogues: an activation, a residual, both, with and without bias. The
// generic form counts the optional operands.
// CHECK-LABEL: func.func @linear_epilogue(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2 activation <gelu> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %1 = tfm.linear %arg0, %arg1 residual %0 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %2 = tfm.linear %arg0, %arg1, %arg2 activation <relu> residual %1 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %3 = tfm.linear %arg0, %arg1 activation <gelu_tanh> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: return %2, %3
// GENERIC-LABEL: "func.func"() <{function_type = (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>), sym_name = "linear_epilogue"}>
// GENERIC: "tfm.linear"(%arg0, %arg1, %arg2) <{activation = #tfm.activation<gelu>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}>
// GENERIC: "tfm.linear"(%arg0, %arg1, %0) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}>
// GENERIC: "tfm.linear"(%arg0, %arg1, %arg2, %1) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
func.func @linear_epilogue(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %0 = tfm.linear %x, %w, %b activation <gelu> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = tfm.linear %x, %w residual %0 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %2 = tfm.linear %x, %w, %b activation <relu> residual %1 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %3 = tfm.linear %x, %w activation <gelu_tanh> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %2, %3 : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// split_heads/merge_heads with dynamic and static batch/seq.
// CHECK-LABEL: func.func @heads(
// CHECK-NEXT: %0 = tfm.split_heads %arg0 into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.split_heads %arg1 into 2 heads : tensor<2x5x32xf32> -> tensor<2x2x5x16xf32>
// CHECK-NEXT: %3 = tfm.merge_heads %2 : tensor<2x2x5x16xf32> -> tensor<2x5x32xf32>
// CHECK-NEXT: return %1, %3 : tensor<?x?x32xf32>, tensor<2x5x32xf32>
func.func @heads(%x: tensor<?x?x32xf32>, %y: tensor<2x5x32xf32>) -> (tensor<?x?x32xf32>, tensor<2x5x32xf32>) {
  %0 = tfm.split_heads %x into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
  %1 = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  %2 = tfm.split_heads %y into 2 heads : tensor<2x5x32xf32> -> tensor<2x2x5x16xf32>
  %3 = tfm.merge_heads %2 : tensor<2x2x5x16xf32> -> tensor<2x5x32xf32>
  return %1, %3 : tensor<?x?x32xf32>, tensor<2x5x32xf32>
}

// -----

// `part P of N`: block P (from 0) of N side by side in the features, split
// into heads, as the queries, keys and values of one GEMM over a stacked
// weight; a block of 2 x 32 and one of 3 x 32 with other heads; static
// leading dimensions carry over, and a rank-2 input has no batch. Without
// `part` neither attribute is printed or set.
// CHECK-LABEL: func.func @split_heads_part(
// CHECK-NEXT: %0 = tfm.split_heads %arg0 part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.split_heads %arg0 part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.split_heads %arg0 part 2 of 3 into 2 heads : tensor<?x?x96xf32> -> tensor<?x2x?x16xf32>
// CHECK-NEXT: %3 = tfm.split_heads %arg1 part 1 of 2 into 4 heads : tensor<2x5x64xf32> -> tensor<2x4x5x8xf32>
// CHECK-NEXT: %4 = tfm.split_heads %arg2 part 2 of 3 into 4 heads : tensor<?x96xf32> -> tensor<4x?x8xf32>
// CHECK-NEXT: %5 = tfm.split_heads %arg0 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x24xf32>
// CHECK-NEXT: return %0, %1, %2, %3, %4, %5 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x2x?x16xf32>, tensor<2x4x5x8xf32>, tensor<4x?x8xf32>, tensor<?x4x?x24xf32>
// GENERIC-LABEL: sym_name = "split_heads_part"
// GENERIC: "tfm.split_heads"(%arg0) <{num_heads = 4 : i64, part = 0 : i64, parts = 3 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.split_heads"(%arg0) <{num_heads = 4 : i64, part = 1 : i64, parts = 3 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.split_heads"(%arg0) <{num_heads = 2 : i64, part = 2 : i64, parts = 3 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x2x?x16xf32>
// GENERIC: "tfm.split_heads"(%arg1) <{num_heads = 4 : i64, part = 1 : i64, parts = 2 : i64}> : (tensor<2x5x64xf32>) -> tensor<2x4x5x8xf32>
// GENERIC: "tfm.split_heads"(%arg2) <{num_heads = 4 : i64, part = 2 : i64, parts = 3 : i64}> : (tensor<?x96xf32>) -> tensor<4x?x8xf32>
// GENERIC: "tfm.split_heads"(%arg0) <{num_heads = 4 : i64}> : (tensor<?x?x96xf32>) -> tensor<?x4x?x24xf32>
func.func @split_heads_part(%qkv: tensor<?x?x96xf32>, %kv: tensor<2x5x64xf32>, %rows: tensor<?x96xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x2x?x16xf32>, tensor<2x4x5x8xf32>, tensor<4x?x8xf32>, tensor<?x4x?x24xf32>) {
  %0 = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %1 = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %2 = tfm.split_heads %qkv part 2 of 3 into 2 heads : tensor<?x?x96xf32> -> tensor<?x2x?x16xf32>
  %3 = tfm.split_heads %kv part 1 of 2 into 4 heads : tensor<2x5x64xf32> -> tensor<2x4x5x8xf32>
  %4 = tfm.split_heads %rows part 2 of 3 into 4 heads : tensor<?x96xf32> -> tensor<4x?x8xf32>
  %5 = tfm.split_heads %qkv into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x24xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x2x?x16xf32>, tensor<2x4x5x8xf32>, tensor<4x?x8xf32>, tensor<?x4x?x24xf32>
}

// -----

// Rows of a stacked weight and its bias: the first block, the last two,
// the last row, all of them, and a rank-3 input whose other dimensions
// (static or not) carry over.
// CHECK-LABEL: func.func @slice_rows(
// CHECK-NEXT: %0 = tfm.slice_rows %arg0 from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %1 = tfm.slice_rows %arg0 from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %2 = tfm.slice_rows %arg1 from 32 : tensor<96xf32> -> tensor<64xf32>
// CHECK-NEXT: %3 = tfm.slice_rows %arg1 from 95 : tensor<96xf32> -> tensor<1xf32>
// CHECK-NEXT: %4 = tfm.slice_rows %arg0 from 0 : tensor<96x32xf32> -> tensor<96x32xf32>
// CHECK-NEXT: %5 = tfm.slice_rows %arg2 from 2 : tensor<6x4x?xf32> -> tensor<3x4x?xf32>
// CHECK-NEXT: return %0, %1, %2, %3, %4, %5 : tensor<32x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<1xf32>, tensor<96x32xf32>, tensor<3x4x?xf32>
// GENERIC-LABEL: sym_name = "slice_rows"
// GENERIC: "tfm.slice_rows"(%arg0) <{offset = 0 : i64}> : (tensor<96x32xf32>) -> tensor<32x32xf32>
// GENERIC: "tfm.slice_rows"(%arg0) <{offset = 32 : i64}> : (tensor<96x32xf32>) -> tensor<64x32xf32>
// GENERIC: "tfm.slice_rows"(%arg1) <{offset = 32 : i64}> : (tensor<96xf32>) -> tensor<64xf32>
// GENERIC: "tfm.slice_rows"(%arg1) <{offset = 95 : i64}> : (tensor<96xf32>) -> tensor<1xf32>
// GENERIC: "tfm.slice_rows"(%arg0) <{offset = 0 : i64}> : (tensor<96x32xf32>) -> tensor<96x32xf32>
// GENERIC: "tfm.slice_rows"(%arg2) <{offset = 2 : i64}> : (tensor<6x4x?xf32>) -> tensor<3x4x?xf32>
func.func @slice_rows(%w: tensor<96x32xf32>, %b: tensor<96xf32>, %t: tensor<6x4x?xf32>) -> (tensor<32x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<1xf32>, tensor<96x32xf32>, tensor<3x4x?xf32>) {
  %0 = tfm.slice_rows %w from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
  %1 = tfm.slice_rows %w from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
  %2 = tfm.slice_rows %b from 32 : tensor<96xf32> -> tensor<64xf32>
  %3 = tfm.slice_rows %b from 95 : tensor<96xf32> -> tensor<1xf32>
  %4 = tfm.slice_rows %w from 0 : tensor<96x32xf32> -> tensor<96x32xf32>
  %5 = tfm.slice_rows %t from 2 : tensor<6x4x?xf32> -> tensor<3x4x?xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<32x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<1xf32>, tensor<96x32xf32>, tensor<3x4x?xf32>
}

// -----

// dot and scaled_dot (causal); value head size may differ from dk.
// CHECK-LABEL: func.func @attention_dot(
// CHECK-NEXT: %0 = tfm.attention <dot> %arg0, %arg1, %arg2 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK-NEXT: %1 = tfm.attention <scaled_dot> %arg0, %arg1, %arg2 causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK-NEXT: return %0, %1 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
// GENERIC-LABEL: sym_name = "attention_dot"
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<scaled_dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
func.func @attention_dot(%q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  %0 = tfm.attention <dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %1 = tfm.attention <scaled_dot> %q, %k, %v causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %0, %1 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// -----

// Sliding windows (Longformer): not causal, causal with global tokens, a
// window of 0, over a cache's keys at an offset.
// CHECK-LABEL: func.func @attention_window(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg0, %arg0 window 4 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.attention <dot> %arg0, %arg0, %arg0 causal window 2 global 1 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.attention <dot> %arg0, %arg0, %arg0 window 0 global 3 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %3 = tfm.attention <scaled_dot> %arg0, %arg0, %arg0 causal window 5 offset %arg1 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
// GENERIC-LABEL: sym_name = "attention_window"
// GENERIC: mask = #tfm.mask<window 4>
// GENERIC: mask = #tfm.mask<causal, window 2, global 1>
// GENERIC: mask = #tfm.mask<window 0, global 3>
// GENERIC: mask = #tfm.mask<causal, window 5>
func.func @attention_window(%q: tensor<?x4x?x8xf32>, %pos: index) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %0 = tfm.attention <scaled_dot> %q, %q, %q window 4 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %1 = tfm.attention <dot> %q, %q, %q global 1 window 2 causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %2 = "tfm.attention"(%q, %q, %q) <{mask = #tfm.mask<global 3, window 0>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %3 = tfm.attention <scaled_dot> %q, %q, %q causal window 5 offset %pos : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// A windowed self-attention, and its cached form in a decoder.
// CHECK-LABEL: func.func @mha_window(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) window 3 global 2 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 cache(%arg5 at %arg6) in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) causal window 3 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "mha_window"
// GENERIC: mask = #tfm.mask<window 3, global 2>
// GENERIC: mask = #tfm.mask<causal, window 3>
func.func @mha_window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %p: index) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) window 3 global 2 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) causal window 3 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0, %1 : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Linformer: the keys and values projected along the sequence
// (tfm.sequence_projection), and the attention that carries E and F.
// CHECK-LABEL: func.func @linformer(
// CHECK-NEXT: %0 = tfm.sequence_projection %arg0 by %arg1 : tensor<?x4x?x8xf32>, tensor<6x16xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <scaled_dot> %arg2 heads 4 in_proj(%arg3, %arg4) out_proj(%arg5, %arg6) linformer(%arg1, %arg1) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "linformer"
// GENERIC: "tfm.sequence_projection"(%arg0, %arg1) : (tensor<?x4x?x8xf32>, tensor<6x16xf32>) -> tensor<?x4x6x8xf32>
// GENERIC: operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0>
func.func @linformer(%k: tensor<?x4x?x8xf32>, %e: tensor<6x16xf32>, %x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> (tensor<?x4x6x8xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.sequence_projection %k by %e : tensor<?x4x?x8xf32>, tensor<6x16xf32>
  %1 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %e) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<?x?x32xf32>
  return %0, %1 : tensor<?x4x6x8xf32>, tensor<?x?x32xf32>
}

// -----

// Performer's feature map (FAVOR+): per-head rows [..., Hx, n, dk] by W
// [H, M, dk] give [..., H, n, M]; the input's heads may divide W's
// (grouped-query keys: 2 key heads read by W's 4 heads), static dimensions
// carry over, and a rank-3 input (no batch) of one head is read by all 4.
// CHECK-LABEL: func.func @feature_map(
// CHECK-NEXT: %0 = tfm.feature_map %arg0 by %arg2 : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %1 = tfm.feature_map %arg1 by %arg2 : tensor<?x2x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %2 = tfm.feature_map %arg3 by %arg2 : tensor<2x4x5x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %3 = tfm.feature_map %arg4 by %arg2 : tensor<1x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: return %0, %1, %2, %3 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<2x4x5x16xf32>, tensor<4x?x16xf32>
// GENERIC-LABEL: sym_name = "feature_map"
// GENERIC: "tfm.feature_map"(%arg0, %arg2) : (tensor<?x4x?x8xf32>, tensor<4x16x8xf32>) -> tensor<?x4x?x16xf32>
// GENERIC: "tfm.feature_map"(%arg1, %arg2) : (tensor<?x2x?x8xf32>, tensor<4x16x8xf32>) -> tensor<?x4x?x16xf32>
// GENERIC: "tfm.feature_map"(%arg3, %arg2) : (tensor<2x4x5x8xf32>, tensor<4x16x8xf32>) -> tensor<2x4x5x16xf32>
// GENERIC: "tfm.feature_map"(%arg4, %arg2) : (tensor<1x?x8xf32>, tensor<4x16x8xf32>) -> tensor<4x?x16xf32>
func.func @feature_map(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>, %w: tensor<4x16x8xf32>, %s: tensor<2x4x5x8xf32>, %r: tensor<1x?x8xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<2x4x5x16xf32>, tensor<4x?x16xf32>) {
  %0 = tfm.feature_map %q by %w : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
  %1 = tfm.feature_map %k by %w : tensor<?x2x?x8xf32>, tensor<4x16x8xf32>
  %2 = tfm.feature_map %s by %w : tensor<2x4x5x8xf32>, tensor<4x16x8xf32>
  %3 = tfm.feature_map %r by %w : tensor<1x?x8xf32>, tensor<4x16x8xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<2x4x5x16xf32>, tensor<4x?x16xf32>
}

// -----

// Linear attention over feature rows: every key; causal; causal with the
// queries at an offset among more keys (a decode step over a cache); over 2
// value heads read by the 4 feature heads (grouped-query), with a value
// head size (16) other than the features' (M = 6); rank 3. `causal` prints
// before `offset`; the generic form counts the two optional operands, the
// offset and the sums (operandSegmentSizes), and spells causal as a unit
// property.
// CHECK-LABEL: func.func @linear_attention(
// CHECK-NEXT: %0 = tfm.linear_attention %arg0, %arg0, %arg1 : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.linear_attention %arg0, %arg0, %arg1 causal : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.linear_attention %arg2, %arg0, %arg1 causal offset %arg3 : (tensor<1x4x1x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
// CHECK-NEXT: %3 = tfm.linear_attention %arg0, %arg0, %arg4 causal : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK-NEXT: %4 = tfm.linear_attention %arg5, %arg5, %arg6 : (tensor<4x5x6xf32>, tensor<4x5x6xf32>, tensor<2x5x8xf32>) -> tensor<4x5x8xf32>
// CHECK-NEXT: return %0, %1, %2, %3, %4 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<1x4x1x8xf32>, tensor<?x4x?x16xf32>, tensor<4x5x8xf32>
// GENERIC-LABEL: sym_name = "linear_attention"
// GENERIC: "tfm.linear_attention"(%arg0, %arg0, %arg1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.linear_attention"(%arg0, %arg0, %arg1) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.linear_attention"(%arg2, %arg0, %arg1, %arg3) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<1x4x1x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
// GENERIC: "tfm.linear_attention"(%arg0, %arg0, %arg4) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
// GENERIC: "tfm.linear_attention"(%arg5, %arg5, %arg6) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<4x5x6xf32>, tensor<4x5x6xf32>, tensor<2x5x8xf32>) -> tensor<4x5x8xf32>
func.func @linear_attention(%f: tensor<?x4x?x6xf32>, %v: tensor<?x4x?x8xf32>, %fq: tensor<1x4x1x6xf32>, %pos: index, %v2: tensor<?x2x?x16xf32>, %r: tensor<4x5x6xf32>, %rv: tensor<2x5x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<1x4x1x8xf32>, tensor<?x4x?x16xf32>, tensor<4x5x8xf32>) {
  %0 = tfm.linear_attention %f, %f, %v : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %1 = tfm.linear_attention %f, %f, %v causal : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %2 = tfm.linear_attention %fq, %f, %v causal offset %pos : (tensor<1x4x1x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
  %3 = tfm.linear_attention %f, %f, %v2 causal : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  %4 = tfm.linear_attention %r, %r, %rv : (tensor<4x5x6xf32>, tensor<4x5x6xf32>, tensor<2x5x8xf32>) -> tensor<4x5x8xf32>
  return %0, %1, %2, %3, %4 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<1x4x1x8xf32>, tensor<?x4x?x16xf32>, tensor<4x5x8xf32>
}

// -----

// A cache of feature sums (`features = M`: M x (headDim + 1) floats a head,
// no positions) and linear attention carrying them from call to call with
// `sums(%c)` (after `offset`): a decode step (one row, its own key) and a
// prefill of any length with 2 value heads read by the 4 feature heads (the
// cache holds the 4 feature heads' sums). The type prints bare after
// `tfm.cache`'s colon; `features = 0` is the default (a cache of positions)
// and is elided. The generic form counts the offset and the sums.
// CHECK: tfm.kv_cache @layers.0.self_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>
// CHECK-LABEL: func.func @linear_attention_sums(
// CHECK-SAME: %arg5: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>)
// CHECK-NEXT: %0 = tfm.cache @layers.0.self_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>
// CHECK-NEXT: %1 = tfm.linear_attention %arg0, %arg0, %arg1 causal offset %arg2 sums(%0) : (tensor<?x4x1x6xf32>, tensor<?x4x1x6xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %2 = tfm.linear_attention %arg4, %arg4, %arg3 causal offset %arg2 sums(%0) : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x2x?x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: return %1, %2 : tensor<?x4x1x8xf32>, tensor<?x4x?x8xf32>
// GENERIC: "tfm.kv_cache"() <{sym_name = "layers.0.self_attn.cache", type = !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>}> : () -> ()
// GENERIC-LABEL: sym_name = "linear_attention_sums"
// GENERIC: %0 = "tfm.cache"() <{name = @layers.0.self_attn.cache}> : () -> !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>
// GENERIC-NEXT: "tfm.linear_attention"(%arg0, %arg0, %arg1, %arg2, %0) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> : (tensor<?x4x1x6xf32>, tensor<?x4x1x6xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32>
// GENERIC-NEXT: "tfm.linear_attention"(%arg4, %arg4, %arg3, %arg2, %0) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
tfm.kv_cache @"layers.0.self_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>
func.func @linear_attention_sums(%fq: tensor<?x4x1x6xf32>, %v: tensor<?x4x1x8xf32>, %pos: index, %v2: tensor<?x2x?x8xf32>, %f: tensor<?x4x?x6xf32>, %positions: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 0>) -> (tensor<?x4x1x8xf32>, tensor<?x4x?x8xf32>) {
  %c = tfm.cache @"layers.0.self_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>
  %0 = tfm.linear_attention %fq, %fq, %v causal offset %pos sums(%c) : (tensor<?x4x1x6xf32>, tensor<?x4x1x6xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32>
  %1 = tfm.linear_attention %f, %f, %v2 causal offset %pos sums(%c) : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x2x?x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x?x8xf32>
  return %0, %1 : tensor<?x4x1x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// Performer self-attention: W ([heads, M, dk]) as `performer(%w)`, after
// the mask rules; not causal, causal with rotary positions, over its cache
// of feature sums (a decode step; `features` = M, heads = the query heads),
// with grouped-query keys and no biases, and both (the cache still holds
// the 4 query heads' sums).
// The generic form puts W in its own operand segment, between linformer's
// proj_f and key_padding.
// CHECK-LABEL: func.func @mha_performer(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) performer(%arg5) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) causal performer(%arg5) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 cache(%arg6 at %arg7) in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) causal performer(%arg5) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %3 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 kv_heads 2 in_proj(%arg8) out_proj(%arg3) causal performer(%arg5) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %4 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 kv_heads 2 cache(%arg6 at %arg7) in_proj(%arg8) out_proj(%arg3) causal performer(%arg5) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %0, %1, %2, %3, %4 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "mha_performer"
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0>, rope = #tfm.rope<half>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg6, %arg7, %arg5) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg8, %arg3, %arg5) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg8, %arg3, %arg6, %arg7, %arg5) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
func.func @mha_performer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %pos: index, %wi2: tensor<64x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  %3 = "tfm.multi_head_attention"(%x, %wi2, %wo, %w) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  %4 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %pos) in_proj(%wi2) out_proj(%wo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2, %3, %4 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Bilinear score with its [heads, dk, dk] weight; key length differs from
// query length.
// CHECK-LABEL: func.func @attention_bilinear(
// CHECK-NEXT: %0 = tfm.attention <bilinear> %arg0, %arg1, %arg2 params(%arg3) : (tensor<1x4x6x8xf32>, tensor<1x4x9x8xf32>, tensor<1x4x9x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x6x8xf32>
// CHECK-NEXT: return %0 : tensor<1x4x6x8xf32>
// GENERIC-LABEL: sym_name = "attention_bilinear"
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg2, %arg3) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, score = #tfm.score<bilinear>}> : (tensor<1x4x6x8xf32>, tensor<1x4x9x8xf32>, tensor<1x4x9x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x6x8xf32>
func.func @attention_bilinear(%q: tensor<1x4x6x8xf32>, %k: tensor<1x4x9x8xf32>, %v: tensor<1x4x9x8xf32>, %w: tensor<4x8x8xf32>) -> tensor<1x4x6x8xf32> {
  %0 = tfm.attention <bilinear> %q, %k, %v params(%w) : (tensor<1x4x6x8xf32>, tensor<1x4x9x8xf32>, tensor<1x4x9x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x6x8xf32>
  return %0 : tensor<1x4x6x8xf32>
}

// -----

// Additive (Bahdanau) score with its three parameters, causal.
// CHECK-LABEL: func.func @attention_additive(
// CHECK-NEXT: %0 = tfm.attention <additive> %arg0, %arg0, %arg0 params(%arg1, %arg2, %arg3) causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: return %0 : tensor<?x4x?x8xf32>
// GENERIC-LABEL: sym_name = "attention_additive"
// GENERIC: "tfm.attention"(%arg0, %arg0, %arg0, %arg1, %arg2, %arg3) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 3, 0, 0, 0, 0>, score = #tfm.score<additive>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x4x?x8xf32>
func.func @attention_additive(%q: tensor<?x4x?x8xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> tensor<?x4x?x8xf32> {
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %va) causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// Rank-2 attention (no heads dimension), no score parameters.
// CHECK-LABEL: func.func @attention_rank2(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg1, %arg1 : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: return %0 : tensor<?x8xf32>
func.func @attention_rank2(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = tfm.attention <scaled_dot> %q, %k, %k : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A causal offset: new query rows (a decode step) over more keys, the first
// query row at position %arg2 among them; with score parameters between
// the values and the offset. The generic form counts the score parameters
// and the offset (operandSegmentSizes).
// CHECK-LABEL: func.func @attention_offset(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg1, %arg1 causal offset %arg2 : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
// CHECK-NEXT: %1 = tfm.attention <bilinear> %arg0, %arg1, %arg1 params(%arg3) causal offset %arg2 : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<1x4x1x8xf32>
// CHECK-NEXT: %2 = tfm.attention <additive> %arg0, %arg1, %arg1 params(%arg4, %arg4, %arg5) causal offset %arg2 : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, index) -> tensor<1x4x1x8xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>
// GENERIC-LABEL: sym_name = "attention_offset"
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}> : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1, %arg3, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>, score = #tfm.score<bilinear>}> : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<1x4x1x8xf32>
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1, %arg4, %arg4, %arg5, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 3, 1, 0, 0, 0>, score = #tfm.score<additive>}> : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, index) -> tensor<1x4x1x8xf32>
func.func @attention_offset(%q: tensor<1x4x1x8xf32>, %kv: tensor<1x4x?x8xf32>, %pos: index, %w: tensor<4x8x8xf32>, %wa: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> (tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>) {
  %0 = tfm.attention <scaled_dot> %q, %kv, %kv causal offset %pos : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
  %1 = tfm.attention <bilinear> %q, %kv, %kv params(%w) causal offset %pos : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<1x4x1x8xf32>
  %2 = tfm.attention <additive> %q, %kv, %kv params(%wa, %wa, %va) causal offset %pos : (tensor<1x4x1x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, index) -> tensor<1x4x1x8xf32>
  return %0, %1, %2 : tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>
}

// -----

// Self-attention: plain, causal with rope, and rope with rope_base.
// CHECK-LABEL: func.func @mha_self(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.multi_head_attention <dot> %arg0 heads 2 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) causal {rope = #tfm.rope<interleaved>, rope_base = 5.000000e+05 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "mha_self"
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, rope = #tfm.rope<half>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4) <{mask = #tfm.mask<causal>, num_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, rope = #tfm.rope<interleaved>, rope_base = 5.000000e+05 : f32, score = #tfm.score<dot>}>
func.func @mha_self(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.multi_head_attention <dot> %x heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<interleaved>, rope_base = 5.000000e+05 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Cross-attention over memory with its own (dynamic) length.
// CHECK-LABEL: func.func @mha_cross(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 memory %arg1 heads 4 in_proj(%arg2, %arg3) out_proj(%arg4, %arg5) : (tensor<2x?x32xf32>, tensor<2x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
// CHECK-NEXT: return %0 : tensor<2x?x32xf32>
func.func @mha_cross(%x: tensor<2x?x32xf32>, %m: tensor<2x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<2x?x32xf32> {
  %0 = tfm.multi_head_attention <scaled_dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<2x?x32xf32>, tensor<2x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
  return %0 : tensor<2x?x32xf32>
}

// -----

// Cross-attention with a bilinear score, all dimensions static.
// CHECK-LABEL: func.func @mha_bilinear(
// CHECK-NEXT: %0 = tfm.multi_head_attention <bilinear> %arg0 memory %arg1 heads 4 in_proj(%arg2, %arg3) out_proj(%arg4, %arg5) params(%arg6) : (tensor<2x5x32xf32>, tensor<2x7x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x8x8xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT: return %0 : tensor<2x5x32xf32>
func.func @mha_bilinear(%x: tensor<2x5x32xf32>, %m: tensor<2x7x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x8x8xf32>) -> tensor<2x5x32xf32> {
  %0 = tfm.multi_head_attention <bilinear> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%w) : (tensor<2x5x32xf32>, tensor<2x7x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x8x8xf32>) -> tensor<2x5x32xf32>
  return %0 : tensor<2x5x32xf32>
}

// -----

// Causal self-attention with an additive score.
// CHECK-LABEL: func.func @mha_additive(
// CHECK-NEXT: %0 = tfm.multi_head_attention <additive> %arg0 heads 4 in_proj(%arg1, %arg2) out_proj(%arg3, %arg4) params(%arg5, %arg6, %arg7) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %0 : tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "mha_additive"
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<additive>}>
func.func @mha_additive(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
  %0 = tfm.multi_head_attention <additive> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk, %wq, %va) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A self-attention's core over stacked Q/K/V rows, as
// --tfm-decompose-attention writes it: one GEMM over the stacked
// in_proj weight, its three blocks split into heads, rotary positions on
// the queries and keys, one causal attention core, the heads merged.
// CHECK-LABEL: func.func @self_attention_decomposed(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
// CHECK-NEXT: %1 = tfm.split_heads %0 part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.split_heads %0 part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %3 = tfm.split_heads %0 part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %4 = tfm.rotary <interleaved> %1 {base = 5.000000e+05 : f32} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %5 = tfm.rotary <interleaved> %2 {base = 5.000000e+05 : f32} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %6 = tfm.attention <scaled_dot> %4, %5, %3 causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %7 = tfm.merge_heads %6 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: return %7 : tensor<?x?x32xf32>
func.func @self_attention_decomposed(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>) -> tensor<?x?x32xf32> {
  %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
  %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %qr = tfm.rotary <interleaved> %q {base = 5.0e+05 : f32} : tensor<?x4x?x8xf32>
  %kr = tfm.rotary <interleaved> %k {base = 5.0e+05 : f32} : tensor<?x4x?x8xf32>
  %o = tfm.attention <scaled_dot> %qr, %kr, %v causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// Cross-attention decomposed: the query rows of in_proj and the key and
// value rows (tfm.slice_rows) are two GEMMs, of the query and of the memory.
// CHECK-LABEL: func.func @cross_attention_decomposed(
// CHECK-NEXT: %0 = tfm.slice_rows %arg2 from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %1 = tfm.slice_rows %arg3 from 0 : tensor<96xf32> -> tensor<32xf32>
// CHECK-NEXT: %2 = tfm.linear %arg0, %0, %1 : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
// CHECK-NEXT: %3 = tfm.split_heads %2 into 4 heads : tensor<2x?x32xf32> -> tensor<2x4x?x8xf32>
// CHECK-NEXT: %4 = tfm.slice_rows %arg2 from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %5 = tfm.slice_rows %arg3 from 32 : tensor<96xf32> -> tensor<64xf32>
// CHECK-NEXT: %6 = tfm.linear %arg1, %4, %5 : (tensor<2x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
// CHECK-NEXT: %7 = tfm.split_heads %6 part 0 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
// CHECK-NEXT: %8 = tfm.split_heads %6 part 1 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
// CHECK-NEXT: %9 = tfm.attention <dot> %3, %7, %8 : (tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>) -> tensor<2x4x?x8xf32>
// CHECK-NEXT: %10 = tfm.merge_heads %9 : tensor<2x4x?x8xf32> -> tensor<2x?x32xf32>
// CHECK-NEXT: return %10 : tensor<2x?x32xf32>
func.func @cross_attention_decomposed(%x: tensor<2x?x32xf32>, %mem: tensor<2x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>) -> tensor<2x?x32xf32> {
  %wq = tfm.slice_rows %wi from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
  %bq = tfm.slice_rows %bi from 0 : tensor<96xf32> -> tensor<32xf32>
  %q2 = tfm.linear %x, %wq, %bq : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
  %q = tfm.split_heads %q2 into 4 heads : tensor<2x?x32xf32> -> tensor<2x4x?x8xf32>
  %wkv = tfm.slice_rows %wi from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
  %bkv = tfm.slice_rows %bi from 32 : tensor<96xf32> -> tensor<64xf32>
  %kv = tfm.linear %mem, %wkv, %bkv : (tensor<2x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
  %k = tfm.split_heads %kv part 0 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
  %v = tfm.split_heads %kv part 1 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
  %o = tfm.attention <dot> %q, %k, %v : (tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>) -> tensor<2x4x?x8xf32>
  %m = tfm.merge_heads %o : tensor<2x4x?x8xf32> -> tensor<2x?x32xf32>
  return %m : tensor<2x?x32xf32>
}

// -----

// Default dim, explicit dims at both ends of the range; dim = -1 is elided.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT: %0 = tfm.softmax %arg0 : tensor<1x4x?x?xf32>
// CHECK-NEXT: %1 = tfm.softmax %arg0 {dim = 1 : i64} : tensor<1x4x?x?xf32>
// CHECK-NEXT: %2 = tfm.softmax %arg0 {dim = -4 : i64} : tensor<1x4x?x?xf32>
// CHECK-NEXT: %3 = tfm.softmax %arg0 : tensor<1x4x?x?xf32>
// CHECK-NEXT: return %0, %1, %2, %3 : tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>
// GENERIC-LABEL: sym_name = "softmax"
// GENERIC: "tfm.softmax"(%arg0) <{dim = -1 : i64}> : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
func.func @softmax(%s: tensor<1x4x?x?xf32>) -> (tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>) {
  %0 = tfm.softmax %s : tensor<1x4x?x?xf32>
  %1 = tfm.softmax %s {dim = 1 : i64} : tensor<1x4x?x?xf32>
  %2 = tfm.softmax %s {dim = -4 : i64} : tensor<1x4x?x?xf32>
  %3 = tfm.softmax %s {dim = -1 : i64} : tensor<1x4x?x?xf32>
  return %0, %1, %2, %3 : tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>, tensor<1x4x?x?xf32>
}

// -----

// Default eps, a non-default eps (printed as the nearest f32), and an
// explicit eps equal to the default (elided).
// CHECK-LABEL: func.func @layer_norm(
// CHECK-NEXT: %0 = tfm.layer_norm %arg0, %arg1, %arg2 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: %1 = tfm.layer_norm %arg0, %arg1, %arg2 {eps = 9.99999997E-7 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: %2 = tfm.layer_norm %arg0, %arg1, %arg2 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
func.func @layer_norm(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.layer_norm %x, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %1 = tfm.layer_norm %x, %g, %b {eps = 1.0e-06 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %2 = tfm.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// All three activations.
// CHECK-LABEL: func.func @ffn(
// CHECK-NEXT: %0 = tfm.ffn <relu> %arg0, %arg1, %arg2, %arg3, %arg4 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.ffn <gelu> %arg0, %arg1, %arg2, %arg3, %arg4 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.ffn <gelu_tanh> %arg0, %arg1, %arg2, %arg3, %arg4 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "ffn"
// GENERIC: "tfm.ffn"(%arg0, %arg1, %arg2, %arg3, %arg4) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
// GENERIC: "tfm.ffn"(%arg0, %arg1, %arg2, %arg3, %arg4) <{activation = #tfm.activation<gelu>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
// GENERIC: "tfm.ffn"(%arg0, %arg1, %arg2, %arg3, %arg4) <{activation = #tfm.activation<gelu_tanh>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
func.func @ffn(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.ffn <gelu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.ffn <gelu_tanh> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Residual add, dynamic and static.
// CHECK-LABEL: func.func @add(
// CHECK-NEXT: %0 = tfm.add %arg0, %arg1 : tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.add %arg2, %arg2 : tensor<2x3xf32>
// CHECK-NEXT: return %0, %1 : tensor<?x?x32xf32>, tensor<2x3xf32>
func.func @add(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %s: tensor<2x3xf32>) -> (tensor<?x?x32xf32>, tensor<2x3xf32>) {
  %0 = tfm.add %x, %y : tensor<?x?x32xf32>
  %1 = tfm.add %s, %s : tensor<2x3xf32>
  return %0, %1 : tensor<?x?x32xf32>, tensor<2x3xf32>
}

// -----

// Incremental decoding: a cache declaration, a handle to it, the appending
// form (self-attention at %pos, cross-attention from the memory at 0), the
// read-only form (cross-attention over the first %len cached positions) and
// take_last. The type prints bare after `tfm.cache`'s colon.
// CHECK: tfm.kv_cache @layers.0.self_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK: tfm.kv_cache @layers.0.multihead_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-LABEL: func.func @mha_cached(
// CHECK-NEXT: %0 = tfm.cache @layers.0.self_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %1 = tfm.cache @layers.0.multihead_attn.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %2 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 cache(%0 at %arg2) in_proj(%arg3, %arg4) out_proj(%arg5, %arg6) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %3 = tfm.multi_head_attention <dot> %2 memory %arg1 heads 4 cache(%1 at %c0) in_proj(%arg3, %arg4) out_proj(%arg5, %arg6) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
// CHECK-NEXT: %4 = tfm.multi_head_attention <dot> %3 heads 4 cache(%1 upto %arg7) in_proj(%arg3, %arg4) out_proj(%arg5, %arg6) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
// CHECK-NEXT: %5 = tfm.take_last %4 : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
// CHECK-NEXT: return %5 : tensor<?x1x32xf32>
// GENERIC: "tfm.kv_cache"() <{sym_name = "layers.0.self_attn.cache", type = !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>}> : () -> ()
// GENERIC-LABEL: sym_name = "mha_cached"
// GENERIC: "tfm.cache"() <{name = @layers.0.self_attn.cache}>
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg3, %arg4, %arg5, %arg6, %0, %arg2) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0>, rope = #tfm.rope<half>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.multi_head_attention"({{.*}}) <{cache_read_only, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}>
// GENERIC: "tfm.take_last"(%5)
tfm.kv_cache @"layers.0.self_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
tfm.kv_cache @"layers.0.multihead_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
func.func @mha_cached(%x: tensor<?x?x32xf32>, %mem: tensor<?x?x32xf32>, %pos: index, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %len: index) -> tensor<?x1x32xf32> {
  %self = tfm.cache @"layers.0.self_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  %cross = tfm.cache @"layers.0.multihead_attn.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%self at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  %zero = arith.constant 0 : index
  %1 = tfm.multi_head_attention <dot> %0 memory %mem heads 4 cache(%cross at %zero) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  %2 = tfm.multi_head_attention <dot> %1 heads 4 cache(%cross upto %len) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  %3 = tfm.take_last %2 : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
  return %3 : tensor<?x1x32xf32>
}

// -----

// The cache ops: new keys and values appended at a position (the result is
// the positions the cache then holds), the first positions read back (as
// ?xHEADSx?xHEAD_DIM tensors, inferred from the cache type) and attended
// by the new query rows from their own position on; and the largest append
// the cache takes, all its sequences and positions at once.
// CHECK: tfm.kv_cache @decoder.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-LABEL: func.func @cache_ops(
// CHECK-NEXT: %0 = tfm.cache @decoder.cache : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %1 = tfm.cache_append %0, %arg0, %arg1 at %arg2 : <maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
// CHECK-NEXT: %keys, %values = tfm.cache_read %0[%arg3, %1] : <maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %2 = tfm.attention <scaled_dot> %arg0, %keys, %values causal offset %arg2 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %3 = tfm.cache_append %0, %arg4, %arg4 at %c0 : <maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<2x4x16x8xf32>
// CHECK-NEXT: %keys_0, %values_1 = tfm.cache_read %0[%arg3, %3] : <maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: return %2, %keys_0, %values_1 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
// GENERIC: "tfm.kv_cache"() <{sym_name = "decoder.cache", type = !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>}> : () -> ()
// GENERIC-LABEL: sym_name = "cache_ops"
// GENERIC: %1 = "tfm.cache_append"(%0, %arg0, %arg1, %arg2) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> index
// GENERIC-NEXT: %2:2 = "tfm.cache_read"(%0, %arg3, %1) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index, index) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>)
// GENERIC-NEXT: "tfm.attention"(%arg0, %2#0, %2#1, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
// GENERIC: "tfm.cache_append"(%0, %arg4, %arg4, %{{.*}}) : (!tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, index) -> index
tfm.kv_cache @"decoder.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
func.func @cache_ops(%k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x8xf32>, %pos: index, %batch: index, %all: tensor<2x4x16x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %c = tfm.cache @"decoder.cache" : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  %len = tfm.cache_append %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
  %keys, %values = tfm.cache_read %c[%batch, %len] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  %o = tfm.attention <scaled_dot> %k, %keys, %values causal offset %pos : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  %zero = arith.constant 0 : index
  %full = tfm.cache_append %c, %all, %all at %zero : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<2x4x16x8xf32>
  %k2, %v2 = tfm.cache_read %c[%batch, %full] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  return %o, %k2, %v2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// A windowed cache (a sliding window of 4 with 1 global token) keeps 5 of
// its 64 positions: tfm.cache_window gathers what the new rows attend (the
// globals, the window, their own keys) with their offset among them, then
// tfm.cache_append stores them in the ring.
// A window of 0 keeps the globals only.
// CHECK: tfm.kv_cache @decoder.ring : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>
// CHECK-NEXT: tfm.kv_cache @decoder.globals : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 0, globals = 3>
// CHECK-LABEL: func.func @cache_window(
// CHECK-NEXT: %0 = tfm.cache @decoder.ring : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>
// CHECK-NEXT: %windowKeys, %windowValues, %offset = tfm.cache_window %0, %arg0, %arg1 at %arg2 : <maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x2x?x8xf32>
// CHECK-NEXT: %1 = tfm.cache_append %0, %arg0, %arg1 at %arg2 : <maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x2x?x8xf32>
// CHECK-NEXT: %2 = tfm.attention <scaled_dot> %arg0, %windowKeys, %windowValues causal window 4 global 1 offset %offset
// GENERIC-LABEL: sym_name = "cache_window"
// GENERIC: %1:3 = "tfm.cache_window"(%0, %arg0, %arg1, %arg2) : (!tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, index) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, index)
tfm.kv_cache @"decoder.ring" : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>
tfm.kv_cache @"decoder.globals" : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 0, globals = 3>
func.func @cache_window(%k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %pos: index) -> tensor<?x2x?x8xf32> {
  %c = tfm.cache @"decoder.ring" : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>
  %wk, %wv, %offset = tfm.cache_window %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x2x?x8xf32>
  %len = tfm.cache_append %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 64, headDim = 8, window = 4, globals = 1>, tensor<?x2x?x8xf32>
  %o = tfm.attention <scaled_dot> %k, %wk, %wv causal window 4 global 1 offset %offset : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, index) -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// The residual add and layer norm in one op (from --tfm-fuse-residual-norm);
// eps elided at its default.
// CHECK-LABEL: func.func @add_layer_norm(
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %arg1, %arg2, %arg3 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: %sum_0, %result_1 = tfm.add_layer_norm %sum, %result, %arg2, %arg3 {eps = 9.99999997E-7 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: return %result_1
// GENERIC-LABEL: sym_name = "add_layer_norm"
// GENERIC: "tfm.add_layer_norm"(%arg0, %arg1, %arg2, %arg3) <{eps = 9.99999974E-6 : f32}> : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
func.func @add_layer_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s, %y = tfm.add_layer_norm %x, %f, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %s2, %y2 = tfm.add_layer_norm %s, %y, %g, %b {eps = 1.0e-06 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y2 : tensor<?x?x32xf32>
}

// -----

// RMS norms (no beta), alone and fused with the residual add.
// CHECK-LABEL: func.func @rms_norm(
// CHECK-NEXT: %0 = tfm.layer_norm rms %arg0, %arg2 {eps = 9.99999997E-7 : f32} : tensor<?x?x32xf32>, tensor<32xf32>
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm rms %0, %arg1, %arg2 : tensor<?x?x32xf32>, tensor<32xf32>
// CHECK-NEXT: return %result
// GENERIC-LABEL: sym_name = "rms_norm"
// GENERIC: "tfm.layer_norm"(%arg0, %arg2) <{eps = 9.99999997E-7 : f32, rms}> : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// GENERIC: "tfm.add_layer_norm"(%0, %arg1, %arg2) <{eps = 9.99999974E-6 : f32, rms}> : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
func.func @rms_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %n = tfm.layer_norm rms %x, %g {eps = 1.0e-06 : f32} : tensor<?x?x32xf32>, tensor<32xf32>
  %s, %y = tfm.add_layer_norm rms %n, %f, %g : tensor<?x?x32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// SiLU, a gated FFN without biases, and the GLU it decomposes into.
// CHECK-LABEL: func.func @gated_ffn(
// CHECK-NEXT: %0 = tfm.ffn <silu> gated %arg0, %arg1, %arg2 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.ffn <gelu> gated %arg0, %arg1, %arg3, %arg2, %arg4 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.ffn <silu> %arg0, %arg5, %arg2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %3 = tfm.linear %arg0, %arg1 : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
// CHECK-NEXT: %4 = tfm.glu <silu> %3 : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
// CHECK-NEXT: %5 = tfm.linear %arg0, %arg5 activation <silu> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// GENERIC-LABEL: sym_name = "gated_ffn"
// GENERIC: "tfm.ffn"(%arg0, %arg1, %arg2) <{activation = #tfm.activation<silu>, gated, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}>
// GENERIC: "tfm.glu"(%3) <{activation = #tfm.activation<silu>}> : (tensor<?x?x128xf32>) -> tensor<?x?x64xf32>
func.func @gated_ffn(%x: tensor<?x?x32xf32>, %w13: tensor<128x32xf32>, %w2: tensor<32x64xf32>, %b13: tensor<128xf32>, %b2: tensor<32xf32>, %w1: tensor<64x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %0 = tfm.ffn <silu> gated %x, %w13, %w2 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.ffn <gelu> gated %x, %w13, %b13, %w2, %b2 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.ffn <silu> %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %h = tfm.linear %x, %w13 : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  %g = tfm.glu <silu> %h : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
  %a = tfm.linear %x, %w1 activation <silu> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %0, %1, %2, %g, %a : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Grouped-query attention: 4 query heads over 2 (and 1) key/value heads,
// no biases; the core over fewer key heads.
// CHECK-LABEL: func.func @grouped_query(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 kv_heads 2 in_proj(%arg1) out_proj(%arg2) causal : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <dot> %arg0 heads 4 kv_heads 1 in_proj(%arg3, %arg4) out_proj(%arg2, %arg5) : (tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<48xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.attention <scaled_dot> %arg6, %arg7, %arg7 causal : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
// GENERIC-LABEL: sym_name = "grouped_query"
// GENERIC: "tfm.multi_head_attention"(%arg0, %arg1, %arg2) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, score = #tfm.score<scaled_dot>}>
func.func @grouped_query(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %wi1: tensor<48x32xf32>, %bi1: tensor<48xf32>, %bo: tensor<32xf32>, %q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x4x?x8xf32>) {
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 in_proj(%wi) out_proj(%wo) causal : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.multi_head_attention <dot> %x heads 4 kv_heads 1 in_proj(%wi1, %bi1) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<48xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.attention <scaled_dot> %q, %k, %k causal : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x4x?x8xf32>
}

// -----

// A checkpoint's layout on the parameters: stacked sources, transposed ones.
// CHECK: tfm.param @layers.0.self_attn.in_proj_weight {sources = ["q.weight", "k.weight", "v.weight"]} : tensor<64x32xf32>
// CHECK: tfm.param @layers.0.linear1.weight {sources = ["h.0.mlp.c_fc.weight"], transposed} : tensor<128x32xf32>
// GENERIC: "tfm.param"() <{sources = ["q.weight", "k.weight", "v.weight"], sym_name = "layers.0.self_attn.in_proj_weight", type = tensor<64x32xf32>}> : () -> ()
// GENERIC: "tfm.param"() <{sources = ["h.0.mlp.c_fc.weight"], sym_name = "layers.0.linear1.weight", transposed, type = tensor<128x32xf32>}> : () -> ()
tfm.param @"layers.0.self_attn.in_proj_weight" {sources = ["q.weight", "k.weight", "v.weight"]} : tensor<64x32xf32>
tfm.param @"layers.0.linear1.weight" {sources = ["h.0.mlp.c_fc.weight"], transposed} : tensor<128x32xf32>

// -----

// Padding masks: the keys' [batch, keys] mask on the attention core and on
// self- and cross-attention.
// CHECK-LABEL: func.func @key_padding(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg0, %arg0 causal key_padding(%arg1) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.multi_head_attention <dot> %arg2 heads 4 in_proj(%arg3) out_proj(%arg4) causal key_padding(%arg1) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.multi_head_attention <dot> %arg2 memory %arg2 heads 4 in_proj(%arg3) out_proj(%arg4) key_padding(%arg1) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "key_padding"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>
// GENERIC: operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>
func.func @key_padding(%q: tensor<?x4x?x8xf32>, %m: tensor<?x?xf32>, %x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.attention <scaled_dot> %q, %q, %q causal key_padding(%m) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?xf32>) -> tensor<?x4x?x8xf32>
  %1 = tfm.multi_head_attention <dot> %x heads 4 in_proj(%wi) out_proj(%wo) causal key_padding(%m) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.multi_head_attention <dot> %x memory %x heads 4 in_proj(%wi) out_proj(%wo) key_padding(%m) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2 : tensor<?x4x?x8xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Attention maps: the slot of the runtime's map the weights go to
// (`weights_to`, an index, the last operand), on the attention core, alone
// and after key_padding, and on self- and cross-attention.
// CHECK-LABEL: func.func @weights_to(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg0, %arg0 causal weights_to %arg1 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.attention <scaled_dot> %arg0, %arg0, %arg0 key_padding(%arg2) weights_to %arg1 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?xf32>, index) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.multi_head_attention <dot> %arg3 heads 4 in_proj(%arg4) out_proj(%arg5) causal key_padding(%arg2) weights_to %arg1 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>, index) -> tensor<?x?x32xf32>
// CHECK-NEXT: %3 = tfm.multi_head_attention <dot> %arg3 memory %arg3 heads 4 in_proj(%arg4) out_proj(%arg5) weights_to %arg6 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, index) -> tensor<?x?x32xf32>
// GENERIC-LABEL: sym_name = "weights_to"
// GENERIC: "tfm.attention"(%arg0, %arg0, %arg0, %arg1) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 1>, score = #tfm.score<scaled_dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.attention"(%arg0, %arg0, %arg0, %arg2, %arg1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, score = #tfm.score<scaled_dot>}> : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?xf32>, index) -> tensor<?x4x?x8xf32>
// GENERIC: "tfm.multi_head_attention"(%arg3, %arg4, %arg5, %arg2, %arg1) <{mask = #tfm.mask<causal>, num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1>, score = #tfm.score<dot>}>
// GENERIC: "tfm.multi_head_attention"(%arg3, %arg3, %arg4, %arg5, %arg6) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1>, score = #tfm.score<dot>}>
func.func @weights_to(%q: tensor<?x4x?x8xf32>, %slot: index, %m: tensor<?x?xf32>, %x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wo: tensor<32x32xf32>, %cross: index) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0 = tfm.attention <scaled_dot> %q, %q, %q causal weights_to %slot : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
  %1 = tfm.attention <scaled_dot> %q, %q, %q key_padding(%m) weights_to %slot : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?xf32>, index) -> tensor<?x4x?x8xf32>
  %2 = tfm.multi_head_attention <dot> %x heads 4 in_proj(%wi) out_proj(%wo) causal key_padding(%m) weights_to %slot : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, tensor<?x?xf32>, index) -> tensor<?x?x32xf32>
  %3 = tfm.multi_head_attention <dot> %x memory %x heads 4 in_proj(%wi) out_proj(%wo) weights_to %cross : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<32x32xf32>, index) -> tensor<?x?x32xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Mixture of experts: top-2 of 3 experts with biases, a gated (SwiGLU)
// mixture without biases, and top-k of all experts.
// CHECK-LABEL: func.func @moe(
// CHECK-NEXT: %0 = tfm.moe <gelu> %arg0, %arg1 top 2 linear1(%arg2, %arg3, %arg4) bias(%arg5, %arg6, %arg7) linear2(%arg8, %arg9, %arg10) bias(%arg11, %arg12, %arg13) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.moe <silu> gated %arg0, %arg1 top 1 linear1(%arg14, %arg14, %arg14) linear2(%arg8, %arg9, %arg10) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.moe <relu> %arg15, %arg1 top 3 linear1(%arg2, %arg3, %arg4) linear2(%arg8, %arg9, %arg10) : (tensor<2x5x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x5x32xf32>
// GENERIC-LABEL: sym_name = "moe"
// GENERIC: "tfm.moe"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13) <{activation = #tfm.activation<gelu>, operandSegmentSizes = array<i32: 1, 1, 3, 3, 3, 3>, top_k = 2 : i64}>
// GENERIC: "tfm.moe"(%arg0, %arg1, %arg14, %arg14, %arg14, %arg8, %arg9, %arg10) <{activation = #tfm.activation<silu>, gated, operandSegmentSizes = array<i32: 1, 1, 3, 0, 3, 0>, top_k = 1 : i64}>
// GENERIC: "tfm.moe"(%arg15, %arg1, %arg2, %arg3, %arg4, %arg8, %arg9, %arg10) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 3, 0, 3, 0>, top_k = 3 : i64}>
func.func @moe(%x: tensor<?x?x32xf32>, %gate: tensor<3x32xf32>, %w1_0: tensor<64x32xf32>, %w1_1: tensor<64x32xf32>, %w1_2: tensor<64x32xf32>, %b1_0: tensor<64xf32>, %b1_1: tensor<64xf32>, %b1_2: tensor<64xf32>, %w2_0: tensor<32x64xf32>, %w2_1: tensor<32x64xf32>, %w2_2: tensor<32x64xf32>, %b2_0: tensor<32xf32>, %b2_1: tensor<32xf32>, %b2_2: tensor<32xf32>, %w13: tensor<128x32xf32>, %s: tensor<2x5x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x5x32xf32>) {
  %0 = tfm.moe <gelu> %x, %gate top 2 linear1(%w1_0, %w1_1, %w1_2) bias(%b1_0, %b1_1, %b1_2) linear2(%w2_0, %w2_1, %w2_2) bias(%b2_0, %b2_1, %b2_2) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.moe <silu> gated %x, %gate top 1 linear1(%w13, %w13, %w13) linear2(%w2_0, %w2_1, %w2_2) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %2 = tfm.moe <relu> %s, %gate top 3 linear1(%w1_0, %w1_1, %w1_2) linear2(%w2_0, %w2_1, %w2_2) : (tensor<2x5x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<2x5x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x5x32xf32>
}

// -----

// Routing: the top 2 of 4 experts' (token, slot) pairs grouped by expert
// (starts: 4 + 1 entries) and the tokens' rows gathered in that order;
// static rows, top 1; and a single token (rank 1 logits and rows).
// CHECK-LABEL: func.func @routing(
// CHECK-NEXT: %tokens, %weights, %starts = tfm.route_experts %arg1 top 2 : tensor<?x?x4xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<5xi32>
// CHECK-NEXT: %0 = tfm.gather_rows %arg0, %tokens : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x32xf32>
// CHECK-NEXT: %tokens_0, %weights_1, %starts_2 = tfm.route_experts %arg2 top 1 : tensor<6x4xf32> -> tensor<6x1xi32>, tensor<6x1xf32>, tensor<5xi32>
// CHECK-NEXT: %1 = tfm.gather_rows %arg3, %tokens_0 : (tensor<6x32xf32>, tensor<6x1xi32>) -> tensor<6x1x32xf32>
// CHECK-NEXT: %tokens_3, %weights_4, %starts_5 = tfm.route_experts %arg4 top 2 : tensor<4xf32> -> tensor<2xi32>, tensor<2xf32>, tensor<5xi32>
// CHECK-NEXT: %2 = tfm.gather_rows %arg5, %tokens_3 : (tensor<32xf32>, tensor<2xi32>) -> tensor<2x32xf32>
// CHECK-NEXT: return %0, %weights, %starts, %1, %2 : tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<5xi32>, tensor<6x1x32xf32>, tensor<2x32xf32>
// GENERIC-LABEL: sym_name = "routing"
// GENERIC: %0:3 = "tfm.route_experts"(%arg1) <{top_k = 2 : i64}> : (tensor<?x?x4xf32>) -> (tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<5xi32>)
// GENERIC-NEXT: "tfm.gather_rows"(%arg0, %0#0) : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x32xf32>
// GENERIC: "tfm.route_experts"(%arg2) <{top_k = 1 : i64}> : (tensor<6x4xf32>) -> (tensor<6x1xi32>, tensor<6x1xf32>, tensor<5xi32>)
func.func @routing(%x: tensor<?x?x32xf32>, %logits: tensor<?x?x4xf32>, %logits6: tensor<6x4xf32>, %x6: tensor<6x32xf32>, %one: tensor<4xf32>, %row: tensor<32xf32>) -> (tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<5xi32>, tensor<6x1x32xf32>, tensor<2x32xf32>) {
  %tokens, %weights, %starts = tfm.route_experts %logits top 2 : tensor<?x?x4xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<5xi32>
  %rows = tfm.gather_rows %x, %tokens : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x32xf32>
  %t6, %w6, %s6 = tfm.route_experts %logits6 top 1 : tensor<6x4xf32> -> tensor<6x1xi32>, tensor<6x1xf32>, tensor<5xi32>
  %rows6 = tfm.gather_rows %x6, %t6 : (tensor<6x32xf32>, tensor<6x1xi32>) -> tensor<6x1x32xf32>
  %t1, %w1, %s1 = tfm.route_experts %one top 2 : tensor<4xf32> -> tensor<2xi32>, tensor<2xf32>, tensor<5xi32>
  %rows1 = tfm.gather_rows %row, %t1 : (tensor<32xf32>, tensor<2xi32>) -> tensor<2x32xf32>
  return %rows, %weights, %starts, %rows6, %rows1 : tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<5xi32>, tensor<6x1x32xf32>, tensor<2x32xf32>
}

// -----

// The experts' GEMMs over 2 groups: biases and an activation, rows kept
// per (token, slot) pair; scattered back to the tokens with their routing
// weights (the slot dimension dropped), with biases and a residual too;
// neither biases nor an activation.
// CHECK-LABEL: func.func @grouped_linear(
// CHECK-NEXT: %0 = tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg3) bias(%arg4, %arg5) activation <relu> : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x2x64xf32>
// CHECK-NEXT: %1 = tfm.grouped_linear %0 groups %arg1 weights(%arg6, %arg7) scatter %arg10, %arg11 : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.grouped_linear %0 groups %arg1 weights(%arg6, %arg7) bias(%arg8, %arg9) scatter %arg10, %arg11 residual %arg12 : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %3 = tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg3) : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x?x2x64xf32>
// CHECK-NEXT: return %1, %2, %3 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x2x64xf32>
// GENERIC-LABEL: sym_name = "grouped_linear"
// GENERIC: "tfm.grouped_linear"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 2, 2, 0, 0, 0>}>
// GENERIC: "tfm.grouped_linear"(%0, %arg1, %arg6, %arg7, %arg10, %arg11) <{operandSegmentSizes = array<i32: 1, 1, 2, 0, 1, 1, 0>}>
// GENERIC: "tfm.grouped_linear"(%0, %arg1, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12) <{operandSegmentSizes = array<i32: 1, 1, 2, 2, 1, 1, 1>}>
// GENERIC: "tfm.grouped_linear"(%arg0, %arg1, %arg2, %arg3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0, 0, 0, 0>}>
func.func @grouped_linear(%xs: tensor<?x?x2x32xf32>, %starts: tensor<3xi32>, %w0: tensor<64x32xf32>, %w1: tensor<64x32xf32>, %b0: tensor<64xf32>, %b1: tensor<64xf32>, %v0: tensor<32x64xf32>, %v1: tensor<32x64xf32>, %c0: tensor<32xf32>, %c1: tensor<32xf32>, %tokens: tensor<?x?x2xi32>, %weights: tensor<?x?x2xf32>, %r: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x2x64xf32>) {
  %h = tfm.grouped_linear %xs groups %starts weights(%w0, %w1) bias(%b0, %b1) activation <relu> : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x2x64xf32>
  %y = tfm.grouped_linear %h groups %starts weights(%v0, %v1) scatter %tokens, %weights : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
  %z = tfm.grouped_linear %h groups %starts weights(%v0, %v1) bias(%c0, %c1) scatter %tokens, %weights residual %r : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %n = tfm.grouped_linear %xs groups %starts weights(%w0, %w1) : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x?x2x64xf32>
  return %y, %z, %n : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x2x64xf32>
}

// -----

// A Mamba mixer, alone and carrying its state from a position; its
// decomposed conv and scan, alone and with the state.
// CHECK-LABEL: func.func @mamba(
// CHECK-NEXT: %0 = tfm.mamba_mixer %arg0 in_proj %arg1 conv(%arg2, %arg3) x_proj %arg4 dt_proj(%arg5, %arg6) a_log %arg7 d %arg8 out_proj %arg9 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %1 = tfm.mamba_mixer %arg0 in_proj %arg1 conv(%arg2, %arg3) x_proj %arg4 dt_proj(%arg5, %arg6) a_log %arg7 d %arg8 out_proj %arg9 offset %arg10 state(%arg11) : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %2 = tfm.causal_conv1d %arg12, %arg2, %arg3 : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %3 = tfm.causal_conv1d %arg12, %arg2, %arg3 offset %arg10 state(%arg11) : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %4 = tfm.selective_scan %2, %arg12, %arg7, %arg13, %arg13, %arg8, %arg12 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %5 = tfm.selective_scan %3, %arg12, %arg7, %arg13, %arg13, %arg8, %arg12 offset %arg10 state(%arg11) : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32>
// GENERIC-LABEL: sym_name = "mamba"
// GENERIC: "tfm.mamba_mixer"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0>}>
// GENERIC: "tfm.mamba_mixer"({{.*}}, %arg10, %arg11) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>}>
// GENERIC: "tfm.causal_conv1d"(%arg12, %arg2, %arg3) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}>
// GENERIC: "tfm.selective_scan"({{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1>}>
func.func @mamba(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>, %u: tensor<?x?x64xf32>, %bc: tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %1 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout offset %p state(%s) : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x32xf32>
  %2 = tfm.causal_conv1d %u, %cw, %cb : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %3 = tfm.causal_conv1d %u, %cw, %cb offset %p state(%s) : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32>
  %4 = tfm.selective_scan %2, %u, %a, %bc, %bc, %d, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %5 = tfm.selective_scan %3, %u, %a, %bc, %bc, %d, %u offset %p state(%s) : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 64, convWidth = 4, stateSize = 8>) -> tensor<?x?x64xf32>
  return %0, %1, %4, %5 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// A mixer's state declared with tfm.kv_cache beside a key/value cache.
// CHECK-LABEL: tfm.kv_cache @layers.0.mixer.state : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
// CHECK: %0 = tfm.cache @layers.0.mixer.state : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
tfm.kv_cache @layers.0.mixer.state : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
func.func @state_handle() -> !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16> {
  %0 = tfm.cache @layers.0.mixer.state : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
  return %0 : !tfm.mamba_state<maxBatch = 1, channels = 64, convWidth = 4, stateSize = 16>
}
