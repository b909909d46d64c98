// RUN: tfm-opt %s -split-input-file --tfm-decompose-attention | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-decompose-attention | FileCheck %s --check-prefix=GONE
// RUN: tfm-opt %s -split-input-file --tfm-decompose-attention=remarks=true -verify-diagnostics -o /dev/null
// RUN: tfm-opt %s -split-input-file --tfm-optimize | FileCheck %s --check-prefix=PIPELINE
// RUN: tfm-opt %s -split-input-file --tfm-optimize | FileCheck %s --check-prefix=GONE

// --tfm-decompose-attention: every form of tfm.multi_head_attention (self,
// self with rotary positions, self over a key/value cache it appends to,
// cross over a memory, cross over a memory appended to a cache, cross over
// a read-only cache) becomes tfm.linear projections (tfm.slice_rows picks
// in_proj's Q rows or its K/V rows where one GEMM cannot make all three),
// tfm.split_heads views of the parts of each GEMM, tfm.rotary, explicit
// cache accesses, one tfm.attention (performer: two tfm.feature_map and one
// tfm.linear_attention instead), tfm.merge_heads and the out_proj
// tfm.linear. Each rewrite says what it became in a remark.

// No tfm.multi_head_attention is left in any function, by the pass alone or
// in the pipeline.
// GONE-NOT: tfm.multi_head_attention
// GONE: func.func @score_params(
// GONE-NOT: tfm.multi_head_attention

// Self-attention, not causal: one GEMM over the whole stacked weight, its
// three thirds split into the heads' Q, K and V in that order.
// CHECK-LABEL: func.func @self_attention(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[Q]], %[[K]], %[[V]] : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @self_attention(
// PIPELINE: tfm.split_heads %{{.+}} part 1 of 3 into 4 heads
// PIPELINE: tfm.attention <scaled_dot>
// PIPELINE: return
func.func @self_attention(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @self_attention: decomposed into one Q/K/V GEMM over the stacked in_proj weight, one tfm.attention (scores, scale, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Causal self-attention with rotary positions: Q and K are rotated (style
// and base carried over, no offset without a cache), V is not; the
// attention is causal and reads the rotated Q and K.
// CHECK-LABEL: func.func @causal_rope(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads :
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NEXT: %[[RQ:.+]] = tfm.rotary <interleaved> %[[Q]] {base = 5.000000e+05 : f32} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[RK:.+]] = tfm.rotary <interleaved> %[[K]] {base = 5.000000e+05 : f32} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[RQ]], %[[RK]], %[[V]] causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] :
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @causal_rope(
// PIPELINE: tfm.rotary <interleaved>
// PIPELINE: tfm.attention <scaled_dot> {{.+}} causal :
// PIPELINE: return
func.func @causal_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @causal_rope: decomposed into one Q/K/V GEMM over the stacked in_proj weight, rotary positions of Q and K, one tfm.attention (scores, scale, causal mask, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<interleaved>, rope_base = 5.0e+05 : f32} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A decode step over a key/value cache (self-attention appending at %pos):
// Q and K rotated from position %pos, the rotated K and the V appended at
// %pos, then every position the cache holds after the append (the length
// cache_append returns) read for the query's batch; the attention is causal
// with its queries at offset %pos among the keys.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x1x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>, %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %[[POS:[a-z0-9]+]]: index)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x1x96xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NEXT: %[[RQ:.+]] = tfm.rotary <half> %[[Q]] offset %[[POS]] : tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[RK:.+]] = tfm.rotary <half> %[[K]] offset %[[POS]] : tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[LEN:.+]] = tfm.cache_append %[[C]], %[[RK]], %[[V]] at %[[POS]] : <maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x1x32xf32>
// CHECK-NEXT: %[[KEYS:[a-z0-9_]+]], %[[VALUES:[a-z0-9_]+]] = tfm.cache_read %[[C]][%[[B]], %[[LEN]]] : <maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[RQ]], %[[KEYS]], %[[VALUES]] causal offset %[[POS]] : (tensor<?x4x1x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<?x4x1x8xf32> -> tensor<?x1x32xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @decode(
// PIPELINE: tfm.cache_append
// PIPELINE: tfm.cache_read
// PIPELINE: tfm.attention <scaled_dot> {{.+}} causal offset
// PIPELINE: return
func.func @decode(%x: tensor<?x1x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %pos: index) -> tensor<?x1x32xf32> {
  // expected-remark @+1 {{in @decode: decomposed into one Q/K/V GEMM over the stacked in_proj weight, rotary positions of Q and K, the new keys and values appended to the cache and every position so far read from it, one tfm.attention (scores, scale, causal mask, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x1x32xf32>
  return %0 : tensor<?x1x32xf32>
}

// -----

// A cached self-attention without rotary positions: no tfm.rotary, the
// GEMM's K and V parts appended as they are.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x6x32xf32>, {{.*}}, %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %[[POS:[a-z0-9]+]]: index)
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], {{.*}} -> tensor<2x6x96xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads : tensor<2x6x96xf32> -> tensor<2x4x6x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NOT: tfm.rotary
// CHECK-NEXT: %[[LEN:.+]] = tfm.cache_append %[[C]], %[[K]], %[[V]] at %[[POS]] :
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<2x6x32xf32>
// CHECK-NEXT: %[[KEYS:[a-z0-9_]+]], %[[VALUES:[a-z0-9_]+]] = tfm.cache_read %[[C]][%[[B]], %[[LEN]]] :
// CHECK-NEXT: %[[O:.+]] = tfm.attention <dot> %[[Q]], %[[KEYS]], %[[VALUES]] causal offset %[[POS]] : (tensor<2x4x6x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<2x4x6x8xf32>
// CHECK-NEXT: tfm.merge_heads %[[O]] :
func.func @prefill(%x: tensor<2x6x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, %pos: index) -> tensor<2x6x32xf32> {
  // expected-remark @+1 {{in @prefill: decomposed into one Q/K/V GEMM over the stacked in_proj weight, the new keys and values appended to the cache and every position so far read from it, one tfm.attention (scores, causal mask, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<2x6x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<2x6x32xf32>
  return %0 : tensor<2x6x32xf32>
}

