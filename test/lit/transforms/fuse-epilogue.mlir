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

// -----

// A mixture of 3 experts, top 2, with biases: the router GEMM, the pairs
// grouped by expert, the tokens' rows gathered in that order; each
// expert's linear1 over its group's rows with the activation in the store
// ([..., 2, 64]: a row per (token, slot) pair), then linear2 scattering
// the rows back to their tokens with the routing weights ([..., 32]).
// CHECK-LABEL: func.func @moe(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[G:[a-z0-9]+]]: tensor<3x32xf32>, %[[W1A:[a-z0-9]+]]: tensor<64x32xf32>, %[[W1B:[a-z0-9]+]]: tensor<64x32xf32>, %[[W1C:[a-z0-9]+]]: tensor<64x32xf32>, %[[B1A:[a-z0-9]+]]: tensor<64xf32>, %[[B1B:[a-z0-9]+]]: tensor<64xf32>, %[[B1C:[a-z0-9]+]]: tensor<64xf32>, %[[W2A:[a-z0-9]+]]: tensor<32x64xf32>, %[[W2B:[a-z0-9]+]]: tensor<32x64xf32>, %[[W2C:[a-z0-9]+]]: tensor<32x64xf32>, %[[B2A:[a-z0-9]+]]: tensor<32xf32>, %[[B2B:[a-z0-9]+]]: tensor<32xf32>, %[[B2C:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NEXT: %[[L:.+]] = tfm.linear %[[X]], %[[G]] : (tensor<?x?x32xf32>, tensor<3x32xf32>) -> tensor<?x?x3xf32>
// CHECK-NEXT: %[[T:.+]], %[[RW:.+]], %[[S:.+]] = tfm.route_experts %[[L]] top 2 : tensor<?x?x3xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<4xi32>
// CHECK-NEXT: %[[R:.+]] = tfm.gather_rows %[[X]], %[[T]] : (tensor<?x?x32xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x32xf32>
// CHECK-NEXT: %[[H:.+]] = tfm.grouped_linear %[[R]] groups %[[S]] weights(%[[W1A]], %[[W1B]], %[[W1C]]) bias(%[[B1A]], %[[B1B]], %[[B1C]]) activation <gelu> : (tensor<?x?x2x32xf32>, tensor<4xi32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x2x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.grouped_linear %[[H]] groups %[[S]] weights(%[[W2A]], %[[W2B]], %[[W2C]]) bias(%[[B2A]], %[[B2B]], %[[B2C]]) scatter %[[T]], %[[RW]] : (tensor<?x?x2x64xf32>, tensor<4xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @moe(%x: tensor<?x?x32xf32>, %g: tensor<3x32xf32>, %w1a: tensor<64x32xf32>, %w1b: tensor<64x32xf32>, %w1c: tensor<64x32xf32>, %b1a: tensor<64xf32>, %b1b: tensor<64xf32>, %b1c: tensor<64xf32>, %w2a: tensor<32x64xf32>, %w2b: tensor<32x64xf32>, %w2c: tensor<32x64xf32>, %b2a: tensor<32xf32>, %b2b: tensor<32xf32>, %b2c: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @moe: mixture of 3 experts: the router as one GEMM, top-2 routing grouping the (token, slot) pairs by expert (tfm.route_experts), then each expert's linears as GEMMs over its group's rows only (the activation in the first one's store, the routing weight and the scatter back to the tokens in the second one's)}}
  %0 = tfm.moe <gelu> %x, %g top 2 linear1(%w1a, %w1b, %w1c) bias(%b1a, %b1b, %b1c) linear2(%w2a, %w2b, %w2c) bias(%b2a, %b2b, %b2c) : (tensor<?x?x32xf32>, tensor<3x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A gated mixture without biases, top 1 of 2, static rows: linear1 makes
// each pair's stacked gate and up rows (128, no activation in its store),
// the GLU halves them, linear2 scatters.
// CHECK-LABEL: func.func @moe_gated(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x32xf32>, %[[G:[a-z0-9]+]]: tensor<2x32xf32>, %[[W1A:[a-z0-9]+]]: tensor<128x32xf32>, %[[W1B:[a-z0-9]+]]: tensor<128x32xf32>, %[[W2A:[a-z0-9]+]]: tensor<32x64xf32>, %[[W2B:[a-z0-9]+]]: tensor<32x64xf32>)
// CHECK-NEXT: %[[L:.+]] = tfm.linear %[[X]], %[[G]] : (tensor<2x5x32xf32>, tensor<2x32xf32>) -> tensor<2x5x2xf32>
// CHECK-NEXT: %[[T:.+]], %[[RW:.+]], %[[S:.+]] = tfm.route_experts %[[L]] top 1 : tensor<2x5x2xf32> -> tensor<2x5x1xi32>, tensor<2x5x1xf32>, tensor<3xi32>
// CHECK-NEXT: %[[R:.+]] = tfm.gather_rows %[[X]], %[[T]] : (tensor<2x5x32xf32>, tensor<2x5x1xi32>) -> tensor<2x5x1x32xf32>
// CHECK-NEXT: %[[H:.+]] = tfm.grouped_linear %[[R]] groups %[[S]] weights(%[[W1A]], %[[W1B]]) : (tensor<2x5x1x32xf32>, tensor<3xi32>, tensor<128x32xf32>, tensor<128x32xf32>) -> tensor<2x5x1x128xf32>
// CHECK-NEXT: %[[U:.+]] = tfm.glu <silu> %[[H]] : tensor<2x5x1x128xf32> -> tensor<2x5x1x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.grouped_linear %[[U]] groups %[[S]] weights(%[[W2A]], %[[W2B]]) scatter %[[T]], %[[RW]] : (tensor<2x5x1x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<2x5x1xi32>, tensor<2x5x1xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @moe_gated(%x: tensor<2x5x32xf32>, %g: tensor<2x32xf32>, %w1a: tensor<128x32xf32>, %w1b: tensor<128x32xf32>, %w2a: tensor<32x64xf32>, %w2b: tensor<32x64xf32>) -> tensor<2x5x32xf32> {
  // expected-remark @+1 {{in @moe_gated: mixture of 2 experts: the router as one GEMM, top-1 routing grouping the (token, slot) pairs by expert (tfm.route_experts), then each expert's linears as GEMMs over its group's rows only (the gated hidden layer in one pass (tfm.glu), the routing weight and the scatter back to the tokens in the second one's)}}
  %0 = tfm.moe <silu> gated %x, %g top 1 linear1(%w1a, %w1b) linear2(%w2a, %w2b) : (tensor<2x5x32xf32>, tensor<2x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<2x5x32xf32>
  return %0 : tensor<2x5x32xf32>
}

// -----

// A pre-norm mixture-of-experts sublayer: the residual connection goes into
// the store of the grouped_linear that scatters the rows back to the tokens
// (the residual %x, not the normed input the experts read).
// CHECK-LABEL: func.func @moe_residual(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[N:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[G:[a-z0-9]+]]: tensor<2x32xf32>, %[[W1A:[a-z0-9]+]]: tensor<64x32xf32>, %[[W1B:[a-z0-9]+]]: tensor<64x32xf32>, %[[W2A:[a-z0-9]+]]: tensor<32x64xf32>, %[[W2B:[a-z0-9]+]]: tensor<32x64xf32>)
// CHECK-NEXT: %[[L:.+]] = tfm.linear %[[N]], %[[G]] :
// CHECK-NEXT: %[[T:.+]], %[[RW:.+]], %[[S:.+]] = tfm.route_experts %[[L]] top 2 :
// CHECK-NEXT: %[[R:.+]] = tfm.gather_rows %[[N]], %[[T]] :
// CHECK-NEXT: %[[H:.+]] = tfm.grouped_linear %[[R]] groups %[[S]] weights(%[[W1A]], %[[W1B]]) activation <silu> : (tensor<?x?x2x32xf32>, tensor<3xi32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x?x2x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.grouped_linear %[[H]] groups %[[S]] weights(%[[W2A]], %[[W2B]]) scatter %[[T]], %[[RW]] residual %[[X]] : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @moe_residual(%x: tensor<?x?x32xf32>, %n: tensor<?x?x32xf32>, %g: tensor<2x32xf32>, %w1a: tensor<64x32xf32>, %w1b: tensor<64x32xf32>, %w2a: tensor<32x64xf32>, %w2b: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @moe_residual: mixture of 2 experts: the router as one GEMM, top-2 routing grouping the (token, slot) pairs by expert (tfm.route_experts), then each expert's linears as GEMMs over its group's rows only (the activation in the first one's store, the routing weight and the scatter back to the tokens in the second one's)}}
  %0 = tfm.moe <silu> %n, %g top 2 linear1(%w1a, %w1b) linear2(%w2a, %w2b) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @moe_residual: fused the residual add into the GEMM's store}}
  %y = tfm.add %x, %0 : tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Not fused: a grouped_linear that keeps its rows per (token, slot) pair
// (its rows are not the tokens'), one that already adds a residual, and a
// mixture whose result is read by another op too.
// CHECK-LABEL: func.func @grouped_not_fused(
// CHECK-NEXT: %[[P:.+]] = tfm.grouped_linear %arg0 groups %arg1 weights(%arg3, %arg3) :
// CHECK-NEXT: %[[A:.+]] = tfm.add %arg7, %[[P]]
// CHECK-NEXT: %[[Y:.+]] = tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg2) scatter %arg4, %arg5 residual %arg6 :
// CHECK-NEXT: %[[B:.+]] = tfm.add %[[Y]], %arg6
// CHECK: %[[M:.+]] = tfm.grouped_linear %{{.+}} scatter %{{[^ ]+}}, %{{[^ ]+}} : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[C:.+]] = tfm.add %arg6, %[[M]]
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[M]]
func.func @grouped_not_fused(%h: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %v: tensor<32x64xf32>, %w: tensor<64x64xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x?x2xf32>, %r: tensor<?x?x32xf32>, %q: tensor<?x?x2x64xf32>, %g: tensor<2x32xf32>, %w1: tensor<64x32xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %p = tfm.grouped_linear %h groups %s weights(%w, %w) : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x?x2x64xf32>
  // expected-remark @+1 {{in @grouped_not_fused: residual add not fused into a GEMM: neither operand comes from a tfm.linear}}
  %a = tfm.add %q, %p : tensor<?x?x2x64xf32>
  %y = tfm.grouped_linear %h groups %s weights(%v, %v) scatter %t, %rw residual %r : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @grouped_not_fused: residual add not fused into a GEMM: its tfm.grouped_linear already adds a residual}}
  %b = tfm.add %y, %r : tensor<?x?x32xf32>
  // expected-remark @+1 {{in @grouped_not_fused: mixture of 2 experts}}
  %m = tfm.moe <relu> %r, %g top 2 linear1(%w1, %w1) linear2(%v, %v) : (tensor<?x?x32xf32>, tensor<2x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @grouped_not_fused: residual add not fused into a GEMM: other ops read its tfm.grouped_linear's result, which must stay without the residual}}
  %c = tfm.add %r, %m : tensor<?x?x32xf32>
  return %a, %b, %c, %m : tensor<?x?x2x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
