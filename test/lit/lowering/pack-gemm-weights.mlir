// RUN: tfm-opt %s -split-input-file --tfm-pack-gemm-weights -verify-diagnostics | FileCheck %s

// --tfm-pack-gemm-weights: each GEMM weight argument gets a sibling in the
// packed panel layout [ceil(rows/32) per segment, K, 32], through the call
// graph: callers pass theirs.

// Self-attention's in_proj is one GEMM over its 24 rows: one segment, one
// panel (the tfm.linear that tfm-decompose-attention makes of it).
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %arg5: tensor<1x8x32xf32> {tfm.packs = 1 : i64, tfm.segments = 1 : i64}
// CHECK-SAME: %arg6: tensor<1x8x32xf32> {tfm.packs = 3 : i64, tfm.segments = 1 : i64}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg6: tensor<1x8x32xf32> {tfm.packs = 1 : i64, tfm.segments = 1 : i64}
// CHECK-SAME: %arg7: tensor<1x8x32xf32> {tfm.packs = 3 : i64, tfm.segments = 1 : i64}
// The LM head: a 40 x 8 weight is 2 panels, the second one half padding.
// CHECK-SAME: %arg8: tensor<2x8x32xf32> {tfm.packs = 4 : i64, tfm.segments = 1 : i64}
// CHECK-NEXT: call @layer(%arg0, %arg1, %arg2, %arg3, %arg5, %arg6, %arg7)
func.func private @layer(%x: tensor<?x?x8xf32>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
  %h = tfm.split_heads %qkv part 0 of 3 into 2 heads : tensor<?x?x24xf32> -> tensor<?x2x?x4xf32>
  %o = tfm.attention <scaled_dot> %h, %h, %h : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %o : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  %y = tfm.linear %m, %wo, %bo : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
func.func @forward(%x: tensor<?x?x8xf32>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>, %wo: tensor<8x8xf32>, %head: tensor<40x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x40xf32> {
  %y = call @layer(%x, %wi, %bi, %wo, %bo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %z = tfm.linear %y, %head : (tensor<?x?x8xf32>, tensor<40x8xf32>) -> tensor<?x?x40xf32>
  return %z : tensor<?x?x40xf32>
}

// -----

// Cross-attention projects Q and K/V apart, rows [0, 8) and [8, 24) of one
// stacked weight: three segments of 8 rows, a panel each, one packed copy
// for both slices.
// CHECK-LABEL: func.func @cross(
// CHECK-SAME: %arg4: tensor<8x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<3x8x32xf32> {tfm.packs = 2 : i64, tfm.segments = 3 : i64}
// CHECK-SAME: %arg7: tensor<1x8x32xf32> {tfm.packs = 4 : i64, tfm.segments = 1 : i64})
func.func @cross(%x: tensor<?x?x8xf32>, %m: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %wq = tfm.slice_rows %w from 0 : tensor<24x8xf32> -> tensor<8x8xf32>
  %wkv = tfm.slice_rows %w from 8 : tensor<24x8xf32> -> tensor<16x8xf32>
  %q = tfm.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %kv = tfm.linear %m, %wkv : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %y = tfm.linear %q, %wo, %bo : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// One weight, two packings: an error, not a silent second layout.
// expected-error @+1 {{argument 1 is used as two differently packed GEMM weights}}
func.func @forward(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x24xf32> {
  %wq = tfm.slice_rows %w from 0 : tensor<24x8xf32> -> tensor<8x8xf32>
  %y = tfm.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %z = tfm.linear %y, %w : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
  return %z : tensor<?x?x24xf32>
}

// -----

// A grouped GEMM's experts: each weight a GEMM weight of its own, one
// segment each.
// CHECK-LABEL: func.func @experts(
// CHECK-SAME: %arg4: tensor<1x8x32xf32> {tfm.packs = 2 : i64, tfm.segments = 1 : i64}
// CHECK-SAME: %arg5: tensor<1x8x32xf32> {tfm.packs = 3 : i64, tfm.segments = 1 : i64}
func.func @experts(%x: tensor<?x?x2x8xf32>, %s: tensor<3xi32>, %w0: tensor<16x8xf32>, %w1: tensor<16x8xf32>) -> tensor<?x?x2x16xf32> {
  %h = tfm.grouped_linear %x groups %s weights(%w0, %w1) : (tensor<?x?x2x8xf32>, tensor<3xi32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x2x16xf32>
  return %h : tensor<?x?x2x16xf32>
}
