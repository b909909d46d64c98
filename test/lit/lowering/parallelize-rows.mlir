// RUN: tfm-opt %s -split-input-file --tfm-parallelize-rows --canonicalize --cse | FileCheck %s

// --tfm-parallelize-rows: a row-wise linalg op on tensors outside any loop
// becomes one scf.forall over (batch, blocks of about 8 rows), normalized
// (from 0 by 1: tfm-outline-parallel-loops takes it), each iteration the
// op on its slice. GEMMs, ops already in a loop, ops on buffers and ops
// without two leading parallel loops are left alone.

// A bias add over [batch, seq, 768]: batch x ceil(seq / 8) tasks; task
// (i, j) takes rows [j * r, (j + 1) * r) of batch entry i, r = ceil(seq /
// tasks) (8 for seq 128), the last fewer.
// CHECK-DAG: #[[TASKS:.*]] = affine_map<()[s0] -> (s0 ceildiv 8)>
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0)[s0, s1] -> (d0 * (s0 ceildiv (s1 ceildiv 8)))>
// CHECK-LABEL: func.func @bias_add(
// CHECK-DAG: %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[N:.*]] = affine.apply #[[TASKS]]()[%[[S]]]
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]], %[[J:.*]]) in (%[[B]], %[[N]]) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<?x?x768xf32>) {
// CHECK: %[[ROW:.*]] = affine.apply #[[FIRST]](%[[J]])[%[[S]], %[[S]]]
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[%{{.*}}, %[[ROW]], 0] [%{{.*}}, %{{.*}}, 768] [1, 1, 1]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]], %arg1 : tensor<?x?x768xf32>, tensor<768xf32>)
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %[[Y]] into %[[OUT]][%{{.*}}, %[[ROW]], 0] [%{{.*}}, %{{.*}}, 768] [1, 1, 1]
// CHECK: return %[[R]]
func.func @bias_add(%x: tensor<?x?x768xf32>, %b: tensor<768xf32>) -> tensor<?x?x768xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x768xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x768xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x768xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : tensor<?x?x768xf32>, tensor<768xf32>) outs(%e : tensor<?x?x768xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x?x768xf32>
  return %r : tensor<?x?x768xf32>
}

// -----

// A layer norm's row sums (a reduction over the last loop) and a fill, on
// static shapes: 2 x ceil(128 / 8) = 2 x 16 tasks of 8 rows each.
// CHECK-LABEL: func.func @row_sums(
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) in (2, 16)
// CHECK: linalg.fill {{.*}} -> tensor<1x8xf32>
// CHECK: scf.forall (%[[I2:.*]], %[[J2:.*]]) in (2, 16)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<1x8x768xf32>) outs(%{{.*}} : tensor<1x8xf32>)
func.func @row_sums(%x: tensor<2x128x768xf32>) -> tensor<2x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x128xf32>) -> tensor<2x128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x128x768xf32>) outs(%f : tensor<2x128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<2x128xf32>
  return %r : tensor<2x128xf32>
}

// -----

// Must not touch: a GEMM (tfm-vectorize-gemm's), an op inside a loop (the
// attention's block bodies run in parallel already), an op whose second
// loop is a reduction, a rank-1 op, and an op on buffers.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}}{tfm.gemm}
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: linalg.generic {{.*}} ins(%arg4 : memref<4x8xf32>) outs(%arg3 : memref<4x8xf32>)
// CHECK-NOT: scf.forall
// CHECK: return
func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8xf32>, %m: memref<4x8xf32>, %n: memref<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %gemm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) attrs = {tfm.gemm} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %looped = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (tensor<4x8xf32>) {
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    scf.yield %g : tensor<4x8xf32>
  }
  %e4 = tensor.empty() : tensor<4xf32>
  %sums = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%n : memref<4x8xf32>) outs(%m : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  }
  return %gemm, %looped, %sums, %neg : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
}
