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

// Epilogues: the activation (exact GELU: erf) on the biased product, then
// the residual added, each elementwise over the result.
// CHECK-LABEL: func.func @linear_epilogue(
// CHECK: %[[BIASED:.+]] = linalg.generic {{.*}} ins({{.*}}, %arg2 : tensor<?x?x16xf32>, tensor<16xf32>)
// CHECK: %[[ACT:.+]] = linalg.generic {{.*}} ins(%[[BIASED]] : tensor<?x?x16xf32>)
// CHECK: math.erf
// CHECK: linalg.generic {{.*}} ins(%[[ACT]], %arg3 : tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NOT: tfm.
func.func @linear_epilogue(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %r: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %y = tfm.linear %x, %w, %b activation <gelu> residual %r : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
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
// transposed once, then blocks of 64 query rows, one scf.forall (the blocks
// write disjoint rows); a block reads the keys up to its last row
// (min(sk, i0 + rows)), scores them (the key index innermost), scales and
// masks (key j > query i0 + i gets -inf), takes the softmax (max, exp, sum,
// divide) and the product with V (the feature innermost), and goes into the
// result at its rows.
// CHECK-LABEL: func.func @attention(
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: arith.constant 0.353553385 : f32
// CHECK: %[[SQ:.*]] = tensor.dim %arg0
// CHECK: %[[SK:.*]] = tensor.dim %arg1
// CHECK: %[[KT:.*]] = linalg.transpose ins(%arg1 : tensor<1x2x?x8xf32>) outs({{.*}} : tensor<1x2x8x?xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[SQ]], %[[C64]]
// CHECK: scf.forall (%[[B:.*]]) in (%[[BLOCKS]]) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x2x?x8xf32>)
// CHECK: %[[I0:.*]] = arith.muli %[[B]], %[[C64]]
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
// CHECK: arith.cmpi uge
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][0, 0, %[[I0]], 0]
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
// CHECK: arith.cmpi uge
// CHECK-LABEL: func.func @attention_additive(
// CHECK-NOT: scf.for
// CHECK: math.tanh
// CHECK: arith.cmpi uge
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

// A cache argument becomes the runtime's buffer, flat, in the layout its
// type defines: the keys transposed ([1, 2, 4, 16] strides 128, 64, 1, 16:
// positions next to each other), then the values as rows at offset 128
// (strides 128, 64, 4, 1). tfm.cache_append writes the new keys and values
// at the position and returns pos + seq; tfm.cache_read views positions
// [0, that) of the first `batch` sequences.
// CHECK-LABEL: func.func @cached(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: index, %[[C:[a-z0-9]+]]: memref<256xf32>
// CHECK: %[[KA:.*]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [1, 2, 16, 4], strides: [128, 64, 1, 16]
// CHECK: %[[KW:.*]] = memref.subview %[[KA]][0, 0, %[[POS]], 0]
// CHECK: bufferization.materialize_in_destination %arg3 in writable %[[KW]]
// CHECK: %[[VA:.*]] = memref.reinterpret_cast %[[C]] to offset: [128], sizes: [1, 2, 16, 4], strides: [128, 64, 4, 1]
// CHECK: %[[VW:.*]] = memref.subview %[[VA]][0, 0, %[[POS]], 0]
// CHECK: bufferization.materialize_in_destination %arg4 in writable %[[VW]]
// CHECK: %[[LEN:.*]] = arith.addi %[[POS]], %{{.*}} : index
// CHECK: %[[KR:.*]] = memref.subview %{{.*}}[0, 0, 0, 0] [%arg5, 2, %[[LEN]], 4]
// CHECK: %[[K:.*]] = bufferization.to_tensor %[[KR]] restrict
// CHECK: %[[VR:.*]] = memref.subview %{{.*}}[0, 0, 0, 0] [%arg5, 2, %[[LEN]], 4]
// CHECK: %[[V:.*]] = bufferization.to_tensor %[[VR]] restrict
// CHECK: return %[[K]], %[[V]]
// CHECK-NOT: tfm.
func.func @cached(%x: tensor<?x?x8xf32>, %pos: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %b: index) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %len = tfm.cache_append %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4>, tensor<?x2x?x4xf32>
  %kc, %vc = tfm.cache_read %c[%b, %len] : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4>
  return %kc, %vc : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Self-attention over stacked Q/K/V rows (4 heads of 8), as
