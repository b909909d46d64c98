// RUN: tfm-opt %s -split-input-file --tfm-fuse-residual-norm | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-fuse-residual-norm=remarks=true -verify-diagnostics -o /dev/null
// RUN: tfm-opt %s -split-input-file --tfm-optimize | FileCheck %s --check-prefix=PIPELINE

// --tfm-fuse-residual-norm: tfm.add + tfm.layer_norm of its sum become one
// tfm.add_layer_norm; every case it must leave alone says why in a remark.

// Post-norm: the sum is read by the norm only. The norm's eps carries over.
// CHECK-LABEL: func.func @post_norm(
// PIPELINE-LABEL: func.func @post_norm(
// PIPELINE-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %arg1, %arg2, %arg3
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %arg1, %arg2, %arg3 {eps = 9.99999997E-7 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: return %result
func.func @post_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s = tfm.add %x, %f : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @post_norm: fused the residual add and this layer norm}}
  %y = tfm.layer_norm %s, %g, %b {eps = 1.0e-06 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Pre-norm: the next residual add reads the sum too; it stays a result.
// The first norm reads the layer's input, which no add here made.
// CHECK-LABEL: func.func @pre_norm(
// CHECK-NEXT: %0 = tfm.layer_norm %arg0, %arg2, %arg3
// CHECK-NEXT: %1 = tfm.ffn <relu> %0,
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %1, %arg2, %arg3 :
// CHECK-NEXT: %2 = tfm.ffn <relu> %result,
// CHECK-NEXT: %3 = tfm.add %sum, %2
// CHECK-NEXT: return %3
func.func @pre_norm(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @pre_norm: layer norm not fused: its input is an argument of the function: the add that made it, if any, is in a caller}}
  %n1 = tfm.layer_norm %x, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %f1 = tfm.ffn <relu> %n1, %w1, %b1, %w2, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %s1 = tfm.add %x, %f1 : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @pre_norm: fused the residual add and this layer norm (1 more op(s) read the sum)}}
  %n2 = tfm.layer_norm %s1, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %f2 = tfm.ffn <relu> %n2, %w1, %b1, %w2, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @pre_norm: residual add not fused with a layer norm: no tfm.layer_norm reads its sum}}
  %s2 = tfm.add %s1, %f2 : tensor<?x?x32xf32>
  return %s2 : tensor<?x?x32xf32>
}

// -----

// Another reader of the sum before the norm: the fused op goes where the
// add was (the norm weights are arguments, defined there already).
// CHECK-LABEL: func.func @reader_before_norm(
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm %arg0, %arg1, %arg2, %arg3 :
// CHECK-NEXT: %0 = tfm.add %sum, %arg0
// CHECK-NEXT: return %result, %0
func.func @reader_before_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %s = tfm.add %x, %f : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @reader_before_norm: residual add not fused with a layer norm: no tfm.layer_norm reads its sum}}
  %t = tfm.add %s, %x : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @reader_before_norm: fused the residual add and this layer norm (1 more op(s) read the sum)}}
  %y = tfm.layer_norm %s, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y, %t : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Must not touch: the norm's weights are read after another reader of the
// sum, so neither the add's position nor the norm's can hold the fused op.
tfm.param @g : tensor<32xf32>
tfm.param @b : tensor<32xf32>
// CHECK-LABEL: func.func @weights_after_reader(
// CHECK-NEXT: %0 = tfm.add %arg0, %arg1
// CHECK-NEXT: %1 = tfm.add %0, %arg0
// CHECK-NEXT: %2 = tfm.weight @g
// CHECK-NEXT: %3 = tfm.weight @b
// CHECK-NEXT: %4 = tfm.layer_norm %0, %2, %3
// CHECK-NOT: add_layer_norm
func.func @weights_after_reader(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %s = tfm.add %x, %f : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @weights_after_reader: residual add not fused with a layer norm: no tfm.layer_norm reads its sum}}
  %t = tfm.add %s, %x : tensor<?x?x32xf32>
  %g = tfm.weight @g : tensor<32xf32>
  %b = tfm.weight @b : tensor<32xf32>
  // expected-remark @+1 {{in @weights_after_reader: layer norm not fused: its gamma/beta are defined after another reader of the sum, so no one position can serve both}}
  %y = tfm.layer_norm %s, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y, %t : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Must not touch: a norm over something else than a sum (a final norm after
// a call), and an add whose sum no norm reads.
// CHECK-LABEL: func.func @no_sum(
// CHECK-NEXT: %0 = tfm.ffn
// CHECK-NEXT: %1 = tfm.layer_norm %0, %arg2, %arg3
// CHECK-NEXT: %2 = tfm.add %1, %arg0
// CHECK-NEXT: return %2
func.func @no_sum(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  %f = tfm.ffn <relu> %x, %w1, %b1, %w2, %b : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @no_sum: layer norm not fused: its input comes from 'tfm.ffn', not from a tfm.add}}
  %n = tfm.layer_norm %f, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  // expected-remark @+1 {{in @no_sum: residual add not fused with a layer norm: no tfm.layer_norm reads its sum}}
  %s = tfm.add %n, %x : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// An RMS norm (no beta) fuses the same way and stays an RMS norm.
// CHECK-LABEL: func.func @rms(
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm rms %arg0, %arg1, %arg2 {eps = 9.99999997E-7 : f32} : tensor<?x?x32xf32>, tensor<32xf32>
// CHECK-NEXT: return %sum, %result
// PIPELINE-LABEL: func.func @rms(
// PIPELINE-NEXT: tfm.add_layer_norm rms
func.func @rms(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %s = tfm.add %x, %f : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @rms: fused the residual add and this layer norm}}
  %n = tfm.layer_norm rms %s, %g {eps = 1.0e-06 : f32} : tensor<?x?x32xf32>, tensor<32xf32>
  return %s, %n : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Module-level ops are a graph region: the norm before the add it reads
// (the rewrite would erase the op the walk is about to visit). Not fused.
// CHECK: tfm.layer_norm
// CHECK-NEXT: tfm.add
%a = arith.constant dense<1.0> : tensor<4x8xf32>
%g = arith.constant dense<1.0> : tensor<8xf32>
// expected-remark @+1 {{layer norm not fused: it is in a graph region, where its input may be defined after it}}
%n = tfm.layer_norm %s, %g, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
%s = tfm.add %a, %a : tensor<4x8xf32>
