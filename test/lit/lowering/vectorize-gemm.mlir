// RUN: tfm-opt %s --tfm-vectorize-gemm | FileCheck %s

// --tfm-vectorize-gemm: a tfm.gemm contraction (x as [blocks, 8, K] times
// panels [P, K, 32]) becomes one parallel loop over panels and row blocks,
// panels outermost so that consecutive iterations share a panel (each
// iteration writes its own tile of the result) around an 8 x 32
// register tile: the k loop carries the accumulator as a vector and
// multiplies a column of 8 row elements by a panel row of 32 columns.

// CHECK-LABEL: func.func @gemm(
// CHECK: %[[DIM:.*]] = tensor.dim %arg0, %c0
// CHECK: scf.forall (%[[PANEL:.*]], %[[BLOCK:.*]]) in (2, %[[DIM]]) shared_outs(%{{.*}} = %arg2)
// CHECK-DAG: tensor.extract_slice %arg0[%[[BLOCK]], 0, 0] [1, 8, 16]
// CHECK-DAG: tensor.extract_slice %arg1[%[[PANEL]], 0, 0] [1, 16, 32]
// CHECK: %[[ACC0:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(%{{.*}} = %{{.*}}, %[[ACC:.*]] = %[[ACC0]]) -> (tensor<8x32xf32>, vector<8x32xf32>)
// CHECK: %[[ROWS:.*]] = vector.transfer_read {{.*}} : tensor<8x16xf32>, vector<8x1xf32>
// CHECK: %[[PANELROW:.*]] = vector.transfer_read {{.*}} : tensor<16x32xf32>, vector<1x32xf32>
// CHECK: vector.contract {{.*}} %[[ROWS]], %[[PANELROW]], %[[ACC]] : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[BLOCK]], 0, %[[PANEL]], 0] [1, 8, 1, 32]
// CHECK-NOT: linalg.generic {{.*}}tfm.gemm
func.func @gemm(%x: tensor<?x8x16xf32>, %p: tensor<2x16x32xf32>, %init: tensor<?x8x2x32xf32>) -> tensor<?x8x2x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, r, p, j, k) -> (b, r, k)>, affine_map<(b, r, p, j, k) -> (p, k, j)>, affine_map<(b, r, p, j, k) -> (b, r, p, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %p : tensor<?x8x16xf32>, tensor<2x16x32xf32>) outs(%init : tensor<?x8x2x32xf32>) attrs = {tfm.gemm} {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %m = arith.mulf %a, %w : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x8x2x32xf32>
  return %r : tensor<?x8x2x32xf32>
}

// A contraction without the mark (dynamic, not a GEMM on panels) is left
// for convert-linalg-to-loops.
// CHECK-LABEL: func.func @unmarked(
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @unmarked(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
