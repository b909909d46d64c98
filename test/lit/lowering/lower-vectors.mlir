// RUN: tfm-opt %s --tfm-lower-vectors | FileCheck %s

// --tfm-lower-vectors: the 8 x 1 x 32 contraction becomes 8 FMAs of a
// broadcast row element with the panel row; the 2-D accumulator reads and
// writes become one 1-D load or store per row.

// CHECK-LABEL: func.func @tile(
// CHECK-COUNT-8: vector.load %arg2[%{{.*}}, %c0] : memref<8x32xf32>, vector<32xf32>
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: vector.contract
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store {{.*}}, %arg2[%{{.*}}, %c0] : memref<8x32xf32>, vector<32xf32>
func.func @tile(%x: memref<8x16xf32>, %p: memref<16x32xf32>, %c: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %f0 = arith.constant 0.0 : f32
  %acc0 = vector.transfer_read %c[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
  %acc = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %acc0) -> (vector<8x32xf32>) {
    %rows = vector.transfer_read %x[%c0, %k], %f0 {in_bounds = [true, true]} : memref<8x16xf32>, vector<8x1xf32>
    %row = vector.transfer_read %p[%k, %c0], %f0 {in_bounds = [true, true]} : memref<16x32xf32>, vector<1x32xf32>
    %n = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %rows, %row, %a : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
    scf.yield %n : vector<8x32xf32>
  }
  vector.transfer_write %acc, %c[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32>
  return
}