// -----

// A sliding window of 3 with 1 global token over a windowed cache (GQA: 2
// key/value heads): the rows attend what tfm.cache_window gathers before
// their positions go into the ring, at the offset it returns.
// CHECK-LABEL: func.func @decode_window(
// CHECK-SAME: %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, window = 3, globals = 1>, %[[POS:[a-z0-9]+]]: index)
// CHECK: %[[K:.+]] = tfm.split_heads %{{.+}} part 0 of 2 into 2 heads
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %{{.+}} part 1 of 2 into 2 heads
// CHECK-NEXT: %[[WK:[a-zA-Z0-9_]+]], %[[WV:[a-zA-Z0-9_]+]], %[[OFF:[a-zA-Z0-9_]+]] = tfm.cache_window %[[C]], %[[K]], %[[V]] at %[[POS]] :
// CHECK-NEXT: tfm.cache_append %[[C]], %[[K]], %[[V]] at %[[POS]] :
// CHECK-NEXT: tfm.attention <scaled_dot> %{{.+}}, %[[WK]], %[[WV]] causal window 3 global 1 offset %[[OFF]] :
// CHECK-NOT: tfm.cache_read
// PIPELINE-LABEL: func.func @decode_window(
// PIPELINE: tfm.cache_window
// PIPELINE-NEXT: tfm.cache_append
func.func @decode_window(%x: tensor<?x1x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, window = 3, globals = 1>, %pos: index) -> tensor<?x1x32xf32> {
  // expected-remark @+1 {{in @decode_window: decomposed into a Q GEMM over in_proj's query rows and one K/V GEMM over its key and value rows (grouped-query: 2 key/value heads for 4 query heads, each read by 2), the global tokens' and the window's keys and values the cache keeps gathered with the new ones (tfm.cache_window), then the new ones stored in its ring, one tfm.attention (scores, scale, causal mask, sliding window of 3 with 1 global tokens, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %pos) in_proj(%wi) out_proj(%wo) causal window 3 global 1 : (tensor<?x1x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 2, maxSeq = 16, headDim = 8, window = 3, globals = 1>, index) -> tensor<?x1x32xf32>
  return %0 : tensor<?x1x32xf32>
}