// tfm-decompose-attention leaves it: the query, key and value are parts 0,
// 1 and 2 of each row (features [0, 32), [32, 64) and [64, 96)), each split
// into heads; the attention runs in blocks of 64 query rows (causal mask,
// 1/sqrt(8)), with no rotation; the heads are merged back into
// [batch, seq, 32].
// CHECK-LABEL: func.func @stacked_attention(
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: arith.constant 0.353553385 : f32
// CHECK: %[[QS:.*]] = tensor.extract_slice %arg0[0, 0, 0] [%{{.*}}, %{{.*}}, 32] [1, 1, 1] : tensor<?x?x96xf32> to tensor<?x?x32xf32>
// CHECK: %[[QE:.*]] = tensor.expand_shape %[[QS]] {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, %{{.*}}, 4, 8] : tensor<?x?x32xf32> into tensor<?x?x4x8xf32>
// CHECK: %[[Q:.*]] = linalg.transpose ins(%[[QE]] : tensor<?x?x4x8xf32>) outs(%{{.*}} : tensor<?x4x?x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[KS:.*]] = tensor.extract_slice %arg0[0, 0, 32] [%{{.*}}, %{{.*}}, 32] [1, 1, 1] : tensor<?x?x96xf32> to tensor<?x?x32xf32>
// CHECK: %[[KE:.*]] = tensor.expand_shape %[[KS]] {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, %{{.*}}, 4, 8]
// CHECK: %[[K:.*]] = linalg.transpose ins(%[[KE]] : tensor<?x?x4x8xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK: %[[VS:.*]] = tensor.extract_slice %arg0[0, 0, 64] [%{{.*}}, %{{.*}}, 32] [1, 1, 1] : tensor<?x?x96xf32> to tensor<?x?x32xf32>
// CHECK: %[[VE:.*]] = tensor.expand_shape %[[VS]] {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, %{{.*}}, 4, 8]
// CHECK: %[[V:.*]] = linalg.transpose ins(%[[VE]] : tensor<?x?x4x8xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK-NOT: math.cos
// CHECK: %[[KT:.*]] = linalg.transpose ins(%[[K]] : tensor<?x4x?x8xf32>) outs({{.*}} : tensor<?x4x8x?xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[O:.*]] = scf.forall (%[[B:.*]]) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x4x?x8xf32>)
// CHECK: %[[I0:.*]] = arith.muli %[[B]], %[[C64]]
// CHECK: tensor.extract_slice %[[Q]][0, 0, %[[I0]], 0]
// CHECK: tensor.extract_slice %[[KT]][0, 0, 0, 0]
// CHECK: tensor.extract_slice %[[V]][0, 0, 0, 0]
// CHECK: arith.cmpi uge
// CHECK: math.exp
// CHECK: tensor.parallel_insert_slice
// CHECK: %[[M:.*]] = linalg.transpose ins(%[[O]] : tensor<?x4x?x8xf32>) outs({{.*}} : tensor<?x?x4x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[M]] {{\[\[}}0], [1], [2, 3]] : tensor<?x?x4x8xf32> into tensor<?x?x32xf32>
// CHECK: return %[[R]] : tensor<?x?x32xf32>
// CHECK-NOT: tfm.
func.func @stacked_attention(%qkv: tensor<?x?x96xf32>) -> tensor<?x?x32xf32> {
  %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %a = tfm.attention <scaled_dot> %q, %k, %v causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %o = tfm.merge_heads %a : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// With rope: the queries and keys (not the values) are rotated as
// tfm.rotary does, at positions 0, 1, ...: angle = pos * base^(-2i/dk) in
// double (dk = 8, base 5e5), interleaved pairs (2i, 2i+1); the attention
// then reads the rotated heads.
// CHECK-LABEL: func.func @stacked_attention_rope(
// CHECK-DAG: arith.constant 5.000000e+05 : f64
// CHECK-DAG: arith.constant -2.500000e-01 : f64
// CHECK: %[[Q:.*]] = linalg.transpose ins(%{{.*}} : tensor<?x?x4x8xf32>)
// CHECK: %[[K:.*]] = linalg.transpose ins(%{{.*}} : tensor<?x?x4x8xf32>)
// CHECK: %[[V:.*]] = linalg.transpose ins(%{{.*}} : tensor<?x?x4x8xf32>)
// CHECK: %[[RQ:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x4x?x8xf32>)
// CHECK: arith.remui
// CHECK: math.powf
// CHECK: math.cos
// CHECK: math.sin
// CHECK: tensor.extract %[[Q]]
// CHECK: %[[RK:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x4x?x8xf32>)
// CHECK: math.cos
// CHECK: math.sin
// CHECK: tensor.extract %[[K]]
// CHECK-NOT: math.cos
// CHECK: linalg.transpose ins(%[[RK]] : tensor<?x4x?x8xf32>) outs({{.*}} : tensor<?x4x8x?xf32>)
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[RQ]]
// CHECK: tensor.extract_slice %[[V]]
// CHECK: tensor.collapse_shape
// CHECK-NOT: tfm.
func.func @stacked_attention_rope(%qkv: tensor<?x?x96xf32>) -> tensor<?x?x32xf32> {
  %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %rq = tfm.rotary <interleaved> %q {base = 5.0e+05 : f32} : tensor<?x4x?x8xf32>
  %rk = tfm.rotary <interleaved> %k {base = 5.0e+05 : f32} : tensor<?x4x?x8xf32>
  %a = tfm.attention <dot> %rq, %rk, %v causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %o = tfm.merge_heads %a : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// Grouped-query attention (4 query heads over 2 key/value heads): the
// queries viewed as [1, 2 kv heads, 2 per group, s, 8]; the scores' key
// operand and the product's value operand skip the group dimension (d2), so
// each key/value head is read by its group in place, never copied; the
// result collapsed back to 4 heads.
// CHECK-DAG: #[[GQ:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[GK:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-LABEL: func.func @attention_grouped(
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, %{{.+}}, 8] : tensor<1x4x?x8xf32> into tensor<1x2x2x?x8xf32>
// CHECK: scf.forall
// CHECK: linalg.generic {indexing_maps = [#[[GQ]], #[[GK]], #{{.+}}], {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x2x2x?x8xf32>, tensor<1x2x8x?xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[GQ]], #[[GK]], #{{.+}}], {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x2x2x?x?xf32>, tensor<1x2x?x8xf32>)
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
// CHECK-NOT: tfm.attention
func.func @attention_grouped(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = tfm.attention <scaled_dot> %q, %k, %v causal : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Additive scores project every key per query head: with fewer key heads,
// each key/value head is repeated for its group first.
// CHECK-DAG: #[[REP_IN:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-LABEL: func.func @attention_grouped_additive(
// CHECK: linalg.generic {indexing_maps = [#[[REP_IN]], #{{.+}}], {{.*}} ins(%arg1 : tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x2x?x8xf32>)
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[REP_IN]], #{{.+}}], {{.*}} ins(%arg2 : tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x2x?x8xf32>)
// CHECK: math.tanh
func.func @attention_grouped_additive(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %wk: tensor<4x4x8xf32>, %va: tensor<4x4xf32>) -> tensor<1x4x?x8xf32> {
  %o = tfm.attention <additive> %q, %k, %v params(%wk, %wk, %va) : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// RMS norm: one reduction (the squares; no mean, no centring), 1/sqrt, then
// x * that * gamma. The GLU: silu of the first half, times the second.
// CHECK-LABEL: func.func @rms_glu(
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: arith.subf
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: tensor.extract_slice %arg2[0, 0, 0] [%{{.+}}, %{{.+}}, 8] [1, 1, 1]
// CHECK: math.exp
// CHECK: tensor.extract_slice %arg2[0, 0, 8] [%{{.+}}, %{{.+}}, 8] [1, 1, 1]
// CHECK: arith.mulf
// CHECK-NOT: tfm.
func.func @rms_glu(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %h: tensor<?x?x16xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %y = tfm.layer_norm rms %x, %g : tensor<?x?x8xf32>, tensor<8xf32>
  %z = tfm.glu <silu> %h : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  return %y, %z : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// A sliding window (3) with a global token: a block of 64 query rows reads
// the keys from its first row's first key to the largest end of its rows,
// after the global keys the band leaves ([0, min(1, first))), both
// concatenated into one slice of keys (and of values); the mask maps slice
// index j back to key positions (j below the global slice, else band start
// + j - its size) and keeps [0, prefix(i)) and [first(i), end(i)).
// CHECK-LABEL: func.func @window(
// CHECK: scf.forall
// CHECK: %[[BANDKT:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, %[[BAND:[0-9]+]]] [1, 2, 8, %[[KEYS:[0-9]+]]]
// CHECK: %[[BANDV:.*]] = tensor.extract_slice %arg2[0, 0, %[[BAND]], 0] [1, 2, %[[KEYS]], 8]
// CHECK: %[[GLOBAL:.*]] = arith.minsi %[[BAND]], %c1 : index
// CHECK: %[[GLOBALKT:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 2, 8, %[[GLOBAL]]]
// CHECK: %[[KT0:.*]] = tensor.insert_slice %[[GLOBALKT]] into %{{.*}}[0, 0, 0, 0] [1, 2, 8, %[[GLOBAL]]]
// CHECK: %[[KT:.*]] = tensor.insert_slice %[[BANDKT]] into %[[KT0]][0, 0, 0, %[[GLOBAL]]] [1, 2, 8, %[[KEYS]]]
// CHECK: tensor.insert_slice %[[BANDV]] into %{{.*}}[0, 0, %[[GLOBAL]], 0] [1, 2, %[[KEYS]], 8]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[KT]] :
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: %[[BANDKEY:.*]] = arith.addi %[[BAND]], %[[J]] : index
// CHECK: %[[INGLOBAL:.*]] = arith.cmpi ult, %[[J]], %[[GLOBAL]] : index
// CHECK: %[[SHIFTED:.*]] = arith.subi %[[BANDKEY]], %[[GLOBAL]] : index
// CHECK: %[[KEY:.*]] = arith.select %[[INGLOBAL]], %[[J]], %[[SHIFTED]] : index
// CHECK: arith.cmpi sge, %[[KEY]]
// CHECK: arith.cmpi slt, %[[KEY]]
// CHECK: arith.cmpi slt, %[[KEY]]
// CHECK: arith.select %{{.*}}, %cst, %{{.*}} : f32
func.func @window(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %0 = tfm.attention <scaled_dot> %q, %k, %v window 3 global 1 : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// weights_to %slot (--dump-attention): one call asks the runtime whether it
// collects map %slot; only then, in an scf.if, the causal scores' softmax
// over every key (a masked key -inf, so exactly 0), the grouped-query heads
// ([1, 1 kv head, 2, s, 8] queries) merged back to [1, 2, s, s], handed to
// the runtime as a buffer. The attention itself follows, unchanged.
// CHECK-LABEL: func.func @weights_to(
// CHECK: %[[WANTED:.*]] = call @__tfm_runtime_attention_weights_wanted(%arg3) : (index) -> index
// CHECK: %[[COLLECT:.*]] = arith.cmpi ne, %[[WANTED]], %c0{{.*}} : index
// CHECK: scf.if %[[COLLECT]] {
// CHECK: linalg.index 3 : index
// CHECK: arith.cmpi uge
// CHECK: arith.select %{{.*}}, %cst{{.*}}, %{{.*}} : f32
// CHECK: %[[MERGED:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x1x2x?x?xf32> into tensor<1x2x?x?xf32>
// CHECK: %[[DYN:.*]] = tensor.cast %[[MERGED]] : tensor<1x2x?x?xf32> to tensor<?x?x?x?xf32>
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %[[DYN]] read_only : tensor<?x?x?x?xf32> to memref<?x?x?x?xf32>
// CHECK: func.call @__tfm_runtime_attention_weights_write(%arg3, %[[BUF]]) : (index, memref<?x?x?x?xf32>) -> ()
// CHECK: }
// CHECK: scf.forall
// CHECK: func.func private @__tfm_runtime_attention_weights_wanted(index) -> index attributes {llvm.emit_c_interface}
// CHECK: func.func private @__tfm_runtime_attention_weights_write(index, memref<?x?x?x?xf32>) attributes {llvm.emit_c_interface}
func.func @weights_to(%q: tensor<1x2x?x8xf32>, %k: tensor<1x1x?x8xf32>, %v: tensor<1x1x?x8xf32>, %slot: index) -> tensor<1x2x?x8xf32> {
  %0 = tfm.attention <scaled_dot> %q, %k, %v causal weights_to %slot : (tensor<1x2x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, index) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// BigBird (causal, blocks of 8, window 1, global 1, random 2 from %p): a
// block of 64 query rows reads the band and the global keys as a sliding
// window does, then gathers its query blocks' pattern blocks: a
// linalg.generic writes each entry's key positions (B = 8 of each of the
// R = 2 ids of each query block from its first to its last: 16 a query
// block), -1 where the id is out of range, not whole, global, in the
// window or named before in the row; the keys and the values are read at
// those positions and concatenated after the band. The mask keeps a
// gathered key for the rows of its own query block, up to the diagonal.
// CHECK-LABEL: func.func @block_sparse(
// CHECK: scf.forall
// CHECK: %[[COUNT:.*]] = arith.muli %{{.*}}, %c16 : index
// CHECK-NEXT: %[[EMPTY:.*]] = tensor.empty(%[[COUNT]]) : tensor<?xf32>
// CHECK: %[[GATHERED:.*]] = linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<?xf32>)
// CHECK: tensor.extract %arg3[%{{.*}}, %{{.*}}] : tensor<12x2xf32>
// CHECK: arith.cmpi ugt, %{{.*}}, %c1 : index
// CHECK: tensor.extract %arg3[%{{.*}}, %c0] : tensor<12x2xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// CHECK: %[[KEYS:.*]] = linalg.generic {{.*}} ins(%[[GATHERED]] : tensor<?xf32>) outs(%{{.*}} : tensor<1x2x8x?xf32>)
// CHECK: arith.maximumf
// CHECK: tensor.extract %transposed[
// CHECK: tensor.insert_slice %[[KEYS]] into
// CHECK: %[[VALUES:.*]] = linalg.generic {{.*}} ins(%[[GATHERED]] : tensor<?xf32>) outs(%{{.*}} : tensor<1x2x?x8xf32>)
// CHECK: tensor.extract %arg2[
// CHECK: tensor.insert_slice %[[VALUES]] into
// CHECK: tensor.extract %[[GATHERED]][
// CHECK: arith.cmpi eq
// CHECK: arith.cmpi uge
// CHECK: scf.forall.in_parallel
func.func @block_sparse(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %p: tensor<12x2xf32>) -> tensor<1x2x?x8xf32> {
  %0 = tfm.attention <scaled_dot> %q, %k, %v causal block 8 window 1 global 1 random 2 pattern(%p) : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<12x2xf32>) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// Linformer's projection: E's first n columns (n the rows of the input),
// contracted with the input along the sequence, the sequence (reduced)
// outside the contiguous features: loops (b, h, k, j, d), E [k, j], the
// input [b, h, j, d], the result [b, h, k, d].
// CHECK-DAG: #[[E:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @sequence_projection(
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c2
// CHECK: %[[EN:.*]] = tensor.extract_slice %arg1[0, 0] [6, %[[N]]] [1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[E]], #[[X]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[EN]], %arg0 : tensor<6x?xf32>, tensor<1x2x?x8xf32>) outs(%{{.*}} : tensor<1x2x6x8xf32>)
func.func @sequence_projection(%k: tensor<1x2x?x8xf32>, %e: tensor<6x16xf32>) -> tensor<1x2x6x8xf32> {
  %0 = tfm.sequence_projection %k by %e : tensor<1x2x?x8xf32>, tensor<6x16xf32>
  return %0 : tensor<1x2x6x8xf32>
}

// -----

// Performer's feature map, exp(x W_h^T - |x|^2 / 2) / sqrt(M) of x = input
// / dk^(1/4) (dk = 8, M = 6): one contraction of each head's rows with its
// W_h over dk (W indexed by the head, d1; the sum marked reassociable, so
// LLVM vectorises the dot product), one reduction of each row's squares,
// then exp(dot / dk^(1/4) - (squares / (2 sqrt(dk)) + log(M) / 2))
// elementwise.
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[WH:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @feature_map(
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.594603539 : f32
// CHECK-DAG: %[[LOGROOT:.+]] = arith.constant 0.895879745 : f32
// CHECK-DAG: %[[HALF:.+]] = arith.constant 0.176776692 : f32
// CHECK: %[[DOTS:.+]] = linalg.generic {indexing_maps = [#[[ROW]], #[[WH]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<1x2x?x8xf32>, tensor<2x6x8xf32>) outs(%{{.+}} : tensor<1x2x?x6xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[C:.+]]: f32):
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: arith.addf %[[C]], %[[P]] fastmath<reassoc> : f32
// CHECK: %[[SQ:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x?xf32>)
// CHECK-NEXT: ^bb0(%[[E:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[E2:.+]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[E2]] : f32
// CHECK: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[DOTS]], %[[SQ]] : tensor<1x2x?x6xf32>, tensor<1x2x?xf32>) outs(%{{.+}} : tensor<1x2x?x6xf32>)
// CHECK-NEXT: ^bb0(%[[DOT:.+]]: f32, %[[SQUARES:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[S1:.+]] = arith.mulf %[[SQUARES]], %[[HALF]] : f32
// CHECK-NEXT: %[[SHIFT:.+]] = arith.addf %[[S1]], %[[LOGROOT]] : f32
// CHECK-NEXT: %[[SCALED:.+]] = arith.mulf %[[DOT]], %[[SCALE]] : f32
// CHECK-NEXT: %[[ARG:.+]] = arith.subf %[[SCALED]], %[[SHIFT]] : f32
// CHECK-NEXT: %[[PHI:.+]] = math.exp %[[ARG]] : f32
// CHECK-NEXT: linalg.yield %[[PHI]] : f32
// CHECK-NOT: tfm.
func.func @feature_map(%x: tensor<1x2x?x8xf32>, %w: tensor<2x6x8xf32>) -> tensor<1x2x?x6xf32> {
  %0 = tfm.feature_map %x by %w : tensor<1x2x?x8xf32>, tensor<2x6x8xf32>
  return %0 : tensor<1x2x?x6xf32>
}

// -----

// Grouped-query keys (2 heads) mapped by W's 4 heads: each key head
// repeated for its group first, then the same contraction over 4 heads.
// CHECK-LABEL: func.func @feature_map_grouped(
// CHECK: %[[REP:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x2x?x8xf32>)
// CHECK: %[[KEYS:.+]] = tensor.collapse_shape %[[REP]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[KEYS]], %arg1 : tensor<1x4x?x8xf32>, tensor<4x6x8xf32>) outs(%{{.+}} : tensor<1x4x?x6xf32>)
// CHECK: math.exp
func.func @feature_map_grouped(%k: tensor<1x2x?x8xf32>, %w: tensor<4x6x8xf32>) -> tensor<1x4x?x6xf32> {
  %0 = tfm.feature_map %k by %w : tensor<1x2x?x8xf32>, tensor<4x6x8xf32>
  return %0 : tensor<1x4x?x6xf32>
}

// -----

// Linear attention, not causal: the keys' summary fk^T v ([M, dv] a head,
// a contraction over the keys, fk read transposed) and the keys' features
// summed ([M]) once; each query row's numerator fq (fk^T v) and
// denominator fq . sum(fk), then their quotient. No loop, no [n, s]
// matrix. The summary's loops are (batch, head, m, key, e): the key
// reduced outside the value column, so the innermost loop is an axpy of a
// value row into a row of the sums, which LLVM vectorises.
// CHECK-DAG: #[[FKT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d2)>
// CHECK-DAG: #[[V:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-LABEL: func.func @linear_attention(
// CHECK-NOT: scf.for
// CHECK: %[[SUMS:.+]] = linalg.generic {indexing_maps = [#[[FKT]], #[[V]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%arg1, %arg2 : tensor<1x2x?x6xf32>, tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x6x8xf32>)
// CHECK: %[[FSUMS:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%arg1 : tensor<1x2x?x6xf32>) outs(%{{.+}} : tensor<1x2x6xf32>)
// CHECK: %[[NUM:.+]] = linalg.generic {{.*}} ins(%arg0, %[[SUMS]] : tensor<1x2x?x6xf32>, tensor<1x2x6x8xf32>) outs(%{{.+}} : tensor<1x2x?x8xf32>)
// CHECK: %[[DEN:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %[[FSUMS]] : tensor<1x2x?x6xf32>, tensor<1x2x6xf32>) outs(%{{.+}} : tensor<1x2x?xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[NUM]], %[[DEN]] : tensor<1x2x?x8xf32>, tensor<1x2x?xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.divf
// CHECK-NOT: scf.for
// CHECK-NOT: tfm.
func.func @linear_attention(%fq: tensor<1x2x?x6xf32>, %fk: tensor<1x2x?x6xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %0 = tfm.linear_attention %fq, %fk, %v : (tensor<1x2x?x6xf32>, tensor<1x2x?x6xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// Causal: an scf.for over blocks of 64 query rows carries the sums of the
// keys before the block (fk^T v and sum(fk), zero at first) and the result.
// Each block scores only its diagonal block (its rows' features with its
// own keys', [64, 64] at most), zeroes it above the diagonal (key j > row
// i), adds it and its values to what the sums give, writes its rows, then
// adds its keys to the sums it yields.
// CHECK-LABEL: func.func @linear_attention_causal(
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[F0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x2x6xf32>)
// CHECK: %[[S0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x2x6x8xf32>)
// CHECK: %[[SQ:.+]] = tensor.dim %arg0, %{{.+}} : tensor<1x2x?x6xf32>
// CHECK: %[[OUT:.+]]:3 = scf.for %[[I0:.+]] = %[[C0]] to %[[SQ]] step %[[C64]] iter_args(%[[SUMS:.+]] = %[[S0]], %[[FSUMS:.+]] = %[[F0]], %[[RES:.+]] = %{{.+}}) -> (tensor<1x2x6x8xf32>, tensor<1x2x6xf32>, tensor<1x2x?x8xf32>) {
// CHECK: %[[ROWS:.+]] = arith.minsi %{{.+}}, %[[C64]] : index
// CHECK: %[[QB:.+]] = tensor.extract_slice %arg0[0, 0, %[[I0]], 0] [1, 2, %[[ROWS]], 6] [1, 1, 1, 1]
// CHECK: %[[KB:.+]] = tensor.extract_slice %arg1[0, 0, %[[I0]], 0] [1, 2, %[[ROWS]], 6] [1, 1, 1, 1]
// CHECK: %[[VB:.+]] = tensor.extract_slice %arg2[0, 0, %[[I0]], 0] [1, 2, %[[ROWS]], 8] [1, 1, 1, 1]
// CHECK: %[[DIAG:.+]] = linalg.generic {{.*}} ins(%[[QB]], %[[KB]] : tensor<1x2x?x6xf32>, tensor<1x2x?x6xf32>) outs(%{{.+}} : tensor<1x2x?x?xf32>)
// CHECK: %[[LOWER:.+]] = linalg.generic {{.*}} ins(%[[DIAG]] : tensor<1x2x?x?xf32>)
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK-NEXT: %[[J:.+]] = linalg.index 3 : index
// CHECK-NEXT: %[[ABOVE:.+]] = arith.cmpi ugt, %[[J]], %[[I]] : index
// CHECK-NEXT: arith.select %[[ABOVE]], %[[ZERO]], %{{.+}} : f32
// CHECK: %[[NUM:.+]] = linalg.generic {{.*}} ins(%[[QB]], %[[SUMS]] : tensor<1x2x?x6xf32>, tensor<1x2x6x8xf32>)
// CHECK: %[[DEN:.+]] = linalg.generic {{.*}} ins(%[[QB]], %[[FSUMS]] : tensor<1x2x?x6xf32>, tensor<1x2x6xf32>)
// CHECK: %[[NUM2:.+]] = linalg.generic {{.*}} ins(%[[LOWER]], %[[VB]] : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%[[NUM]] : tensor<1x2x?x8xf32>)
// CHECK: %[[DEN2:.+]] = linalg.generic {{.*}} ins(%[[LOWER]] : tensor<1x2x?x?xf32>) outs(%[[DEN]] : tensor<1x2x?xf32>)
// CHECK: %[[BLOCK:.+]] = linalg.generic {{.*}} ins(%[[NUM2]], %[[DEN2]] : tensor<1x2x?x8xf32>, tensor<1x2x?xf32>)
// CHECK: arith.divf
// CHECK: %[[WRITTEN:.+]] = tensor.insert_slice %[[BLOCK]] into %[[RES]][0, 0, %[[I0]], 0]
// CHECK: %[[NEXT:.+]] = linalg.generic {{.*}} ins(%[[KB]], %[[VB]] : tensor<1x2x?x6xf32>, tensor<1x2x?x8xf32>) outs(%[[SUMS]] : tensor<1x2x6x8xf32>)
// CHECK: %[[NEXTF:.+]] = linalg.generic {{.*}} ins(%[[KB]] : tensor<1x2x?x6xf32>) outs(%[[FSUMS]] : tensor<1x2x6xf32>)
// CHECK: scf.yield %[[NEXT]], %[[NEXTF]], %[[WRITTEN]] : tensor<1x2x6x8xf32>, tensor<1x2x6xf32>, tensor<1x2x?x8xf32>
// CHECK: return %[[OUT]]#2 : tensor<1x2x?x8xf32>
// CHECK-NOT: tfm.
func.func @linear_attention_causal(%fq: tensor<1x2x?x6xf32>, %fk: tensor<1x2x?x6xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %0 = tfm.linear_attention %fq, %fk, %v causal : (tensor<1x2x?x6xf32>, tensor<1x2x?x6xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// Causal at an offset (a decode step over a cache of 2 value heads read by
// 4 feature heads): the values repeated for their group; the sums start
// from the %arg3 keys before the queries (the first %arg3 rows of fk and of
// the values, contracted and summed), and each block's own keys start at
// %arg3 + i0.
// CHECK-LABEL: func.func @linear_attention_offset(
// CHECK: %[[REP:.+]] = linalg.generic {{.*}} ins(%arg2 : tensor<1x2x?x8xf32>) outs(%{{.+}} : tensor<1x2x2x?x8xf32>)
// CHECK: %[[V:.+]] = tensor.collapse_shape %[[REP]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
// CHECK: %[[KBEFORE:.+]] = tensor.extract_slice %arg1[0, 0, 0, 0] [1, 4, %arg3, 6] [1, 1, 1, 1]
// CHECK: %[[VBEFORE:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 0] [1, 4, %arg3, 8] [1, 1, 1, 1]
// CHECK: %[[S0:.+]] = linalg.generic {{.*}} ins(%[[KBEFORE]], %[[VBEFORE]] : tensor<1x4x?x6xf32>, tensor<1x4x?x8xf32>) outs(%{{.+}} : tensor<1x4x6x8xf32>)
// CHECK: %[[F0:.+]] = linalg.generic {{.*}} ins(%[[KBEFORE]] : tensor<1x4x?x6xf32>) outs(%{{.+}} : tensor<1x4x6xf32>)
// CHECK: scf.for %[[I0:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[S0]], %{{.+}} = %[[F0]], %{{.+}} = %{{.+}}) -> (tensor<1x4x6x8xf32>, tensor<1x4x6xf32>, tensor<1x4x1x8xf32>) {
// CHECK: %[[FIRST:.+]] = arith.addi %arg3, %[[I0]] : index
// CHECK: tensor.extract_slice %arg0[0, 0, %[[I0]], 0]
// CHECK: tensor.extract_slice %arg1[0, 0, %[[FIRST]], 0]
// CHECK: tensor.extract_slice %[[V]][0, 0, %[[FIRST]], 0]
// CHECK: scf.yield
// CHECK-NOT: tfm.
func.func @linear_attention_offset(%fq: tensor<1x4x1x6xf32>, %fk: tensor<1x4x?x6xf32>, %v: tensor<1x2x?x8xf32>, %pos: index) -> tensor<1x4x1x8xf32> {
  %0 = tfm.linear_attention %fq, %fk, %v causal offset %pos : (tensor<1x4x1x6xf32>, tensor<1x4x?x6xf32>, tensor<1x2x?x8xf32>, index) -> tensor<1x4x1x8xf32>
  return %0 : tensor<1x4x1x8xf32>
}

// -----

// Causal with `sums` (a decode step over a cache of feature sums; 2 value
// heads read by the 4 feature heads): the cache handle is its flat buffer
// (2 x 4 x 6 x (8 + 1) = 432 floats), viewed in place as the rows of its
// first %batch sequences ([?, 4, 6, 8]) and their feature sums (216 floats
// a sequence, 54 a head). Each is read (restrict), replaced by zeros at
// offset 0 (the cache then holds an earlier sequence's sums), and carried
// into the blocks' scf.for, whose keys are this call's own (the block at
// i0 adds keys i0.., not %arg3 + i0); the loop's sums are written back
// into the same views.
// CHECK-LABEL: func.func @linear_attention_sums(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: index, %[[C:[a-z0-9]+]]: memref<432xf32>) -> tensor<?x4x1x8xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[V:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x2x1x8xf32> into tensor<?x4x1x8xf32>
// CHECK: %[[BATCH:.+]] = tensor.dim %arg0, %[[C0]] : tensor<?x4x1x6xf32>
// CHECK: %[[RALL:.+]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [2, 4, 6, {{8|9}}], strides: [216, 54, {{8|9}}, 1]
// CHECK: %[[ROWS:.+]] = memref.subview %[[RALL]][0, 0, 0, 0] [%[[BATCH]], 4, 6, 8] [1, 1, 1, 1]
// CHECK: %[[FALL:.+]] = memref.reinterpret_cast %[[C]] to offset: [{{0|48}}], sizes: [2, 4, 6{{(, 9)?}}], strides: [216, 54, {{(9, )?}}1]
// CHECK: %[[FEATS:.+]] = memref.subview %[[FALL]][0, 0, 0{{(, 8)?}}] [%[[BATCH]], 4, 6{{(, 1)?}}]
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[POS]], %[[C0]] : index
// CHECK: %[[RREAD:.+]] = bufferization.to_tensor %[[ROWS]] restrict : {{.+}} to tensor<?x4x6x8xf32>
// CHECK: %[[RZERO:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<?x4x6x8xf32>)
// CHECK: %[[RSTART:.+]] = arith.select %[[FIRST]], %[[RZERO]], %[[RREAD]] : tensor<?x4x6x8xf32>
// CHECK: %[[FREAD:.+]] = bufferization.to_tensor %[[FEATS]] restrict : {{.+}} to tensor<?x4x6{{(x1)?}}xf32>
// CHECK: %[[FZERO:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<?x4x6{{(x1)?}}xf32>)
// CHECK: arith.select %[[FIRST]], %[[FZERO]], %[[FREAD]] : tensor<?x4x6{{(x1)?}}xf32>
// CHECK: %[[LOOP:.+]]:3 = scf.for %[[I0:.+]] = %[[C0]] to %{{.+}} step %{{.+}} iter_args(%[[SUMS:.+]] = %[[RSTART]], %[[FSUMS:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<?x4x6x8xf32>, tensor<?x4x6xf32>, tensor<?x4x1x8xf32>) {
// CHECK: %[[QB:.+]] = tensor.extract_slice %arg0[0, 0, %[[I0]], 0]
// CHECK: %[[KB:.+]] = tensor.extract_slice %arg1[0, 0, %[[I0]], 0]
// CHECK: %[[VB:.+]] = tensor.extract_slice %[[V]][0, 0, %[[I0]], 0]
// CHECK: linalg.generic {{.*}} ins(%[[QB]], %[[SUMS]] : tensor<?x4x?x6xf32>, tensor<?x4x6x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[QB]], %[[FSUMS]] : tensor<?x4x?x6xf32>, tensor<?x4x6xf32>)
// CHECK: %[[NEXT:.+]] = linalg.generic {{.*}} ins(%[[KB]], %[[VB]] : tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) outs(%[[SUMS]] : tensor<?x4x6x8xf32>)
// CHECK: %[[NEXTF:.+]] = linalg.generic {{.*}} ins(%[[KB]] : tensor<?x4x?x6xf32>) outs(%[[FSUMS]] : tensor<?x4x6xf32>)
// CHECK: scf.yield %[[NEXT]], %[[NEXTF]], %{{.+}} : tensor<?x4x6x8xf32>, tensor<?x4x6xf32>, tensor<?x4x1x8xf32>
// CHECK: bufferization.materialize_in_destination %[[LOOP]]#0 in writable %[[ROWS]] : (tensor<?x4x6x8xf32>, memref<?x4x6x8xf32, strided<[216, 54, {{8|9}}, 1]>>) -> ()
// CHECK: bufferization.materialize_in_destination %{{.+}} in writable %[[FEATS]] : (tensor<?x4x6{{(x1)?}}xf32>,
// CHECK: return %[[LOOP]]#2 : tensor<?x4x1x8xf32>
// CHECK-NOT: tfm.
func.func @linear_attention_sums(%fq: tensor<?x4x1x6xf32>, %fk: tensor<?x4x1x6xf32>, %v: tensor<?x2x1x8xf32>, %pos: index, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32> {
  %0 = tfm.linear_attention %fq, %fk, %v causal offset %pos sums(%c) : (tensor<?x4x1x6xf32>, tensor<?x4x1x6xf32>, tensor<?x2x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32>
  return %0 : tensor<?x4x1x8xf32>
}

// -----

// Top-k routing: the tokens as rows, an scf.for over them choosing each
// slot's expert in a loop over the experts (the larger logit, a tie to the
// lower expert: cmpf ogt, cmpf oeq with cmpi ult; a NaN below every
// number: cmpf uno), then exp(logit - the first choice's) and the sum;
// the pairs counted per expert into starts[e + 1], the prefix sums, each
// pair to its expert's next place; the flat results copied into [B, S, K].
// CHECK-LABEL: func.func @route_experts(
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x?x3xf32> into tensor<?x3xf32>
// CHECK: %[[N:.+]] = tensor.dim %[[ROWS]], %{{.+}} : tensor<?x3xf32>
// CHECK: %[[CHOSEN:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %[[N]] step %{{.+}} iter_args({{.*}}) -> (tensor<?x2xi32>, tensor<?x2xf32>)
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[E:.+]] step %{{.+}} iter_args(%{{.+}} = %[[E]]) -> (index)
// CHECK: arith.cmpf uno
// CHECK: arith.cmpi ult
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<4xi32>)
// CHECK: %[[COUNTS:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[ZEROS]]) -> (tensor<4xi32>)
// CHECK: %[[STARTS:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[COUNTS]]) -> (tensor<4xi32>)
// CHECK: %[[SORTED:.+]]:3 = scf.for {{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %[[STARTS]]) -> (tensor<?xi32>, tensor<?xf32>, tensor<4xi32>)
// CHECK: tensor.extract %[[CHOSEN]]#0
// CHECK: tensor.extract %[[CHOSEN]]#1
// CHECK: %[[TOKENS:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x?x2xi32>)
// CHECK: tensor.extract %[[SORTED]]#0
// CHECK: %[[WEIGHTS:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x?x2xf32>)
// CHECK: tensor.extract %[[SORTED]]#1
// CHECK: return %[[TOKENS]], %[[WEIGHTS]], %[[STARTS]]
// CHECK-NOT: tfm.
func.func @route_experts(%logits: tensor<?x?x3xf32>) -> (tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<4xi32>) {
  %t, %w, %s = tfm.route_experts %logits top 2 : tensor<?x?x3xf32> -> tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<4xi32>
  return %t, %w, %s : tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<4xi32>
}

// -----

// The pairs' rows: a generic over [B, S, K, d] reading row tokens[b, s, k]
// of the input as rows.
// CHECK-LABEL: func.func @gather_rows(
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<?x?x2xi32>) outs(%{{.+}} : tensor<?x?x2x8xf32>)
// CHECK: %[[ROW:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[COL:.+]] = linalg.index 3 : index
// CHECK: tensor.extract %[[ROWS]][%[[ROW]], %[[COL]]] : tensor<?x8xf32>
// CHECK-NOT: tfm.
func.func @gather_rows(%x: tensor<?x?x8xf32>, %t: tensor<?x?x2xi32>) -> tensor<?x?x2x8xf32> {
  %r = tfm.gather_rows %x, %t : (tensor<?x?x8xf32>, tensor<?x?x2xi32>) -> tensor<?x?x2x8xf32>
  return %r : tensor<?x?x2x8xf32>
}

// -----

// One GEMM per expert on the rows [starts[e], starts[e + 1]) of the pairs
// (a slice of dynamic size), bias and activation after it, into the
// pairs' rows; then copied back into [B, S, K, out].
// CHECK-LABEL: func.func @grouped_linear(
// CHECK: %[[PAIRS:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2], [3]] : tensor<?x?x2x8xf32> into tensor<?x8xf32>
// CHECK: %[[FIRST0:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[END0:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[N0:.+]] = arith.subi %[[END0]], %[[FIRST0]] : index
// CHECK: %[[G0:.+]] = tensor.extract_slice %[[PAIRS]][%[[FIRST0]], 0] [%[[N0]], 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[G0]], %arg2 : tensor<?x8xf32>, tensor<16x8xf32>)
// CHECK: ins(%{{.+}}, %arg4 : tensor<?x16xf32>, tensor<16xf32>)
// CHECK: arith.maximumf
// CHECK: %[[Y0:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[%[[FIRST0]], 0]
// CHECK: %[[G1:.+]] = tensor.extract_slice %[[PAIRS]]
// CHECK: linalg.generic {{.*}} ins(%[[G1]], %arg3 : tensor<?x8xf32>, tensor<16x8xf32>)
// CHECK: ins(%{{.+}}, %arg5 : tensor<?x16xf32>, tensor<16xf32>)
// CHECK: %[[Y1:.+]] = tensor.insert_slice %{{.+}} into %[[Y0]]
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x?x2x16xf32>)
// CHECK: tensor.extract %[[Y1]]
// CHECK-NOT: tfm.
func.func @grouped_linear(%x: tensor<?x?x2x8xf32>, %s: tensor<3xi32>, %w0: tensor<16x8xf32>, %w1: tensor<16x8xf32>, %b0: tensor<16xf32>, %b1: tensor<16xf32>) -> tensor<?x?x2x16xf32> {
  %h = tfm.grouped_linear %x groups %s weights(%w0, %w1) bias(%b0, %b1) activation <relu> : (tensor<?x?x2x8xf32>, tensor<3xi32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x2x16xf32>
  return %h : tensor<?x?x2x16xf32>
}

// -----

// The scatter, on packed weights: each expert's GEMM on the panels (marked
// tfm.gemm), then an scf.for over its group's pairs adding routing weight
// x the pair's row into its token's row, from the residual's rows.
// CHECK-LABEL: func.func @grouped_linear_scatter(
// CHECK: %[[TOKENS:.+]] = tensor.collapse_shape %arg4 {{\[\[}}0, 1, 2]] : tensor<?x?x2xi32> into tensor<?xi32>
// CHECK: %[[RW:.+]] = tensor.collapse_shape %arg5 {{\[\[}}0, 1, 2]] : tensor<?x?x2xf32> into tensor<?xf32>
// CHECK: %[[RESIDUAL:.+]] = tensor.collapse_shape %arg6 {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[FIRST0:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[END0:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %arg7 : tensor<?x8x16xf32>, tensor<1x16x32xf32>) {{.*}} attrs = {tfm.gemm}
// CHECK: %[[OUT0:.+]] = scf.for %[[P:.+]] = %[[FIRST0]] to %[[END0]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[RESIDUAL]]) -> (tensor<?x8xf32>)
// CHECK: %[[T:.+]] = tensor.extract %[[TOKENS]][%[[P]]] : tensor<?xi32>
// CHECK: %[[ROW:.+]] = arith.index_cast %[[T]] : i32 to index
// CHECK: %[[W:.+]] = tensor.extract %[[RW]][%[[P]]] : tensor<?xf32>
// CHECK: tensor.extract_slice %[[ACC]][%[[ROW]], 0] [1, 8] [1, 1]
// CHECK: arith.mulf %[[W]], %{{.+}} : f32
// CHECK: arith.addf
// CHECK: tensor.insert_slice %{{.+}} into %[[ACC]][%[[ROW]], 0] [1, 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %arg8 : tensor<?x8x16xf32>, tensor<1x16x32xf32>) {{.*}} attrs = {tfm.gemm}
// CHECK: %[[OUT1:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[OUT0]]) -> (tensor<?x8xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x?x8xf32>)
// CHECK: tensor.extract %[[OUT1]]
// CHECK-NOT: tfm.
func.func @grouped_linear_scatter(%x: tensor<?x?x2x16xf32>, %s: tensor<3xi32>, %v0: tensor<8x16xf32>, %v1: tensor<8x16xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x?x2xf32>, %r: tensor<?x?x8xf32>, %p0: tensor<1x16x32xf32> {tfm.packs = 2 : i64, tfm.segments = 1 : i64}, %p1: tensor<1x16x32xf32> {tfm.packs = 3 : i64, tfm.segments = 1 : i64}) -> tensor<?x?x8xf32> {
  %y = tfm.grouped_linear %x groups %s weights(%v0, %v1) scatter %t, %rw residual %r : (tensor<?x?x2x16xf32>, tensor<3xi32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Static shapes and inputs of one row (a fuzzer's IR, not the frontend's):
// the routing's rows are [1, E] for a rank-1 input, and each result takes
// the op's type (a cast where only the run time knew the size).
// CHECK-LABEL: func.func @route_rank1(
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
// CHECK: %[[T:.+]] = tensor.cast %{{.+}} : tensor<?xi32> to tensor<2xi32>
// CHECK: %[[W:.+]] = tensor.cast %{{.+}} : tensor<?xf32> to tensor<2xf32>
// CHECK: return %[[T]], %[[W]], %{{.+}} : tensor<2xi32>, tensor<2xf32>, tensor<4xi32>
// CHECK-LABEL: func.func @scatter_rank1(
// CHECK: %[[ROW:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<?x8xf32> into tensor<?xf32>
// CHECK: %[[OUT:.+]] = tensor.cast %[[ROW]] : tensor<?xf32> to tensor<8xf32>
// CHECK: return %[[OUT]] : tensor<8xf32>
// CHECK-LABEL: func.func @grouped_static(
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<4x2x8xf32> into tensor<8x8xf32>
// CHECK: return %{{.+}} : tensor<4x2x16xf32>
// CHECK-NOT: tfm.
func.func @route_rank1(%logits: tensor<3xf32>) -> (tensor<2xi32>, tensor<2xf32>, tensor<4xi32>) {
  %t, %w, %s = tfm.route_experts %logits top 2 : tensor<3xf32> -> tensor<2xi32>, tensor<2xf32>, tensor<4xi32>
  return %t, %w, %s : tensor<2xi32>, tensor<2xf32>, tensor<4xi32>
}
func.func @scatter_rank1(%x: tensor<2x16xf32>, %s: tensor<3xi32>, %v0: tensor<8x16xf32>, %v1: tensor<8x16xf32>, %t: tensor<2xi32>, %rw: tensor<2xf32>) -> tensor<8xf32> {
  %y = tfm.grouped_linear %x groups %s weights(%v0, %v1) scatter %t, %rw : (tensor<2x16xf32>, tensor<3xi32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @grouped_static(%x: tensor<4x2x8xf32>, %s: tensor<3xi32>, %w0: tensor<16x8xf32>, %w1: tensor<16x8xf32>) -> tensor<4x2x16xf32> {
  %h = tfm.grouped_linear %x groups %s weights(%w0, %w1) : (tensor<4x2x8xf32>, tensor<3xi32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x2x16xf32>
  return %h : tensor<4x2x16xf32>
}

// -----

// Mamba's causal depthwise conv (width 3): the input with 2 zero rows
// before it (tensor.pad), then one linalg.generic over the rows, every loop
// parallel: the input row itself first (its loop sizes: the padded input
// has 2 rows more), the padded input at rows t and t + 1 (the rows before
// row t), the weight's 3 taps of the channel, the bias; the bias plus each
// tap times its row (FMAs, oldest row first), then SiLU (x / (1 + e^-x)).
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[NEXT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1 + 1, d2)>
// CHECK-DAG: #[[TAP0:.+]] = affine_map<(d0, d1, d2) -> (d2, 0, 0)>
// CHECK-DAG: #[[TAP1:.+]] = affine_map<(d0, d1, d2) -> (d2, 0, 1)>
// CHECK-DAG: #[[TAP2:.+]] = affine_map<(d0, d1, d2) -> (d2, 0, 2)>
// CHECK-DAG: #[[CH:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @causal_conv1d(
// CHECK: %[[PAD:.+]] = tensor.pad %arg0 low[0, 2, 0] high[0, 0, 0]
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[NEXT]], #[[TAP0]], #[[TAP1]], #[[TAP2]], #[[CH]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %[[PAD]], %[[PAD]], %arg1, %arg1, %arg1, %arg2 : tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24x1x3xf32>, tensor<24x1x3xf32>, tensor<24x1x3xf32>, tensor<24xf32>)
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: f32, %[[X0:[a-z0-9_]+]]: f32, %[[X1:[a-z0-9_]+]]: f32, %[[W0:[a-z0-9_]+]]: f32, %[[W1:[a-z0-9_]+]]: f32, %[[W2:[a-z0-9_]+]]: f32, %[[B:[a-z0-9_]+]]: f32,
// CHECK-NEXT: %[[A0:.+]] = math.fma %[[W0]], %[[X0]], %[[B]] : f32
// CHECK-NEXT: %[[A1:.+]] = math.fma %[[W1]], %[[X1]], %[[A0]] : f32
// CHECK-NEXT: %[[A2:.+]] = math.fma %[[W2]], %[[X]], %[[A1]] : f32
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[A2]] : f32
// CHECK-NEXT: %[[E:.+]] = math.exp %[[NEG]] : f32
// CHECK-NEXT: %[[D:.+]] = arith.addf %[[E]], %{{.+}} : f32
// CHECK-NEXT: arith.divf %[[A2]], %[[D]] : f32
// CHECK: return %[[OUT]] : tensor<?x?x24xf32>
// CHECK-NOT: tfm.
func.func @causal_conv1d(%x: tensor<?x?x24xf32>, %w: tensor<24x1x3xf32>, %b: tensor<24xf32>) -> tensor<?x?x24xf32> {
  %0 = tfm.causal_conv1d %x, %w, %b : (tensor<?x?x24xf32>, tensor<24x1x3xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
  return %0 : tensor<?x?x24xf32>
}

// -----

// With `offset state` (a decode step): the state handle is its flat buffer
// (2 sequences x (2 window rows + 4 states) x 24 channels = 288 floats);
// the windows are its start, [2, 2, 24], viewed for the step's %batch
// sequences, read (restrict) or zeros at offset 0 (the buffer then holds an
// earlier sequence's), and put before the rows instead of the padding. The
// window after the step, the extended rows [n, n + 2), is written back
// into the same view.
// CHECK-LABEL: func.func @causal_conv1d_state(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: memref<288xf32>) -> tensor<?x?x24xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[BATCH:.+]] = tensor.dim %arg0, %[[C0]] : tensor<?x?x24xf32>
// CHECK: %[[ALL:.+]] = memref.reinterpret_cast %[[S]] to offset: [0], sizes: [2, 2, 24], strides: [48, 24, 1]
// CHECK: %[[WIN:.+]] = memref.subview %[[ALL]][0, 0, 0] [%[[BATCH]], 2, 24] [1, 1, 1]
// CHECK: %[[READ:.+]] = bufferization.to_tensor %[[WIN]] restrict : {{.+}} to tensor<?x2x24xf32>
// CHECK: %[[ZEROS:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<?x2x24xf32>)
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[POS]], %[[C0]] : index
// CHECK: %[[START:.+]] = arith.select %[[FIRST]], %[[ZEROS]], %[[READ]] : tensor<?x2x24xf32>
// CHECK: %[[W:.+]] = tensor.insert_slice %[[START]] into %{{.+}}[0, 0, 0]
// CHECK: %[[EXT:.+]] = tensor.insert_slice %arg0 into %[[W]][0, 2, 0]
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%arg0, %[[EXT]], %[[EXT]], %arg1, %arg1, %arg1, %arg2 :
// CHECK: %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x24xf32>
// CHECK: %[[LAST:.+]] = tensor.extract_slice %[[EXT]][0, %[[N]], 0] [%{{.+}}, 2, 24] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x2x24xf32>
// CHECK: bufferization.materialize_in_destination %[[LAST]] in writable %[[WIN]] : (tensor<?x2x24xf32>, memref<?x2x24xf32, strided<[48, 24, 1]>>) -> ()
// CHECK: return %[[OUT]] : tensor<?x?x24xf32>
// CHECK-NOT: tfm.
func.func @causal_conv1d_state(%x: tensor<?x?x24xf32>, %w: tensor<24x1x3xf32>, %b: tensor<24xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x?x24xf32> {
  %0 = tfm.causal_conv1d %x, %w, %b offset %p state(%s) : (tensor<?x?x24xf32>, tensor<24x1x3xf32>, tensor<24xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x?x24xf32>
  return %0 : tensor<?x?x24xf32>
}

// -----

// The selective scan (80 channels, 2 states): an scf.forall over the
// sequences and blocks of 64 channels (2: 64, then 16), each writing its
// [1, n, count] block of the result and its [1, 2, count] block of h. A
// task's h starts at zeros, written per vector of 16 channels (the lanes
// past the block's channels masked off); then an scf.for over blocks of 64
// rows, in which each vector goes through the block's rows: it reads A =
// -exp(a_log) (a column of a_log [80, 2] per state, across its rows), D
// and its h, then an scf.for over the rows carries the block and h (one
// vector per state): softplus(delta) (log1p(exp(min(x, 20))), x itself
// above 20), per state exp(dt A) h + dt u b[t] and y += h c[t] (FMAs, y
// from D u), then y SiLU(z) written at the row; h is written back for the
// next block of rows.
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @selective_scan(
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[LIMIT:.+]] = arith.constant dense<2.000000e+01> : vector<16xf32>
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-DAG: %[[IOTA:.+]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xindex>
// CHECK: %[[BATCH:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x80xf32>
// CHECK: %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x80xf32>
// CHECK: %[[RES:.+]]:2 = scf.forall (%[[SEQ:.+]], %[[TASK:.+]]) in (%[[BATCH]], 2) shared_outs(%[[OUT:.+]] = %{{.+}}, %[[HOUT:.+]] = %{{.+}}) -> (tensor<?x?x80xf32>, tensor<?x2x80xf32>) {
// CHECK: %[[C0:.+]] = arith.muli %[[TASK]], %[[C64]] : index
// CHECK: %[[COUNT:.+]] = arith.minsi %{{.+}}, %[[C64]] : index
// CHECK: %[[BLOCK:.+]] = tensor.extract_slice %[[OUT]][%[[SEQ]], 0, %[[C0]]] [1, %[[N]], %[[COUNT]]] [1, 1, 1] : tensor<?x?x80xf32> to tensor<1x?x?xf32>
// CHECK: %[[HBLOCK:.+]] = tensor.extract_slice %[[HOUT]][%[[SEQ]], 0, %[[C0]]] [1, 2, %[[COUNT]]] [1, 1, 1] : tensor<?x2x80xf32> to tensor<1x2x?xf32>
// CHECK: %[[H0:.+]] = scf.for %[[IC:.+]] = %{{.+}} to %[[COUNT]] step %[[C16]] iter_args(%[[HI:.+]] = %[[HBLOCK]]) -> (tensor<1x2x?xf32>) {
// CHECK: %[[IMASK:.+]] = arith.cmpi sgt, %{{.+}}, %[[IOTA]] : vector<16xindex>
// CHECK: %[[Z0:.+]] = vector.transfer_write %[[ZEROS]], %[[HI]][%{{.+}}, %{{.+}}, %[[IC]]], %[[IMASK]] {in_bounds = [true]} : vector<16xf32>, tensor<1x2x?xf32>
// CHECK: vector.transfer_write %[[ZEROS]], %[[Z0]][%{{.+}}, %{{.+}}, %[[IC]]], %[[IMASK]]
// CHECK: %[[BLOCKS:.+]]:2 = scf.for %[[R0:.+]] = %{{.+}} to %[[N]] step %[[C64]] iter_args(%[[BO:.+]] = %[[BLOCK]], %[[BH:.+]] = %[[H0]]) -> (tensor<1x?x?xf32>, tensor<1x2x?xf32>) {
// CHECK: %[[R1:.+]] = arith.minsi %[[N]], %{{.+}} : index
// CHECK: %[[CHUNKS:.+]]:2 = scf.for %[[C:.+]] = %{{.+}} to %[[COUNT]] step %[[C16]] iter_args(%[[CO:.+]] = %[[BO]], %[[CHH:.+]] = %[[BH]]) -> (tensor<1x?x?xf32>, tensor<1x2x?xf32>) {
// CHECK: %[[CH:.+]] = arith.addi %[[C0]], %[[C]] : index
// CHECK: %[[LANES:.+]] = vector.broadcast %{{.+}} : index to vector<16xindex>
// CHECK: %[[MASK:.+]] = arith.cmpi sgt, %[[LANES]], %[[IOTA]] : vector<16xindex>
// CHECK: %[[HS0:.+]] = vector.transfer_read %[[CHH]][%{{.+}}, %{{.+}}, %[[C]]], %{{.+}}, %[[MASK]] {in_bounds = [true]} : tensor<1x2x?xf32>, vector<16xf32>
// CHECK: %[[HS1:.+]] = vector.transfer_read %[[CHH]][%{{.+}}, %{{.+}}, %[[C]]], %{{.+}}, %[[MASK]]
// CHECK: %[[AL0:.+]] = vector.transfer_read %arg2[%[[CH]], %{{.+}}], %{{.+}}, %[[MASK]] {in_bounds = [true], permutation_map = #[[COL]]} : tensor<80x2xf32>, vector<16xf32>
// CHECK: %[[E0:.+]] = math.exp %[[AL0]] : vector<16xf32>
// CHECK: %[[A0:.+]] = arith.negf %[[E0]] : vector<16xf32>
// CHECK: vector.transfer_read %arg2[%[[CH]], %{{.+}}], %{{.+}}, %[[MASK]] {in_bounds = [true], permutation_map = #[[COL]]} : tensor<80x2xf32>, vector<16xf32>
// CHECK: %[[SKIP:.+]] = vector.transfer_read %arg5[%[[CH]]], %{{.+}}, %[[MASK]] {in_bounds = [true]} : tensor<80xf32>, vector<16xf32>
// CHECK: %[[ROWS:.+]]:3 = scf.for %[[T:.+]] = %[[R0]] to %[[R1]] step %{{.+}} iter_args(%[[O:.+]] = %[[CO]], %[[H0V:.+]] = %[[HS0]], %[[H1V:.+]] = %[[HS1]]) -> (tensor<1x?x?xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: %[[U:.+]] = vector.transfer_read %arg0[%[[SEQ]], %[[T]], %[[CH]]], %{{.+}}, %[[MASK]] {in_bounds = [true]} : tensor<?x?x80xf32>, vector<16xf32>
// CHECK: %[[DELTA:.+]] = vector.transfer_read %arg1[%[[SEQ]], %[[T]], %[[CH]]], %{{.+}}, %[[MASK]]
// CHECK: %[[CLAMPED:.+]] = arith.minimumf %[[DELTA]], %[[LIMIT]] : vector<16xf32>
// CHECK: %[[EXP:.+]] = math.exp %[[CLAMPED]] : vector<16xf32>
// CHECK: %[[SOFT:.+]] = math.log1p %[[EXP]] : vector<16xf32>
// CHECK: %[[ABOVE:.+]] = arith.cmpf ogt, %[[DELTA]], %[[LIMIT]] : vector<16xf32>
// CHECK: %[[DT:.+]] = arith.select %[[ABOVE]], %[[DELTA]], %[[SOFT]] : vector<16xi1>, vector<16xf32>
// CHECK: %[[DTU:.+]] = arith.mulf %[[DT]], %[[U]] : vector<16xf32>
// CHECK: %[[DU:.+]] = arith.mulf %[[SKIP]], %[[U]] : vector<16xf32>
// CHECK: %[[BS:.+]] = tensor.extract %arg3[%[[SEQ]], %[[T]], %{{.+}}] : tensor<?x?x2xf32>
// CHECK: %[[BV:.+]] = vector.broadcast %[[BS]] : f32 to vector<16xf32>
// CHECK: %[[CS:.+]] = tensor.extract %arg4[%[[SEQ]], %[[T]], %{{.+}}] : tensor<?x?x2xf32>
// CHECK: %[[CV:.+]] = vector.broadcast %[[CS]] : f32 to vector<16xf32>
// CHECK: %[[DTA:.+]] = arith.mulf %[[DT]], %[[A0]] : vector<16xf32>
// CHECK: %[[DECAY:.+]] = math.exp %[[DTA]] : vector<16xf32>
// CHECK: %[[IN:.+]] = arith.mulf %[[DTU]], %[[BV]] : vector<16xf32>
// CHECK: %[[NH0:.+]] = math.fma %[[DECAY]], %[[H0V]], %[[IN]] : vector<16xf32>
// CHECK: %[[Y0:.+]] = math.fma %[[NH0]], %[[CV]], %[[DU]] : vector<16xf32>
// CHECK: %[[NH1:.+]] = math.fma %{{.+}}, %[[H1V]], %{{.+}} : vector<16xf32>
// CHECK: %[[Y:.+]] = math.fma %[[NH1]], %{{.+}}, %[[Y0]] : vector<16xf32>
// CHECK: %[[Z:.+]] = vector.transfer_read %arg6[%[[SEQ]], %[[T]], %[[CH]]], %{{.+}}, %[[MASK]]
// CHECK: %[[GATE:.+]] = arith.divf %[[Z]], %{{.+}} : vector<16xf32>
// CHECK: %[[GATED:.+]] = arith.mulf %[[Y]], %[[GATE]] : vector<16xf32>
// CHECK: %[[W:.+]] = vector.transfer_write %[[GATED]], %[[O]][%{{.+}}, %[[T]], %[[C]]], %[[MASK]] {in_bounds = [true]} : vector<16xf32>, tensor<1x?x?xf32>
// CHECK: scf.yield %[[W]], %[[NH0]], %[[NH1]] : tensor<1x?x?xf32>, vector<16xf32>, vector<16xf32>
// CHECK: %[[HW0:.+]] = vector.transfer_write %[[ROWS]]#1, %[[CHH]][%{{.+}}, %{{.+}}, %[[C]]], %[[MASK]] {in_bounds = [true]} : vector<16xf32>, tensor<1x2x?xf32>
// CHECK: %[[HW1:.+]] = vector.transfer_write %[[ROWS]]#2, %[[HW0]][%{{.+}}, %{{.+}}, %[[C]]], %[[MASK]]
// CHECK: scf.yield %[[ROWS]]#0, %[[HW1]] : tensor<1x?x?xf32>, tensor<1x2x?xf32>
// CHECK: scf.yield %[[CHUNKS]]#0, %[[CHUNKS]]#1 : tensor<1x?x?xf32>, tensor<1x2x?xf32>
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %[[BLOCKS]]#0 into %[[OUT]][%[[SEQ]], 0, %[[C0]]] [1, %[[N]], %[[COUNT]]] [1, 1, 1] : tensor<1x?x?xf32> into tensor<?x?x80xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %[[BLOCKS]]#1 into %[[HOUT]][%[[SEQ]], 0, %[[C0]]] [1, 2, %[[COUNT]]] [1, 1, 1] : tensor<1x2x?xf32> into tensor<?x2x80xf32>
// CHECK-NOT: bufferization.materialize_in_destination
// CHECK: return %[[RES]]#0 : tensor<?x?x80xf32>
// CHECK-NOT: tfm.
func.func @selective_scan(%u: tensor<?x?x80xf32>, %dt: tensor<?x?x80xf32>, %a: tensor<80x2xf32>, %bm: tensor<?x?x2xf32>, %cm: tensor<?x?x2xf32>, %d: tensor<80xf32>, %z: tensor<?x?x80xf32>) -> tensor<?x?x80xf32> {
  %0 = tfm.selective_scan %u, %dt, %a, %bm, %cm, %d, %z : (tensor<?x?x80xf32>, tensor<?x?x80xf32>, tensor<80x2xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<80xf32>, tensor<?x?x80xf32>) -> tensor<?x?x80xf32>
  return %0 : tensor<?x?x80xf32>
}

// -----

// With `offset state`: the scan states are the buffer's floats from 320 on
// (after 2 x 2 window rows x 80 channels), [2, 2, 80], viewed for the
// step's %batch sequences and read (restrict); each vector of a task's
// channels starts its h from them, or from zeros at offset 0. The forall's
// h ([batch, 2, 80], h after the last row) is written back into the same
// view after the loop.
// CHECK-LABEL: func.func @selective_scan_state(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: memref<640xf32>) -> tensor<?x1x80xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: %[[BATCH:.+]] = tensor.dim %arg0, %[[C0]] : tensor<?x1x80xf32>
// CHECK: %[[ALL:.+]] = memref.reinterpret_cast %[[S]] to offset: [320], sizes: [2, 2, 80], strides: [160, 80, 1]
// CHECK: %[[VIEW:.+]] = memref.subview %[[ALL]][0, 0, 0] [%[[BATCH]], 2, 80] [1, 1, 1]
// CHECK: %[[HELD:.+]] = bufferization.to_tensor %[[VIEW]] restrict : {{.+}} to tensor<?x2x80xf32>
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[POS]], %[[C0]] : index
// CHECK: %[[RES:.+]]:2 = scf.forall (%[[SEQ:.+]], %[[TASK:.+]]) in (%[[BATCH]], 2) shared_outs(%[[OUT:.+]] = %{{.+}}, %[[HOUT:.+]] = %{{.+}}) -> (tensor<?x1x80xf32>, tensor<?x2x80xf32>) {
// CHECK: %[[HBLOCK:.+]] = tensor.extract_slice %[[HOUT]][%[[SEQ]], 0, %{{.+}}] [1, 2, %{{.+}}] [1, 1, 1] : tensor<?x2x80xf32> to tensor<1x2x?xf32>
// CHECK: scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[HB:.+]] = %[[HBLOCK]]) -> (tensor<1x2x?xf32>) {
// CHECK: %[[CH:.+]] = arith.addi %{{.+}}, %[[C]] : index
// CHECK: %[[R0:.+]] = vector.transfer_read %[[HELD]][%[[SEQ]], %{{.+}}, %[[CH]]], %{{.+}}, %[[MASK:.+]] {in_bounds = [true]} : tensor<?x2x80xf32>, vector<16xf32>
// CHECK: %[[H0:.+]] = arith.select %[[FIRST]], %[[ZEROS]], %[[R0]] : vector<16xf32>
// CHECK: %[[W0:.+]] = vector.transfer_write %[[H0]], %[[HB]][%{{.+}}, %{{.+}}, %[[C]]], %[[MASK]] {in_bounds = [true]} : vector<16xf32>, tensor<1x2x?xf32>
// CHECK: %[[R1:.+]] = vector.transfer_read %[[HELD]][%[[SEQ]], %{{.+}}, %[[CH]]], %{{.+}}, %[[MASK]]
// CHECK: %[[H1:.+]] = arith.select %[[FIRST]], %[[ZEROS]], %[[R1]] : vector<16xf32>
// CHECK: vector.transfer_write %[[H1]], %[[W0]][%{{.+}}, %{{.+}}, %[[C]]], %[[MASK]]
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[OUT]]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[HOUT]][%[[SEQ]], 0, %{{.+}}] [1, 2, %{{.+}}] [1, 1, 1] : tensor<1x2x?xf32> into tensor<?x2x80xf32>
// CHECK: bufferization.materialize_in_destination %[[RES]]#1 in writable %[[VIEW]] : (tensor<?x2x80xf32>, memref<?x2x80xf32, strided<[160, 80, 1], offset: 320>>) -> ()
// CHECK: return %[[RES]]#0 : tensor<?x1x80xf32>
// CHECK-NOT: tfm.
func.func @selective_scan_state(%u: tensor<?x1x80xf32>, %dt: tensor<?x1x80xf32>, %a: tensor<80x2xf32>, %bm: tensor<?x1x2xf32>, %cm: tensor<?x1x2xf32>, %d: tensor<80xf32>, %z: tensor<?x1x80xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 80, convWidth = 3, stateSize = 2>) -> tensor<?x1x80xf32> {
  %0 = tfm.selective_scan %u, %dt, %a, %bm, %cm, %d, %z offset %p state(%s) : (tensor<?x1x80xf32>, tensor<?x1x80xf32>, tensor<80x2xf32>, tensor<?x1x2xf32>, tensor<?x1x2xf32>, tensor<80xf32>, tensor<?x1x80xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 80, convWidth = 3, stateSize = 2>) -> tensor<?x1x80xf32>
  return %0 : tensor<?x1x80xf32>
}

// -----

// A windowed cache (a window of 3, 1 global token: 4 slots of 16
// positions, keys [1, 2, 4, 4] strides 32, 16, 1, 4). tfm.cache_window
// gathers into a new tensor the globals (slots [0, min(1, pos))), the
// window the ring keeps in two runs (from slot 1 + (first - 1) mod 3 up to
// the ring's end, then from slot 1) and the new rows at their offset;
// tfm.cache_append writes the new globals at their positions and the
// others, but those the same call replaces, in two runs of slots likewise.
// CHECK-LABEL: func.func @windowed_cache(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: index, %[[C:[a-z0-9]+]]: memref<64xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x4xf32>
// CHECK: %[[G:.*]] = arith.minsi %[[POS]], %c1 : index
// CHECK: %[[OFF:.*]] = arith.addi %[[G]], %{{.*}} : index
// CHECK: %[[RING:.*]] = arith.remsi %{{.*}}, %c3 : index
// CHECK: %[[START:.*]] = arith.addi %[[RING]], %c1 : index
// CHECK: %[[KA:.*]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [1, 2, 4, 4], strides: [32, 16, 1, 4]
// CHECK: memref.subview %[[KA]][0, 0, %c0, 0] [%{{.*}}, 2, %[[G]], 4]
// CHECK: tensor.insert_slice
// CHECK: memref.subview %{{.*}}[0, 0, %[[START]], 0]
// CHECK: tensor.insert_slice %{{.*}}[0, 0, %[[G]], 0]
// CHECK: memref.subview %{{.*}}[0, 0, %c1, 0]
// CHECK: tensor.insert_slice
// CHECK: %[[KEYS:.*]] = tensor.insert_slice %[[K]] into %{{.*}}[0, 0, %[[OFF]], 0]
// CHECK: bufferization.materialize_in_destination
// CHECK: arith.remsi %{{.*}}, %c3 : index
// CHECK: bufferization.materialize_in_destination
// CHECK: return %[[KEYS]], %{{.*}}, %[[OFF]]
// CHECK-NOT: tfm.
func.func @windowed_cache(%pos: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4, window = 3, globals = 1>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, index) {
  %wk, %wv, %off = tfm.cache_window %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4, window = 3, globals = 1>, tensor<?x2x?x4xf32>
  %len = tfm.cache_append %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4, window = 3, globals = 1>, tensor<?x2x?x4xf32>
  return %wk, %wv, %off : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, index
}

// -----

// New keys of a static batch: the gathered keys keep the op's type (the
// batch left open), as the attention that reads them expects.
// CHECK-LABEL: func.func @windowed_cache_static_batch(
// CHECK: %[[G:.*]] = tensor.insert_slice %arg1 into %{{.*}} : tensor<1x2x1x4xf32> into tensor<1x2x?x4xf32>
// CHECK: %[[KEYS:.*]] = tensor.cast %[[G]] : tensor<1x2x?x4xf32> to tensor<?x2x?x4xf32>
// CHECK: return %[[KEYS]]
func.func @windowed_cache_static_batch(%c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4, window = 2, globals = 1>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>, %pos: index) -> (tensor<?x2x?x4xf32>, index) {
  %wk, %wv, %off = tfm.cache_window %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 4, window = 2, globals = 1>, tensor<1x2x1x4xf32>
  return %wk, %off : tensor<?x2x?x4xf32>, index
}
