// RUN: tfm-opt %s -split-input-file --tfm-select-attention-tiling | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-select-attention-tiling=remarks=true -verify-diagnostics -o /dev/null

// --tfm-select-attention-tiling: the query rows a task of each blocked
// tfm.attention scores together (per vector width) and the keys it takes
// per block, with the reasons in a remark; the attentions it must leave
// alone say why. The attentions here are in the form
// --tfm-decompose-attention leaves: the heads of one stacked Q/K/V GEMM
// (tfm.split_heads part P of 3), or keys and values read from a cache.
// The query rows are bounded by the queries' sequence dimension, the keys
// by the keys' (a cache's: its maxSeq).

// BERT-base at seq 128 (bounded by tfm.max_seq_len): 8 query rows a task
// with AVX-512, 2 below; blocks of 64 keys. Causal or bilinear, the same.
// CHECK-LABEL: func.func @bert_s128(
// CHECK: %[[O0:.+]] = tfm.attention <scaled_dot> %{{.+}}, %{{.+}}, %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} :
// CHECK-NEXT: tfm.merge_heads %[[O0]]
// CHECK: %[[O1:.+]] = tfm.attention <dot> %{{.+}}, %{{.+}}, %{{.+}} causal {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} :
// CHECK-NEXT: tfm.merge_heads %[[O1]]
// CHECK: %[[O2:.+]] = tfm.attention <bilinear> %{{.+}}, %{{.+}}, %{{.+}} params(%arg1) {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} :
// CHECK-NEXT: tfm.merge_heads %[[O2]]
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 128 : i64} {
  func.func @bert_s128(%qkv: tensor<?x?x2304xf32>, %w: tensor<12x64x64xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
    %q = tfm.split_heads %qkv part 0 of 3 into 12 heads : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 12 heads : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 12 heads : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task}}
    %0 = tfm.attention <scaled_dot> %q, %k, %v : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) -> tensor<?x12x?x64xf32>
    %m0 = tfm.merge_heads %0 : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys}}
    %1 = tfm.attention <dot> %q, %k, %v causal : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) -> tensor<?x12x?x64xf32>
    %m1 = tfm.merge_heads %1 : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys}}
    %2 = tfm.attention <bilinear> %q, %k, %v params(%w) : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<12x64x64xf32>) -> tensor<?x12x?x64xf32>
    %m2 = tfm.merge_heads %2 : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    return %m0, %m1, %m2 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
  }
}

// -----