// -----

// Cross-attention over a memory: Q projects the query with in_proj's first
// 32 rows (weight and bias), K and V project the memory with one GEMM over
// the other 64, the first half of its rows the keys, the second the
// values. Never causal, no offset.
// CHECK-LABEL: func.func @cross_attention(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[MEM:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[WQ:.+]] = tfm.slice_rows %[[WI]] from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[BQ:.+]] = tfm.slice_rows %[[BI]] from 0 : tensor<96xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[QR:.+]] = tfm.linear %[[X]], %[[WQ]], %[[BQ]] : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QR]] into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[WKV:.+]] = tfm.slice_rows %[[WI]] from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %[[BKV:.+]] = tfm.slice_rows %[[BI]] from 32 : tensor<96xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[KV:.+]] = tfm.linear %[[MEM]], %[[WKV]], %[[BKV]] : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[KV]] part 0 of 2 into 4 heads : tensor<?x?x64xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[KV]] part 1 of 2 into 4 heads : tensor<?x?x64xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <dot> %[[Q]], %[[K]], %[[V]] : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] :
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @cross_attention(
// PIPELINE: tfm.slice_rows %{{.+}} from 32
// PIPELINE: tfm.attention <dot>
// PIPELINE: return
func.func @cross_attention(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @cross_attention: decomposed into a Q GEMM over in_proj's first d_model rows and one K/V GEMM of the memory over the other 2 x d_model, one tfm.attention (scores, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Cross-attention over a memory that is also appended to a cache (the
// prefill of an encoder-decoder): the memory's K and V appended at %pos,
// then the cache read up to the length the append returns; the queries
// keep no offset (not causal).
// CHECK-LABEL: func.func @cross_append(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[MEM:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>, %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %[[POS:[a-z0-9]+]]: index)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[WQ:.+]] = tfm.slice_rows %[[WI]] from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[BQ:.+]] = tfm.slice_rows %[[BI]] from 0 : tensor<96xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[QR:.+]] = tfm.linear %[[X]], %[[WQ]], %[[BQ]] :
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QR]] into 4 heads :
// CHECK-NEXT: %[[WKV:.+]] = tfm.slice_rows %[[WI]] from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %[[BKV:.+]] = tfm.slice_rows %[[BI]] from 32 : tensor<96xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[KV:.+]] = tfm.linear %[[MEM]], %[[WKV]], %[[BKV]] :
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[KV]] part 0 of 2 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[KV]] part 1 of 2 into 4 heads :
// CHECK-NEXT: %[[LEN:.+]] = tfm.cache_append %[[C]], %[[K]], %[[V]] at %[[POS]] : <maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = tensor.dim %[[X]], %[[C0]] :
// CHECK-NEXT: %[[KEYS:[a-z0-9_]+]], %[[VALUES:[a-z0-9_]+]] = tfm.cache_read %[[C]][%[[B]], %[[LEN]]] :
// CHECK-NEXT: %[[O:.+]] = tfm.attention <dot> %[[Q]], %[[KEYS]], %[[VALUES]] : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] :
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @cross_append(
// PIPELINE: tfm.cache_append
// PIPELINE: return
func.func @cross_append(%x: tensor<?x?x32xf32>, %m: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %pos: index) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @cross_append: decomposed into a Q GEMM over in_proj's first d_model rows and one K/V GEMM of the memory over the other 2 x d_model, the new keys and values appended to the cache and every position so far read from it, one tfm.attention (scores, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <dot> %x memory %m heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Cross-attention over a read-only cache (a decode step of an
// encoder-decoder): only the Q GEMM (no K/V rows sliced, nothing appended),
// the cache's first %len positions read.
// CHECK-LABEL: func.func @cross_read_only(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>, %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %[[LEN:[a-z0-9]+]]: index)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[WQ:.+]] = tfm.slice_rows %[[WI]] from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[BQ:.+]] = tfm.slice_rows %[[BI]] from 0 : tensor<96xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[QR:.+]] = tfm.linear %[[X]], %[[WQ]], %[[BQ]] : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QR]] into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK-NOT: tfm.cache_append
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x?x32xf32>
// CHECK-NEXT: %[[KEYS:[a-z0-9_]+]], %[[VALUES:[a-z0-9_]+]] = tfm.cache_read %[[C]][%[[B]], %[[LEN]]] : <maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[Q]], %[[KEYS]], %[[VALUES]] : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] :
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @cross_read_only(
// PIPELINE-NOT: tfm.cache_append
// PIPELINE: tfm.cache_read
// PIPELINE: return
func.func @cross_read_only(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %len: index) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @cross_read_only: decomposed into a Q GEMM over in_proj's first d_model rows, the keys and values read from the cache, one tfm.attention (scores, scale, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c upto %len) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Bilinear and additive scores: the score parameters pass through to the
// attention, the causal flag only where it was set. Static shapes stay
// static; two attentions in one function are both decomposed, the second
// over the first's output.
// CHECK-LABEL: func.func @score_params(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x16xf32>, %[[WI:[a-z0-9]+]]: tensor<48x16xf32>, %[[BI:[a-z0-9]+]]: tensor<48xf32>, %[[WO:[a-z0-9]+]]: tensor<16x16xf32>, %[[BO:[a-z0-9]+]]: tensor<16xf32>, %[[W:[a-z0-9]+]]: tensor<2x8x8xf32>, %[[WK:[a-z0-9]+]]: tensor<2x6x8xf32>, %[[WQ:[a-z0-9]+]]: tensor<2x6x8xf32>, %[[VA:[a-z0-9]+]]: tensor<2x6xf32>)
// CHECK-NOT: tfm.multi_head_attention
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x5x48xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 2 heads : tensor<2x5x48xf32> -> tensor<2x2x5x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 2 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 2 heads :
// CHECK-NEXT: %[[O:.+]] = tfm.attention <bilinear> %[[Q]], %[[K]], %[[V]] params(%[[W]]) : (tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x8x8xf32>) -> tensor<2x2x5x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<2x2x5x8xf32> -> tensor<2x5x16xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: %[[QKV2:.+]] = tfm.linear %[[Y]], %[[WI]], %[[BI]] :
// CHECK-NEXT: %[[Q2:.+]] = tfm.split_heads %[[QKV2]] part 0 of 3 into 2 heads :
// CHECK-NEXT: %[[K2:.+]] = tfm.split_heads %[[QKV2]] part 1 of 3 into 2 heads :
// CHECK-NEXT: %[[V2:.+]] = tfm.split_heads %[[QKV2]] part 2 of 3 into 2 heads :
// CHECK-NEXT: %[[O2:.+]] = tfm.attention <additive> %[[Q2]], %[[K2]], %[[V2]] params(%[[WK]], %[[WQ]], %[[VA]]) causal : (tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6xf32>) -> tensor<2x2x5x8xf32>
// CHECK-NEXT: %[[M2:.+]] = tfm.merge_heads %[[O2]] :
// CHECK-NEXT: %[[Y2:.+]] = tfm.linear %[[M2]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y2]]
// PIPELINE-LABEL: func.func @score_params(
// PIPELINE: tfm.attention <bilinear>
// PIPELINE: tfm.attention <additive>
// PIPELINE: return
func.func @score_params(%x: tensor<2x5x16xf32>, %wi: tensor<48x16xf32>, %bi: tensor<48xf32>, %wo: tensor<16x16xf32>, %bo: tensor<16xf32>, %w: tensor<2x8x8xf32>, %wk: tensor<2x6x8xf32>, %wq: tensor<2x6x8xf32>, %v: tensor<2x6xf32>) -> tensor<2x5x16xf32> {
  // expected-remark @+1 {{in @score_params: decomposed into one Q/K/V GEMM over the stacked in_proj weight, one tfm.attention (scores, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <bilinear> %x heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%w) : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<2x8x8xf32>) -> tensor<2x5x16xf32>
  // expected-remark @+1 {{in @score_params: decomposed into one Q/K/V GEMM over the stacked in_proj weight, one tfm.attention (scores, causal mask, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %1 = tfm.multi_head_attention <additive> %0 heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk, %wq, %v) causal : (tensor<2x5x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6xf32>) -> tensor<2x5x16xf32>
  return %1 : tensor<2x5x16xf32>
}

// -----

// Grouped-query self-attention without biases: 4 query heads over 2
// key/value heads. Q and K/V are two GEMMs over in_proj's rows (the heads
// differ, and tfm.split_heads cuts equal parts); no bias anywhere.
// CHECK-LABEL: func.func @grouped_query(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<64x32xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>)
// CHECK-NEXT: %[[WQ:.+]] = tfm.slice_rows %[[WI]] from 0 : tensor<64x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[QR:.+]] = tfm.linear %[[X]], %[[WQ]] : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QR]] into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[WKV:.+]] = tfm.slice_rows %[[WI]] from 32 : tensor<64x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[KV:.+]] = tfm.linear %[[X]], %[[WKV]] : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[KV]] part 0 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[KV]] part 1 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[Q]], %[[K]], %[[V]] causal : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]] : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @grouped_query(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @grouped_query: decomposed into a Q GEMM over in_proj's query rows and one K/V GEMM over its key and value rows (grouped-query: 2 key/value heads for 4 query heads, each read by 2), one tfm.attention (scores, scale, causal mask, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 in_proj(%wi) out_proj(%wo) causal : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Multi-query cross-attention with biases, appending the memory's one
// key/value head to a cache: in_proj's 8 K/V rows after its 32 Q rows.
// CHECK-LABEL: func.func @multi_query_cross(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[MEM:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<48x32xf32>, %[[BI:[a-z0-9]+]]: tensor<48xf32>
// CHECK-NEXT: %[[WQ:.+]] = tfm.slice_rows %[[WI]] from 0 : tensor<48x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[BQ:.+]] = tfm.slice_rows %[[BI]] from 0 : tensor<48xf32> -> tensor<32xf32>
// CHECK-NEXT: tfm.linear %[[X]], %[[WQ]], %[[BQ]]
// CHECK-NEXT: tfm.split_heads %{{.+}} into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[WKV:.+]] = tfm.slice_rows %[[WI]] from 32 : tensor<48x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT: %[[BKV:.+]] = tfm.slice_rows %[[BI]] from 32 : tensor<48xf32> -> tensor<16xf32>
// CHECK-NEXT: tfm.linear %[[MEM]], %[[WKV]], %[[BKV]]
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %{{.+}} part 0 of 2 into 1 heads : tensor<?x?x16xf32> -> tensor<?x1x?x8xf32>
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %{{.+}} part 1 of 2 into 1 heads : tensor<?x?x16xf32> -> tensor<?x1x?x8xf32>
// CHECK-NEXT: tfm.cache_append %{{.+}}, %[[K]], %[[V]] at %{{.+}} : <maxBatch = 1, heads = 1, maxSeq = 16, headDim = 8>, tensor<?x1x?x8xf32>
// CHECK: tfm.attention <dot> %{{.+}} : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
func.func @multi_query_cross(%x: tensor<?x?x32xf32>, %mem: tensor<?x?x32xf32>, %wi: tensor<48x32xf32>, %bi: tensor<48xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 1, maxSeq = 16, headDim = 8>, %p: index) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @multi_query_cross: decomposed into a Q GEMM over in_proj's query rows and one K/V GEMM of the memory over its key and value rows (grouped-query: 1 key/value heads for 4 query heads, each read by 4), the new keys and values appended to the cache and every position so far read from it, one tfm.attention (scores, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <dot> %x memory %mem heads 4 kv_heads 1 cache(%c at %p) in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<48xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 1, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A sliding window with global tokens, and its cached form: the mask goes to
// tfm.attention whole, over the cache with its queries at offset %pos (the
// window slides over absolute positions).
// CHECK-LABEL: func.func @window(
// CHECK: tfm.attention <scaled_dot> %{{.+}}, %{{.+}}, %{{.+}} window 2 global 1 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK: %[[KEYS:[a-z0-9_]+]], %[[VALUES:[a-z0-9_]+]] = tfm.cache_read
// CHECK-NEXT: tfm.attention <scaled_dot> %{{.+}}, %[[KEYS]], %[[VALUES]] causal window 3 offset %arg6 : (tensor<?x4x1x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x1x8xf32>
func.func @window(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, %pos: index, %step: tensor<?x1x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x1x32xf32>) {
  // expected-remark @+1 {{in @window: decomposed into one Q/K/V GEMM over the stacked in_proj weight, one tfm.attention (scores, scale, sliding window of 2 with 1 global tokens, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) window 2 global 1 : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @window: decomposed into one Q/K/V GEMM over the stacked in_proj weight, the new keys and values appended to the cache and every position so far read from it, one tfm.attention (scores, scale, causal mask, sliding window of 3, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %1 = tfm.multi_head_attention <scaled_dot> %step heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal window 3 : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x1x32xf32>
  return %0, %1 : tensor<?x?x32xf32>, tensor<?x1x32xf32>
}

// -----

// Linformer: after the in-projection (and rotary positions), every head's
// keys and values are projected along the sequence by E and F; the queries
// attend those rows, with no mask.
// CHECK-LABEL: func.func @linformer(
// CHECK: tfm.rotary <half> %{{.+}} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.rotary <half> %{{.+}} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[KP:.+]] = tfm.sequence_projection %[[K]] by %arg5 : tensor<?x4x?x8xf32>, tensor<6x16xf32>
// CHECK-NEXT: %[[VP:.+]] = tfm.sequence_projection %{{.+}} by %arg6 : tensor<?x4x?x8xf32>, tensor<6x16xf32>
// CHECK-NEXT: tfm.attention <scaled_dot> %{{.+}}, %[[KP]], %[[VP]] : (tensor<?x4x?x8xf32>, tensor<?x4x6x8xf32>, tensor<?x4x6x8xf32>) -> tensor<?x4x?x8xf32>
func.func @linformer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %e: tensor<6x16xf32>, %f: tensor<6x16xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @linformer: decomposed into one Q/K/V GEMM over the stacked in_proj weight, rotary positions of Q and K, the keys and values of every head projected along the sequence to 6 rows (linformer, tfm.sequence_projection), one tfm.attention (scores, scale, softmax, product with V; the score matrix never stored) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) linformer(%e, %f) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Performer: the queries and keys of every head, after the in-projection,
// mapped by W to its 16 positive random features (two tfm.feature_map by
// the same W), then one tfm.linear_attention of those with the values, in
// place of tfm.attention; not causal: every key.
// CHECK-LABEL: func.func @performer(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<96x32xf32>, %[[BI:[a-z0-9]+]]: tensor<96xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[BO:[a-z0-9]+]]: tensor<32xf32>, %[[W:[a-z0-9]+]]: tensor<4x16x8xf32>)
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear %[[X]], %[[WI]], %[[BI]] : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads :
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NEXT: %[[FQ:.+]] = tfm.feature_map %[[Q]] by %[[W]] : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[FK:.+]] = tfm.feature_map %[[K]] by %[[W]] : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.linear_attention %[[FQ]], %[[FK]], %[[V]] : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], %[[WO]], %[[BO]] :
// CHECK-NEXT: return %[[Y]]
// PIPELINE-LABEL: func.func @performer(
// PIPELINE: tfm.feature_map
// PIPELINE: tfm.feature_map
// PIPELINE: tfm.linear_attention
// PIPELINE-NOT: tfm.attention
// PIPELINE: return
func.func @performer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @performer: decomposed into one Q/K/V GEMM over the stacked in_proj weight, the queries and keys of every head mapped to 16 positive random features (performer, tfm.feature_map), one tfm.linear_attention (the keys' features times V summed once; no score matrix) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) performer(%w) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Causal performer: the features map the rotated queries and keys, and
// the linear attention is causal (running sums); over its cache of feature
// sums (a decode step) nothing is appended or read: the features map the
// step's own queries and keys, and the linear attention at offset %pos adds
// them to the sums the cache holds (`sums`). Grouped-query keys (2 heads)
// are mapped by all 4 of W's heads; the values stay 2 heads.
// CHECK-LABEL: func.func @performer_causal(
// CHECK: %[[RQ:.+]] = tfm.rotary <half> %{{.+}} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[RK:.+]] = tfm.rotary <half> %{{.+}} : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[FQ:.+]] = tfm.feature_map %[[RQ]] by %arg5 : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[FK:.+]] = tfm.feature_map %[[RK]] by %arg5 : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.linear_attention %[[FQ]], %[[FK]], %{{.+}} causal : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: tfm.merge_heads %[[O]] :
// CHECK-NEXT: tfm.linear
// CHECK-NEXT: %[[SQKV:.+]] = tfm.linear %arg8, %arg1, %arg2 : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x1x96xf32>
// CHECK-NEXT: %[[SQ:.+]] = tfm.split_heads %[[SQKV]] part 0 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[SK:.+]] = tfm.split_heads %[[SQKV]] part 1 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[SV:.+]] = tfm.split_heads %[[SQKV]] part 2 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
// CHECK-NEXT: %[[FQ2:.+]] = tfm.feature_map %[[SQ]] by %arg5 : tensor<?x4x1x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[FK2:.+]] = tfm.feature_map %[[SK]] by %arg5 : tensor<?x4x1x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[O2:.+]] = tfm.linear_attention %[[FQ2]], %[[FK2]], %[[SV]] causal offset %arg7 sums(%arg6) : (tensor<?x4x1x16xf32>, tensor<?x4x1x16xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x1x8xf32>
// CHECK-NEXT: tfm.merge_heads %[[O2]] : tensor<?x4x1x8xf32> -> tensor<?x1x32xf32>
// CHECK-NOT: tfm.cache_
// CHECK: %[[GK:.+]] = tfm.split_heads %{{.+}} part 0 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[GV:.+]] = tfm.split_heads %{{.+}} part 1 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[GFQ:.+]] = tfm.feature_map %{{.+}} by %arg5 : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[GFK:.+]] = tfm.feature_map %[[GK]] by %arg5 : tensor<?x2x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: tfm.linear_attention %[[GFQ]], %[[GFK]], %[[GV]] causal : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
func.func @performer_causal(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %pos: index, %step: tensor<?x1x32xf32>, %wi2: tensor<64x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x1x32xf32>, tensor<?x?x32xf32>) {
  // expected-remark @+1 {{in @performer_causal: decomposed into one Q/K/V GEMM over the stacked in_proj weight, rotary positions of Q and K, the queries and keys of every head mapped to 16 positive random features (performer, tfm.feature_map), one tfm.linear_attention (running sums of the keys' features and their products with V, carried from row to row; no score matrix) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @performer_causal: decomposed into one Q/K/V GEMM over the stacked in_proj weight, the step's keys and values added to the running sums the cache holds, the queries and keys of every head mapped to 16 positive random features (performer, tfm.feature_map), one tfm.linear_attention (running sums of the keys' features and their products with V, carried from row to row; no score matrix) and the out_proj GEMM}}
  %1 = tfm.multi_head_attention <scaled_dot> %step heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal performer(%w) : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x1x32xf32>
  // expected-remark @+1 {{in @performer_causal: decomposed into a Q GEMM over in_proj's query rows and one K/V GEMM over its key and value rows (grouped-query: 2 key/value heads for 4 query heads, each read by 2), the queries and keys of every head mapped to 16 positive random features (performer, tfm.feature_map), one tfm.linear_attention (running sums of the keys' features and their products with V, carried from row to row; no score matrix) and the out_proj GEMM}}
  %2 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 in_proj(%wi2) out_proj(%wo) causal performer(%w) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x1x32xf32>, tensor<?x?x32xf32>
}

// -----

// A cached grouped-query prefill with rotary positions: Q and K rotated
// from %pos, the 2 key heads mapped by all 4 of W's heads, the 2 value
// heads as they are; the cache holds the 4 query heads' sums. The linear
// attention reads and writes them (it is not Pure): a second identical
// step is neither merged with the first nor, unused, erased by
// --tfm-optimize.
// CHECK-LABEL: func.func @performer_cached(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WI:[a-z0-9]+]]: tensor<64x32xf32>, %[[WO:[a-z0-9]+]]: tensor<32x32xf32>, %[[W:[a-z0-9]+]]: tensor<4x16x8xf32>, %[[C:[a-z0-9]+]]: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %[[POS:[a-z0-9]+]]: index)
// CHECK: %[[Q:.+]] = tfm.split_heads %{{.+}} into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
// CHECK: %[[K:.+]] = tfm.split_heads %[[KV:.+]] part 0 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[KV]] part 1 of 2 into 2 heads : tensor<?x?x32xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[RQ:.+]] = tfm.rotary <interleaved> %[[Q]] offset %[[POS]] : tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[RK:.+]] = tfm.rotary <interleaved> %[[K]] offset %[[POS]] : tensor<?x2x?x8xf32>
// CHECK-NEXT: %[[FQ:.+]] = tfm.feature_map %[[RQ]] by %[[W]] : tensor<?x4x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[FK:.+]] = tfm.feature_map %[[RK]] by %[[W]] : tensor<?x2x?x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.linear_attention %[[FQ]], %[[FK]], %[[V]] causal offset %[[POS]] sums(%[[C]]) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x2x?x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>) -> tensor<?x4x?x8xf32>
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: tfm.linear %[[M]], %[[WO]] :
// CHECK: tfm.linear_attention {{.+}} causal offset %[[POS]] sums(%[[C]])
// CHECK-NOT: tfm.cache_
// CHECK: return
// PIPELINE-LABEL: func.func @performer_cached(
// PIPELINE-COUNT-2: tfm.linear_attention {{.+}} causal offset %arg5 sums(%arg4)
// PIPELINE-NOT: tfm.linear_attention
// PIPELINE: return
func.func @performer_cached(%x: tensor<?x?x32xf32>, %wi: tensor<64x32xf32>, %wo: tensor<32x32xf32>, %w: tensor<4x16x8xf32>, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, %pos: index) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @performer_cached: decomposed into a Q GEMM over in_proj's query rows and one K/V GEMM over its key and value rows (grouped-query: 2 key/value heads for 4 query heads, each read by 2), rotary positions of Q and K, the step's keys and values added to the running sums the cache holds, the queries and keys of every head mapped to 16 positive random features (performer, tfm.feature_map), one tfm.linear_attention (running sums of the keys' features and their products with V, carried from row to row; no score matrix) and the out_proj GEMM}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %pos) in_proj(%wi) out_proj(%wo) causal performer(%w) {rope = #tfm.rope<interleaved>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  // expected-remark @+1 {{in @performer_cached: decomposed into}}
  %1 = tfm.multi_head_attention <scaled_dot> %x heads 4 kv_heads 2 cache(%c at %pos) in_proj(%wi) out_proj(%wo) causal performer(%w) {rope = #tfm.rope<interleaved>} : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8, features = 16>, index, tensor<4x16x8xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}
