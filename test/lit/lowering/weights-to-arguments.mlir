// RUN: tfm-opt %s -split-input-file --tfm-weights-to-arguments -verify-diagnostics | FileCheck %s

// --tfm-weights-to-arguments: an entry point's weight and cache reads become
// arguments (one per parameter, in order of first read), marked with what
// the glue passes; the declarations go.

// CHECK-LABEL: module {
// CHECK-NOT: tfm.param
// CHECK-NOT: tfm.kv_cache @
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg0: tensor<?x?x8xf32> {tfm.input = "input"}
// CHECK-SAME: %arg1: tensor<16x8xf32> {tfm.param = "w"}
// CHECK-SAME: %arg2: tensor<16xf32> {tfm.param = "b"}
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2
// CHECK-NEXT: %1 = tfm.linear %arg0, %arg1
// CHECK-NEXT: %2 = tfm.add %0, %1
// CHECK-NOT: tfm.weight
tfm.param @w : tensor<16x8xf32>
tfm.param @b : tensor<16xf32>
func.func @forward(%x: tensor<?x?x8xf32> {tfm.input = "input"}) -> tensor<?x?x16xf32> {
  %w = tfm.weight @w : tensor<16x8xf32>
  %b = tfm.weight @b : tensor<16xf32>
  %y = tfm.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %w2 = tfm.weight @w : tensor<16x8xf32>
  %z = tfm.linear %x, %w2 : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %s = tfm.add %y, %z : tensor<?x?x16xf32>
  return %s : tensor<?x?x16xf32>
}

// -----

// A cache handle becomes an argument marked with the cache's name.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %arg1: index {tfm.input = "position"}
// CHECK-SAME: %arg2: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 8, headDim = 4> {tfm.cache = "c"}
// CHECK-NEXT: call @layer(%arg0, %arg1, %arg2)
tfm.kv_cache @c : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 8, headDim = 4>
func.func private @layer(%x: tensor<?x?x8xf32>, %p: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 8, headDim = 4>) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}
func.func @decode(%x: tensor<?x?x8xf32>, %p: index {tfm.input = "position"}) -> tensor<?x?x8xf32> {
  %c = tfm.cache @c : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 8, headDim = 4>
  %y = call @layer(%x, %p, %c) : (tensor<?x?x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 8, headDim = 4>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Only entry points read weights: a private function must take them.
tfm.param @w : tensor<16x8xf32>
func.func private @inner(%x: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{a weight or cache read in a private function: only entry points read them; others take them as arguments}}
  %w = tfm.weight @w : tensor<16x8xf32>
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
