// RUN: tfm-opt %s -split-input-file --tfm-select-attention-tiling | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-select-attention-tiling=remarks=true -verify-diagnostics -o /dev/null

// --tfm-select-attention-tiling: the query rows a task of each blocked
// tfm.flash_attention scores together (per vector width) and the keys it
// takes per block, with the reasons in a remark; the attentions it must
// leave alone say why.

// BERT-base at seq 128 (bounded by tfm.max_seq_len): 8 query rows a task
// with AVX-512, 2 below; blocks of 64 keys. Causal or bilinear, the same.
// CHECK-LABEL: func.func @bert_s128(
// CHECK-NEXT: %0 = tfm.flash_attention <scaled_dot> %arg0 heads 12 tiling <queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64> :
// CHECK-NEXT: %1 = tfm.flash_attention <dot> %arg0 heads 12 causal tiling <queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64> :
// CHECK-NEXT: %2 = tfm.flash_attention <bilinear> %arg0 heads 12 params(%arg1) tiling <queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64> :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 128 : i64} {
  func.func @bert_s128(%qkv: tensor<?x?x2304xf32>, %w: tensor<12x64x64xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task}}
    %0 = tfm.flash_attention <scaled_dot> %qkv heads 12 : (tensor<?x?x2304xf32>) -> tensor<?x?x768xf32>
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys}}
    %1 = tfm.flash_attention <dot> %qkv heads 12 causal : (tensor<?x?x2304xf32>) -> tensor<?x?x768xf32>
    // expected-remark @+1 {{in @bert_s128: attention tiling: attention tiles of 8 query rows x blocks of 64 keys}}
    %2 = tfm.flash_attention <bilinear> %qkv heads 12 params(%w) : (tensor<?x?x2304xf32>, tensor<12x64x64xf32>) -> tensor<?x?x768xf32>
    return %0, %1, %2 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
  }
}

// -----

// Short sequences: no more query rows than the sequence has (4, bounded by
// tfm.max_seq_len; 1, static: a decoding step's), and a block of keys no
// longer than the sequence, rounded up to a whole number of 16-lane
// vectors (16, and 48 for 40 keys).
// CHECK-LABEL: func.func @short(
// CHECK-NEXT: %0 = tfm.flash_attention <scaled_dot> %arg0 heads 4 tiling <queryRows512 = 4, queryRows256 = 2, queryRows128 = 2, keyBlock = 16> :
// CHECK-NEXT: %1 = tfm.flash_attention <scaled_dot> %arg1 heads 4 tiling <queryRows512 = 1, queryRows256 = 1, queryRows128 = 1, keyBlock = 16> :
// CHECK-NEXT: %2 = tfm.flash_attention <scaled_dot> %arg2 heads 4 causal tiling <queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 48> :
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @short(%qkv: tensor<?x?x96xf32>, %one: tensor<2x1x96xf32>, %forty: tensor<1x40x96xf32>) -> (tensor<?x?x32xf32>, tensor<2x1x32xf32>, tensor<1x40x32xf32>) {
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 4 query rows x blocks of 16 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task, at most the 4 query rows the sequence allows; a block no longer than the 4 keys (rounded up to a multiple of 16)}}
    %0 = tfm.flash_attention <scaled_dot> %qkv heads 4 : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 1 query row x blocks of 16 keys (1 on 256-bit vectors, 1 on 128-bit): each key and value vector loaded serves every row of a task, at most the 1 query row the sequence allows; a block no longer than the 1 keys (rounded up to a multiple of 16)}}
    %1 = tfm.flash_attention <scaled_dot> %one heads 4 : (tensor<2x1x96xf32>) -> tensor<2x1x32xf32>
    // expected-remark @+1 {{in @short: attention tiling: attention tiles of 8 query rows x blocks of 48 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task; a block no longer than the 40 keys (rounded up to a multiple of 16)}}
    %2 = tfm.flash_attention <scaled_dot> %forty heads 4 causal : (tensor<1x40x96xf32>) -> tensor<1x40x32xf32>
    return %0, %1, %2 : tensor<?x?x32xf32>, tensor<2x1x32xf32>, tensor<1x40x32xf32>
  }
}

// -----

// Without a bound on a dynamic sequence: the tiles of a long one.
// CHECK-LABEL: func.func @unbounded(
// CHECK-NEXT: %0 = tfm.flash_attention <scaled_dot> %arg0 heads 4 tiling <queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64> :
func.func @unbounded(%qkv: tensor<?x?x96xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{in @unbounded: attention tiling: attention tiles of 8 query rows x blocks of 64 keys (2 on 256-bit vectors, 2 on 128-bit): each key and value vector loaded serves every row of a task}}
  %0 = tfm.flash_attention <scaled_dot> %qkv heads 4 : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Left alone: additive scores (one key at a time, no blocks), and an
// attention whose tiling was already chosen (kept as it is).
// CHECK-LABEL: func.func @untouched(
// CHECK-NEXT: %0 = tfm.flash_attention <additive> %arg0 heads 4 params(%arg1, %arg2, %arg3) :
// CHECK-NEXT: %1 = tfm.flash_attention <scaled_dot> %arg0 heads 4 tiling <queryRows512 = 3, queryRows256 = 1, queryRows128 = 1, keyBlock = 32> :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 128 : i64} {
  func.func @untouched(%qkv: tensor<?x?x96xf32>, %wk: tensor<4x8x8xf32>, %wq: tensor<4x8x8xf32>, %v: tensor<4x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    // expected-remark @+1 {{in @untouched: no attention tiling chosen: additive scores are taken one key at a time, not in blocks}}
    %0 = tfm.flash_attention <additive> %qkv heads 4 params(%wk, %wq, %v) : (tensor<?x?x96xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>) -> tensor<?x?x32xf32>
    // expected-remark @+1 {{in @untouched: attention tiling kept: it was already chosen}}
    %1 = tfm.flash_attention <scaled_dot> %qkv heads 4 tiling <queryRows512 = 3, queryRows256 = 1, queryRows128 = 1, keyBlock = 32> : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
    return %0, %1 : tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
}
