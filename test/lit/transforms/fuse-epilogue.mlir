// RUN: tfm-opt %s -split-input-file --tfm-fuse-epilogue | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-fuse-epilogue=remarks=true -verify-diagnostics -o /dev/null

// --tfm-fuse-epilogue: an FFN's activation goes into its first GEMM's
// store, a residual add into the store of the GEMM that makes one of its
// operands; every add it must leave alone says why in a remark.

// A pre-norm FFN sublayer: the activation into linear1, the residual
// connection into linear2.
// CHECK-LABEL: func.func @ffn_residual(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[W1:[a-z0-9]+]]: tensor<64x32xf32>, %[[B1:[a-z0-9]+]]: tensor<64xf32>, %[[W2:[a-z0-9]+]]: tensor<32x64xf32>, %[[B2:[a-z0-9]+]]: tensor<32xf32>, %[[N:[a-z0-9]+]]: tensor<?x?x32xf32>)
// CHECK-NEXT: %[[H:.+]] = tfm.linear %[[N]], %[[W1]], %[[B1]] activation <gelu_tanh> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[H]], %[[W2]], %[[B2]] residual %[[X]] : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @ffn_residual(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>, %n: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @ffn_residual: fused gelu_tanh into the first GEMM's store: the hidden layer is written once, activated}}
  %f = tfm.ffn <gelu_tanh> %n, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @ffn_residual: fused the residual add into the GEMM's store}}
  %y = tfm.add %x, %f : tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The linear on the left, no bias, the residual defined after the linear:
// the fused linear goes where the add was.
// CHECK-LABEL: func.func @linear_on_the_left(
// CHECK-NEXT: %[[R:.+]] = tfm.add %arg2, %arg2
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %arg0, %arg1 residual %[[R]] : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @linear_on_the_left(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %l = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{in @linear_on_the_left: residual add not fused into a GEMM: neither operand comes from a tfm.linear}}
  %r2 = tfm.add %r, %r : tensor<4x8xf32>
  // expected-remark @+1 {{in @linear_on_the_left: fused the residual add into the GEMM's store}}
  %y = tfm.add %l, %r2 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not fused: the linear's result is read by another op too (it must stay
// without the residual), and a linear that already adds one.
// CHECK-LABEL: func.func @not_fused(
// CHECK-NEXT: %[[L:.+]] = tfm.linear %arg0, %arg1 :
// CHECK-NEXT: %[[S:.+]] = tfm.add %arg2, %[[L]]
// CHECK-NEXT: %[[R:.+]] = tfm.linear %arg0, %arg1 residual %arg2 :
// CHECK-NEXT: %[[T:.+]] = tfm.add %[[R]], %arg2
// CHECK-NEXT: return %[[S]], %[[L]], %[[T]]
func.func @not_fused(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %l = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{in @not_fused: residual add not fused into a GEMM: other ops read its tfm.linear's result, which must stay without the residual}}
  %s = tfm.add %r, %l : tensor<4x8xf32>
  %l2 = tfm.linear %x, %w residual %r : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{in @not_fused: residual add not fused into a GEMM: its tfm.linear already adds a residual}}
  %t = tfm.add %l2, %r : tensor<4x8xf32>
  return %s, %l, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Not fused: x + x of one linear; a linear outside the loop whose add is
// inside it (fused, the GEMM would run on every iteration).
// CHECK-LABEL: func.func @not_fused_either(
// CHECK-NEXT: %[[L:.+]] = tfm.linear %arg0, %arg1 :
// CHECK-NEXT: %[[D:.+]] = tfm.add %[[L]], %[[L]]
// CHECK-NEXT: %[[M:.+]] = tfm.linear %arg0, %arg1 :
// CHECK: scf.for
// CHECK-NEXT: tfm.add %[[M]], %arg4
func.func @not_fused_either(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %n: index) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %l = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{in @not_fused_either: residual add not fused into a GEMM: it adds its tfm.linear's result to itself}}
  %d = tfm.add %l, %l : tensor<4x8xf32>
  %m = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<4x8xf32>) {
    // expected-remark @+1 {{in @not_fused_either: residual add not fused into a GEMM: its tfm.linear is in another block (moving the GEMM into this one could run it more often)}}
    %s = tfm.add %m, %acc : tensor<4x8xf32>
    scf.yield %s : tensor<4x8xf32>
  }
  return %d, %r : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Module-level ops are a graph region: an operand may be defined after its
// user (the walk would then erase the op it is about to visit). Not fused.
// CHECK: %[[Y:.+]] = tfm.add %[[L:.+]], %{{.+}} : tensor<4x8xf32>
// CHECK-NEXT: %[[L]] = tfm.linear
%x = arith.constant dense<1.0> : tensor<4x8xf32>
%w = arith.constant dense<0.5> : tensor<8x8xf32>
// expected-remark @+1 {{residual add not fused into a GEMM: it is in a graph region, where its operands may be defined after it}}
%y = tfm.add %l, %x : tensor<4x8xf32>
%l = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>

// -----

// A gated FFN without biases: one GEMM over the stacked gate and up rows
// (no activation in its store: the GLU applies it to the gate half), the
// GLU, then the second GEMM.
// CHECK-LABEL: func.func @gated_ffn(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[W1:[a-z0-9]+]]: tensor<128x32xf32>, %[[W2:[a-z0-9]+]]: tensor<32x64xf32>)
// CHECK-NEXT: %[[H:.+]] = tfm.linear %[[X]], %[[W1]] : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
// CHECK-NEXT: %[[G:.+]] = tfm.glu <silu> %[[H]] : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[G]], %[[W2]] : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gated_ffn(%x: tensor<?x?x32xf32>, %w1: tensor<128x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @gated_ffn: gated FFN: the gate and up projections as one GEMM over the stacked linear1 weight, then silu(gate) * up in one pass (tfm.glu)}}
  %0 = tfm.ffn <silu> gated %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A plain FFN without biases keeps its activation in the first store.
// CHECK-LABEL: func.func @silu_no_bias(
// CHECK-NEXT: %[[H:.+]] = tfm.linear %arg0, %arg1 activation <silu> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: tfm.linear %[[H]], %arg2 : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
func.func @silu_no_bias(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @silu_no_bias: fused silu into the first GEMM's store: the hidden layer is written once, activated}}
  %0 = tfm.ffn <silu> %x, %w1, %w2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}