// Short sequences: no more query rows than the sequence has (4, bounded by
// tfm.max_seq_len; 1, static: a decoding step's), and a block of keys no
// longer than the sequence, rounded up to a whole number of 16-lane
// vectors (16, and 48 for 40 keys).
// CHECK-LABEL: func.func @short(
// CHECK: tfm.attention <scaled_dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 4, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>} : (tensor<?x4x?x8xf32>,
// CHECK: tfm.attention <scaled_dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 16>} : (tensor<2x4x1x8xf32>,
// CHECK: tfm.attention <scaled_dot> %{{.+}} causal {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 48>} : (tensor<1x4x40x8xf32>,
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @short(%qkv: tensor<?x?x96xf32>, %one: tensor<2x1x96xf32>, %forty: tensor<1x40x96xf32>) -> (tensor<?x?x32xf32>, tensor<2x1x32xf32>, tensor<1x40x32xf32>) {
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 4 query rows x blocks of 16 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task, at most the 4 query rows the sequence allows; a block no longer than the 4 keys (rounded up to a multiple of 16)}}
    %0 = tfm.attention <scaled_dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m0 = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %q1 = tfm.split_heads %one part 0 of 3 into 4 heads : tensor<2x1x96xf32> -> tensor<2x4x1x8xf32>
    %k1 = tfm.split_heads %one part 1 of 3 into 4 heads : tensor<2x1x96xf32> -> tensor<2x4x1x8xf32>
    %v1 = tfm.split_heads %one part 2 of 3 into 4 heads : tensor<2x1x96xf32> -> tensor<2x4x1x8xf32>
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 1 query row x blocks of 16 keys (1 on 256-bit vectors, 1 on 128-bit): each key and value vector loaded serves every row of a task, at most the 1 query row the sequence allows; a block no longer than the 1 keys (rounded up to a multiple of 16)}}
    %1 = tfm.attention <scaled_dot> %q1, %k1, %v1 : (tensor<2x4x1x8xf32>, tensor<2x4x1x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x1x8xf32>
    %m1 = tfm.merge_heads %1 : tensor<2x4x1x8xf32> -> tensor<2x1x32xf32>
    %q2 = tfm.split_heads %forty part 0 of 3 into 4 heads : tensor<1x40x96xf32> -> tensor<1x4x40x8xf32>
    %k2 = tfm.split_heads %forty part 1 of 3 into 4 heads : tensor<1x40x96xf32> -> tensor<1x4x40x8xf32>
    %v2 = tfm.split_heads %forty part 2 of 3 into 4 heads : tensor<1x40x96xf32> -> tensor<1x4x40x8xf32>
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 8 query rows x blocks of 48 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 40 keys (rounded up to a multiple of 16)}}
    %2 = tfm.attention <scaled_dot> %q2, %k2, %v2 causal : (tensor<1x4x40x8xf32>, tensor<1x4x40x8xf32>, tensor<1x4x40x8xf32>) -> tensor<1x4x40x8xf32>
    %m2 = tfm.merge_heads %2 : tensor<1x4x40x8xf32> -> tensor<1x40x32xf32>
    return %m0, %m1, %m2 : tensor<?x?x32xf32>, tensor<2x1x32xf32>, tensor<1x40x32xf32>
  }
}

// -----

// Queries and keys are bounded apart: cross-attention of a query bounded by
// tfm.max_seq_len (4 rows) over 40 static memory positions (blocks of 48),
// and of 40 static query rows over memory bounded by it (blocks of 16).
// CHECK-LABEL: func.func @cross_bounds(
// CHECK: tfm.attention <dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 4, queryRows256 = 2, queryRows128 = 2, keyBlock = 48>} : (tensor<1x4x?x8xf32>, tensor<1x4x40x8xf32>,
// CHECK: tfm.attention <dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>} : (tensor<1x4x40x8xf32>, tensor<1x4x?x8xf32>,
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @cross_bounds(%x: tensor<1x?x32xf32>, %m: tensor<1x40x64xf32>, %x40: tensor<1x40x32xf32>, %mdyn: tensor<1x?x64xf32>) -> (tensor<1x?x32xf32>, tensor<1x40x32xf32>) {
    %q = tfm.split_heads %x into 4 heads : tensor<1x?x32xf32> -> tensor<1x4x?x8xf32>
    %k = tfm.split_heads %m part 0 of 2 into 4 heads : tensor<1x40x64xf32> -> tensor<1x4x40x8xf32>
    %v = tfm.split_heads %m part 1 of 2 into 4 heads : tensor<1x40x64xf32> -> tensor<1x4x40x8xf32>
    // expected-remark @+1 {{in @cross_bounds: attention tiling: attention tiles of 4 query rows x blocks of 48 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task, at most the 4 query rows the sequence allows; a block no longer than the 40 keys (rounded up to a multiple of 16)}}
    %0 = tfm.attention <dot> %q, %k, %v : (tensor<1x4x?x8xf32>, tensor<1x4x40x8xf32>, tensor<1x4x40x8xf32>) -> tensor<1x4x?x8xf32>
    %m0 = tfm.merge_heads %0 : tensor<1x4x?x8xf32> -> tensor<1x?x32xf32>
    %q1 = tfm.split_heads %x40 into 4 heads : tensor<1x40x32xf32> -> tensor<1x4x40x8xf32>
    %k1 = tfm.split_heads %mdyn part 0 of 2 into 4 heads : tensor<1x?x64xf32> -> tensor<1x4x?x8xf32>
    %v1 = tfm.split_heads %mdyn part 1 of 2 into 4 heads : tensor<1x?x64xf32> -> tensor<1x4x?x8xf32>
    // expected-remark @+1 {{in @cross_bounds: attention tiling: attention tiles of 8 query rows x blocks of 16 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 4 keys (rounded up to a multiple of 16)}}
    %1 = tfm.attention <dot> %q1, %k1, %v1 : (tensor<1x4x40x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x40x8xf32>
    %m1 = tfm.merge_heads %1 : tensor<1x4x40x8xf32> -> tensor<1x40x32xf32>
    return %m0, %m1 : tensor<1x?x32xf32>, tensor<1x40x32xf32>
  }
}

