// RUN: tfm-opt %s -split-input-file | FileCheck %s
// RUN: tfm-opt %s -split-input-file -mlir-print-op-generic | tfm-opt -split-input-file | FileCheck %s
// RUN: tfm-opt %s -split-input-file -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of the tfm_codegen attributes on the tfm ops they configure:
// discardable attributes, so the generic form keeps them out of the ops'
// properties.

// A GEMM tiling (from tfm-select-gemm-tiling), alone and after epilogues;
// register tiles at the ends of their range (16 and 1 rows).
// CHECK-LABEL: func.func @linear_tiling(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 160, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %1 = tfm.linear %arg0, %arg1 activation <relu> residual %0 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 16, cols512 = 32, rows256 = 1, cols256 = 16, rows128 = 16, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: return %1
// GENERIC-LABEL: sym_name = "linear_tiling"
// GENERIC: "tfm.linear"(%arg0, %arg1, %arg2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 160, prefetch512 = none, prefetch256 = none, prefetch128 = none>}
// GENERIC: "tfm.linear"(%arg0, %arg1, %0) <{activation = #tfm.activation<relu>, operandSegmentSizes = array<i32: 1, 1, 0, 1>}> {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 16, cols512 = 32, rows256 = 1, cols256 = 16, rows128 = 16, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>}
func.func @linear_tiling(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %0 = tfm.linear %x, %w, %b {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 160, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = tfm.linear %x, %w activation <relu> residual %0 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 16, cols512 = 32, rows256 = 1, cols256 = 16, rows128 = 16, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %1 : tensor<?x?x64xf32>
}

// -----

// Attention tilings (from tfm-select-attention-tiling): alone, after
// causal, and after params, causal and offset; query rows and key blocks at
// the ends of their ranges.
// CHECK-LABEL: func.func @attention_tiling(
// CHECK-NEXT: %0 = tfm.attention <scaled_dot> %arg0, %arg1, %arg1 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %1 = tfm.attention <dot> %arg0, %arg1, %arg1 causal {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 16, queryRows256 = 1, queryRows128 = 16, keyBlock = 1024>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %2 = tfm.attention <bilinear> %arg0, %arg1, %arg1 params(%arg3) causal offset %arg2 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 16>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
// GENERIC-LABEL: sym_name = "attention_tiling"
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<scaled_dot>}> {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>}
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, score = #tfm.score<dot>}> {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 16, queryRows256 = 1, queryRows128 = 16, keyBlock = 1024>}
// GENERIC: "tfm.attention"(%arg0, %arg1, %arg1, %arg3, %arg2) <{mask = #tfm.mask<causal>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>, score = #tfm.score<bilinear>}> {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 16>}
func.func @attention_tiling(%q: tensor<?x4x?x8xf32>, %kv: tensor<?x4x?x8xf32>, %pos: index, %w: tensor<4x8x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %0 = tfm.attention <scaled_dot> %q, %kv, %kv {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %1 = tfm.attention <dot> %q, %kv, %kv causal {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 16, queryRows256 = 1, queryRows128 = 16, keyBlock = 1024>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %2 = tfm.attention <bilinear> %q, %kv, %kv params(%w) causal offset %pos {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 16>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x8x8xf32>, index) -> tensor<?x4x?x8xf32>
  return %0, %1, %2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// A memory plan (from tfm-plan-memory): the function's frame size, each
// op's slots in it (a result by its number, index 0 elided; a scratch
// buffer by its kind) and a rotary marked in place.
// CHECK-LABEL: func.func @frame_plan(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 1536 : i64}
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %arg0, %arg1, %arg1 {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 256>, #tfm_codegen.slot<result, index = 1, offset = 256, floats = 256>]} : tensor<1x8x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: %0 = tfm.split_heads %result into 4 heads
// CHECK-NEXT: %1 = tfm.rotary <half> %0 {tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 512, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 544, floats = 32>], tfm_codegen.in_place} : tensor<1x4x8x8xf32>
// CHECK-NEXT: %2 = tfm.attention <bilinear> %1, %1, %1 params(%arg2) {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>, tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 576, floats = 256>, #tfm_codegen.slot<bilinear_queries, offset = 832, floats = 256>, #tfm_codegen.slot<keys_transposed, offset = 1088, floats = 256>]}
// GENERIC-LABEL: sym_name = "frame_plan"
// GENERIC: tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 256>, #tfm_codegen.slot<result, index = 1, offset = 256, floats = 256>]
// GENERIC: tfm_codegen.in_place
// GENERIC: tfm_codegen.frame_floats = 1536 : i64
func.func @frame_plan(%x: tensor<1x8x32xf32>, %g: tensor<32xf32>, %w: tensor<4x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {tfm_codegen.frame_floats = 1536 : i64} {
  %sum, %result = tfm.add_layer_norm %x, %x, %g, %g {tfm_codegen.frame = [#tfm_codegen.slot<result, index = 0, offset = 0, floats = 256>, #tfm_codegen.slot<result, index = 1, offset = 256, floats = 256>]} : tensor<1x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %0 = tfm.split_heads %result into 4 heads : tensor<1x8x32xf32> -> tensor<1x4x8x8xf32>
  %1 = tfm.rotary <half> %0 {tfm_codegen.in_place, tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 512, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 544, floats = 32>]} : tensor<1x4x8x8xf32>
  %2 = tfm.attention <bilinear> %1, %1, %1 params(%w) {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>, tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 576, floats = 256>, #tfm_codegen.slot<bilinear_queries, offset = 832, floats = 256>, #tfm_codegen.slot<keys_transposed, offset = 1088, floats = 256>]} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}
