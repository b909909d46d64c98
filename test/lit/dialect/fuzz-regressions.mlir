// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// Inputs the fuzzer (fuzz/tfm-ir.cpp) found to break a verifier, reduced:
// each must now fail cleanly with a diagnostic. The original inputs are
// replayed by the fuzz-tfm-ir test from fuzz/regressions/tfm-ir/.

// 3 x d_model overflowed int64 while checking in_proj_weight's shape
// (UBSan: signed integer overflow in MultiHeadAttentionOp::verify).
func.func @mha_huge_d_model(%x: tensor<?x?x6148914691236517206xf32>,
                            %wi: tensor<96x32xf32>, %bi: tensor<96xf32>,
                            %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) {
  // expected-error @+1 {{'tfm.multi_head_attention' op d_model 6148914691236517206 is too large: in_proj_weight's 3 x d_model rows do not fit in a dimension}}
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 2
      in_proj(%wi, %bi) out_proj(%wo, %bo)
      : (tensor<?x?x6148914691236517206xf32>, tensor<96x32xf32>,
         tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>)
      -> tensor<?x?x6148914691236517206xf32>
  return
}

// -----

// heads x dk overflowed int64 when inferring the merged width
// (UBSan: signed integer overflow in MergeHeadsOp::inferReturnTypes).
func.func @merge_heads_huge(%x: tensor<4294967296x7x4294967296xf32>) {
  // expected-error @+2 {{'tfm.merge_heads' op heads x dk = 4294967296 x 4294967296 does not fit in a dimension}}
  // expected-error @+1 {{'tfm.merge_heads' op failed to infer returned types}}
  %0 = tfm.merge_heads %x : tensor<4294967296x7x4294967296xf32> -> tensor<7x0xf32>
  return
}

// -----

// An empty symbol name verified, then printed as @<<INVALID EMPTY SYMBOL>>,
// which does not parse back (the fuzzer's round-trip check).
// expected-error @+1 {{'tfm.param' op name must not be empty (it is the weight's state_dict name)}}
tfm.param @"" {alias = ""} : tensor<8x4xf32>

// -----

// expected-error @+1 {{'tfm.kv_cache' op name must not be empty}}
tfm.kv_cache @"" : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 16, headDim = 8>