// -----

// Keys read from a key/value cache are bounded by the positions it holds
// (maxSeq), not by tfm.max_seq_len: 40 positions, blocks of 48 keys, while
// the prefill's queries take the module's 128 rows (8 a task). A decode
// step (one static query row, at offset %pos) over a cache of 1024
// positions: 1 query row a task, blocks of 64 keys.
// CHECK-LABEL: func.func @cached(
// CHECK: %[[K:[a-z0-9_]+]], %[[V:[a-z0-9_]+]] = tfm.cache_read %arg3
// CHECK-NEXT: tfm.attention <scaled_dot> %{{.+}}, %[[K]], %[[V]] causal offset %arg2 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 48>} :
// CHECK: %[[DK:[a-z0-9_]+]], %[[DV:[a-z0-9_]+]] = tfm.cache_read %arg4
// CHECK-NEXT: tfm.attention <scaled_dot> %{{.+}}, %[[DK]], %[[DV]] causal offset %arg2 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 64>} :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 128 : i64} {
  func.func @cached(%qkv: tensor<1x?x96xf32>, %step: tensor<1x1x96xf32>, %pos: index, %c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 40, headDim = 8>, %d: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 1024, headDim = 8>) -> (tensor<1x?x32xf32>, tensor<1x1x32xf32>) {
    %b = arith.constant 1 : index
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<1x?x96xf32> -> tensor<1x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<1x?x96xf32> -> tensor<1x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<1x?x96xf32> -> tensor<1x4x?x8xf32>
    %len = tfm.cache_append %c, %k, %v at %pos : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 40, headDim = 8>, tensor<1x4x?x8xf32>
    %kc, %vc = tfm.cache_read %c[%b, %len] : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 40, headDim = 8>
    // expected-remark @+1 {{in @cached: attention tiling: attention tiles of 8 query rows x blocks of 48 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 40 keys (rounded up to a multiple of 16)}}
    %0 = tfm.attention <scaled_dot> %q, %kc, %vc causal offset %pos : (tensor<1x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<1x4x?x8xf32>
    %m0 = tfm.merge_heads %0 : tensor<1x4x?x8xf32> -> tensor<1x?x32xf32>
    %q1 = tfm.split_heads %step part 0 of 3 into 4 heads : tensor<1x1x96xf32> -> tensor<1x4x1x8xf32>
    %k1 = tfm.split_heads %step part 1 of 3 into 4 heads : tensor<1x1x96xf32> -> tensor<1x4x1x8xf32>
    %v1 = tfm.split_heads %step part 2 of 3 into 4 heads : tensor<1x1x96xf32> -> tensor<1x4x1x8xf32>
    %r1 = tfm.rotary <half> %q1 offset %pos : tensor<1x4x1x8xf32>
    %s1 = tfm.rotary <half> %k1 offset %pos : tensor<1x4x1x8xf32>
    %len1 = tfm.cache_append %d, %s1, %v1 at %pos : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 1024, headDim = 8>, tensor<1x4x1x8xf32>
    %kd, %vd = tfm.cache_read %d[%b, %len1] : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 1024, headDim = 8>
    // expected-remark @+1 {{in @cached: attention tiling: attention tiles of 1 query row x blocks of 64 keys (1 on 256-bit vectors, 1 on 128-bit): each key and value vector loaded serves every row of a task, at most the 1 query row the sequence allows}}
    %1 = tfm.attention <scaled_dot> %r1, %kd, %vd causal offset %pos : (tensor<1x4x1x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<1x4x1x8xf32>
    %m1 = tfm.merge_heads %1 : tensor<1x4x1x8xf32> -> tensor<1x1x32xf32>
    return %m0, %m1 : tensor<1x?x32xf32>, tensor<1x1x32xf32>
  }
}

// -----

// Without a bound on a dynamic sequence: the tiles of a long one.
// CHECK-LABEL: func.func @unbounded(
// CHECK: tfm.attention <scaled_dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} :
func.func @unbounded(%qkv: tensor<?x?x96xf32>) -> tensor<?x?x32xf32> {
  %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
  // expected-remark @+1 {{in @unbounded: attention tiling: attention tiles of 8 query rows x blocks of 64 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task}}
  %0 = tfm.attention <scaled_dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %m = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// Left alone: additive scores (one key at a time, no blocks), and an
// attention whose tiling was already chosen (kept as it is).
// CHECK-LABEL: func.func @untouched(
// CHECK: tfm.attention <additive> %{{.+}} params(%arg1, %arg2, %arg3) :
// CHECK: tfm.attention <scaled_dot> %{{.+}} {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 3, queryRows256 = 1, queryRows128 = 1, keyBlock = 32>} :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 128 : i64} {
  func.func @untouched(%qkv: tensor<?x?x96xf32>, %wk: tensor<4x8x8xf32>, %wq: tensor<4x8x8xf32>, %va: tensor<4x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    // expected-remark @+1 {{in @untouched: no attention tiling chosen: additive scores are taken one key at a time, not in blocks}}
    %0 = tfm.attention <additive> %q, %k, %v params(%wk, %wq, %va) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>) -> tensor<?x4x?x8xf32>
    %m0 = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    // expected-remark @+1 {{in @untouched: attention tiling kept: it was already chosen}}
    %1 = tfm.attention <scaled_dot> %q, %k, %v {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 3, queryRows256 = 1, queryRows128 = 1, keyBlock = 32>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m1 = tfm.merge_heads %1 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %m0, %m1 : tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
}

// -----

// Sliding windows: a task of 8 query rows sees 8 + 2W keys of its band (8 + W
// when causal), so the block shrinks to them, rounded up to 16 lanes; global
// tokens leave the band's block as it is (their keys take blocks of their
// own).
// CHECK-LABEL: func.func @windows(
// CHECK: tfm.attention <scaled_dot> %{{.+}} window 4 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>} :
// CHECK: tfm.attention <scaled_dot> %{{.+}} causal window 20 global 2 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 32>} :
// CHECK: tfm.attention <scaled_dot> %{{.+}} window 300 {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 512 : i64} {
  func.func @windows(%qkv: tensor<?x?x96xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    // expected-remark @+1 {{in @windows: attention tiling: attention tiles of 8 query rows x blocks of 16 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 16 keys (rounded up to a multiple of 16)}}
    %0 = tfm.attention <scaled_dot> %q, %k, %v window 4 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m0 = tfm.merge_heads %0 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    // expected-remark @+1 {{in @windows: attention tiling: attention tiles of 8 query rows x blocks of 32 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 28 keys (rounded up to a multiple of 16)}}
    %1 = tfm.attention <scaled_dot> %q, %k, %v causal window 20 global 2 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m1 = tfm.merge_heads %1 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    // expected-remark @+1 {{in @windows: attention tiling: attention tiles of 8 query rows x blocks of 64 keys}}
    %2 = tfm.attention <scaled_dot> %q, %k, %v window 300 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m2 = tfm.merge_heads %2 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %m0, %m1, %m2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
}
