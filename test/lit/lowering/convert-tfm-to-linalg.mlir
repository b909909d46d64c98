// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg | FileCheck %s

// --convert-tfm-to-linalg: tfm ops become linalg on tensors; no tfm op that
// computes is left.

// nn.Linear on an unpacked weight: a contraction over k (x[.., k] w[n, k]),
// then the bias over the last dimension.
// CHECK-LABEL: func.func @linear(
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<?x?x8xf32>, tensor<16x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins({{.*}}, %arg2 : tensor<?x?x16xf32>, tensor<16xf32>)
// CHECK-NOT: tfm.
func.func @linear(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = tfm.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// With a packed sibling (tfm-pack-gemm-weights): the rows are padded to a
// multiple of 8 and split into blocks, the contraction reads the panels
// [P, K, 32] over (batch, block, row, panel, column, k), marked tfm.gemm;
// the epilogue takes the real rows and columns into a fresh tensor.
// CHECK-LABEL: func.func @linear_packed(
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 0] high[0, %{{.*}}, 0]
// CHECK: %[[BLOCKS:.*]] = tensor.expand_shape %[[PAD]] {{\[\[}}0], [1, 2], [3]] output_shape [%{{.*}}, %{{.*}}, 8, 8] : tensor<?x?x8xf32> into tensor<?x?x8x8xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[BLOCKS]], %arg2 : tensor<?x?x8x8xf32>, tensor<2x8x32xf32>) outs({{.*}} : tensor<?x?x8x2x32xf32>) attrs = {tfm.gemm}
// CHECK: tensor.collapse_shape {{.*}} {{\[\[}}0], [1, 2], [3, 4]] : tensor<?x?x8x2x32xf32> into tensor<?x?x64xf32>
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0] [{{.*}}, {{.*}}, 40] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x?x40xf32>
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]]
func.func @linear_packed(%x: tensor<?x?x8xf32>, %w: tensor<40x8xf32>, %p: tensor<2x8x32xf32> {tfm.packs = 1 : i64, tfm.segments = 1 : i64}) -> tensor<?x?x40xf32> {
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<40x8xf32>) -> tensor<?x?x40xf32>
  return %y : tensor<?x?x40xf32>
}

// -----

// Layer norm: row sums, the mean, the centred rows, the sums of squares,
// 1/sqrt(var + eps), then the affine map.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK-NOT: tfm.layer_norm
func.func @layer_norm(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = tfm.layer_norm %x, %g, %b : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Causal scaled-dot attention over a dynamic number of rows: the keys
// transposed once, then blocks of 64 query rows; a block reads the keys up to
// its last row (min(sk, i0 + rows)), scores them (the key index innermost),
// scales and masks (key j > query i0 + i gets -inf), takes the softmax (max,
// exp, sum, divide) and the product with V (the feature innermost), and goes
// into the result at its rows.
// CHECK-LABEL: func.func @attention(
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: arith.constant 0.353553385 : f32
// CHECK: %[[SQ:.*]] = tensor.dim %arg0
// CHECK: %[[SK:.*]] = tensor.dim %arg1
// CHECK: %[[KT:.*]] = linalg.transpose ins(%arg1 : tensor<1x2x?x8xf32>) outs({{.*}} : tensor<1x2x8x?xf32>) permutation = [0, 1, 3, 2]
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %[[SQ]] step %[[C64]] iter_args(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x2x?x8xf32>)
// CHECK: %[[LEFT:.*]] = arith.subi %[[SQ]], %[[I0]]
// CHECK: %[[ROWS:.*]] = arith.minsi %[[LEFT]], %[[C64]]
// CHECK: %[[END:.*]] = arith.addi %[[I0]], %[[ROWS]]
// CHECK: %[[KEYS:.*]] = arith.minsi %[[SK]], %[[END]]
// CHECK: tensor.extract_slice %arg0[0, 0, %[[I0]], 0] [1, 2, %[[ROWS]], 8]
// CHECK: tensor.extract_slice %[[KT]][0, 0, 0, 0] [1, 2, 8, %[[KEYS]]]
// CHECK: tensor.extract_slice %arg2[0, 0, 0, 0] [1, 2, %[[KEYS]], 8]
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.addi %{{.*}}, %[[I0]]
// CHECK: arith.cmpi ugt
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT]][0, 0, %[[I0]], 0]
// CHECK: scf.yield
func.func @attention(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %o = tfm.attention <scaled_dot> %q, %k, %v causal : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// Not blocked: at most 64 query rows (one block), and additive scores (their
// key projections would be repeated per block): all keys scored, the causal
// ones masked.
// CHECK-LABEL: func.func @attention_one_block(
// CHECK-NOT: scf.for
// CHECK: linalg.transpose
// CHECK: arith.cmpi ugt
// CHECK-LABEL: func.func @attention_additive(
// CHECK-NOT: scf.for
// CHECK: math.tanh
// CHECK: arith.cmpi ugt
// CHECK: return
func.func @attention_one_block(%q: tensor<1x2x64x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x64x8xf32> {
  %o = tfm.attention <scaled_dot> %q, %k, %v causal : (tensor<1x2x64x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x64x8xf32>
  return %o : tensor<1x2x64x8xf32>
}
func.func @attention_additive(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %wk: tensor<2x4x8xf32>, %wq: tensor<2x4x8xf32>, %va: tensor<2x4xf32>) -> tensor<1x2x?x8xf32> {
  %o = tfm.attention <additive> %q, %k, %v params(%wk, %wq, %va) causal : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// Embedding: a gather by tensor.extract at the token id, times the scale.
// CHECK-LABEL: func.func @embedding(
// CHECK: arith.index_cast
// CHECK: tensor.extract %arg1
// CHECK: arith.mulf
func.func @embedding(%ids: tensor<?x?xi32>, %t: tensor<10x8xf32>) -> tensor<?x?x8xf32> {
  %e = tfm.embedding %ids, %t {scale = 2.0 : f32} : (tensor<?x?xi32>, tensor<10x8xf32>) -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

// A cache argument becomes the runtime's buffer; the new keys and values
// are written at the position, attention reads positions [0, pos + seq).
// CHECK-LABEL: func.func @cached(
// CHECK-SAME: memref<2x1x2x16x4xf32>
// CHECK: memref.subview %arg2[0, 0, 0, %arg1, 0]
// CHECK: bufferization.materialize_in_destination {{.*}} in writable
// CHECK: memref.subview %arg2[1, 0, 0, %arg1, 0]
// CHECK: bufferization.materialize_in_destination {{.*}} in writable
// CHECK: bufferization.to_tensor {{.*}} restrict
func.func @cached(%x: tensor<?x?x8xf32>, %pos: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = tfm.multi_head_attention <scaled_dot> %x heads 2 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4>, index) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
