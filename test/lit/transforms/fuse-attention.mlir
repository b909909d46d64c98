// RUN: tfm-opt %s -split-input-file --tfm-fuse-attention | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-fuse-attention=remarks=true -verify-diagnostics -o /dev/null
// RUN: tfm-opt %s -split-input-file --tfm-optimize | FileCheck %s --check-prefix=PIPELINE

// --tfm-fuse-attention: a self-attention tfm.multi_head_attention becomes
// one tfm.linear over the stacked Q/K/V weight, one tfm.flash_attention and
// the out_proj tfm.linear; every case it must leave alone says why in a
// remark.

// Causal scaled dot-product with rotary positions: every attribute carries
// over to the flash op.
// CHECK-LABEL: func.func @causal_rope(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.flash_attention <scaled_dot> %[[QKV]] heads 4 causal {rope = #tfm.rope<interleaved>, rope_base = 5.000000e+05 : f32} : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[O]], %[[WO]], %[[BO]] : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @causal_rope(
// PIPELINE: tfm.flash_attention <scaled_dot> %{{.+}} heads 4 causal
// PIPELINE-NOT: tfm.multi_head_attention
func.func @causal_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @causal_rope: fused the Q, K and V projections into one GEMM over the stacked in_proj weight, and the scores, scale, causal mask (as loop bounds), softmax and product with V into one tfm.flash_attention (the score matrix is never stored)}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<interleaved>, rope_base = 5.0e+05 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Bilinear and additive scores: the score parameters move to the flash op.
// Static shapes stay static; two attentions in one function are both fused.
// CHECK-LABEL: func.func @score_params(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x16xf32>, %[[WI:[a-z0-9]+]]: tensor<48x16xf32>, %[[BI:[a-z0-9]+]]: tensor<48xf32>, %[[WO:[a-z0-9]+]]: tensor<16x16xf32>, %[[BO:[a-z0-9]+]]: tensor<16xf32>, %[[W:[a-z0-9]+]]: tensor<2x8x8xf32>, %[[WK:[a-z0-9]+]]: tensor<2x6x8xf32>, %[[WQ:[a-z0-9]+]]: tensor<2x6x8xf32>, %[[V:[a-z0-9]+]]: tensor<2x6xf32>)
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x5x48xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.flash_attention <bilinear> %[[QKV]] heads 2 params(%[[W]]) : (tensor<2x5x48xf32>, tensor<2x8x8xf32>) -> tensor<2x5x16xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[O]], %[[WO]], %[[BO]]
// CHECK-NEXT: %[[QKV2:.+]] = tfm.linear %[[Y]], %[[WI]], %[[BI]]
// CHECK-NEXT: %[[O2:.+]] = tfm.flash_attention <additive> %[[QKV2]] heads 2 params(%[[WK]], %[[WQ]], %[[V]]) causal : (tensor<2x5x48xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6xf32>) -> tensor<2x5x16xf32>
// CHECK-NEXT: %[[Y2:.+]] = tfm.linear %[[O2]], %[[WO]], %[[BO]]
// CHECK-NEXT: return %[[Y2]]
func.func @score_params(%x: tensor<2x5x16xf32>, %wi: tensor<48x16xf32>, %bi: tensor<48xf32>, %wo: tensor<16x16xf32>, %bo: tensor<16xf32>, %w: tensor<2x8x8xf32>, %wk: tensor<2x6x8xf32>, %wq: tensor<2x6x8xf32>, %v: tensor<2x6xf32>) -> tensor<2x5x16xf32> {
  // expected-remark @+1 {{in @score_params: fused the Q, K and V projections into one GEMM over the stacked in_proj weight, and the scores, softmax and product with V into one tfm.flash_attention (the score matrix is never stored)}}
  %0 = tfm.multi_head_attention <bilinear> %x heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%w) : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<2x8x8xf32>) -> tensor<2x5x16xf32>
  // expected-remark @+1 {{in @score_params: fused the Q, K and V projections into one GEMM over the stacked in_proj weight, and the scores, causal mask (as loop bounds), softmax and product with V into one tfm.flash_attention (the score matrix is never stored)}}
  %1 = tfm.multi_head_attention <additive> %0 heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk, %wq, %v) causal : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6xf32>) -> tensor<2x5x16xf32>
  return %1 : tensor<2x5x16xf32>
}

// -----

// Cross-attention over a memory: queries and keys/values project different
// inputs; not touched.
// CHECK-LABEL: func.func @cross_attention(
// PIPELINE-LABEL: func.func @cross_attention(
// CHECK-NEXT: %0 = tfm.multi_head_attention <dot> %arg0 memory %arg1 heads 4
// CHECK-NEXT: return %0
func.func @cross_attention(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @cross_attention: multi-head attention not fused into a QKV GEMM and tfm.flash_attention: cross-attention: the queries and the keys/values project different inputs, so there is no one Q/K/V GEMM}}
  %0 = tfm.multi_head_attention <dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A key/value cache (incremental decoding), appended to or only read: not
// touched.
// CHECK-LABEL: func.func @cached(
// CHECK-NEXT: %0 = tfm.multi_head_attention <scaled_dot> %arg0 heads 4 cache(%arg5 at %arg6)
// CHECK-NEXT: %1 = tfm.multi_head_attention <scaled_dot> %0 heads 4 cache(%arg7 upto %arg6)
// CHECK-NEXT: return %1
func.func @cached(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %pos: index, %m: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @cached: multi-head attention not fused into a QKV GEMM and tfm.flash_attention: it appends to a key/value cache (incremental decoding), which tfm.flash_attention does not hold}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @cached: multi-head attention not fused into a QKV GEMM and tfm.flash_attention: it attends over a key/value cache (incremental decoding), which tfm.flash_attention does not read}}
  %1 = tfm.multi_head_attention <scaled_dot> %0 heads 4 cache(%m upto %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %1 : tensor<?x?x32xf32>
}
