// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg -verify-diagnostics

// --convert-tfm-to-linalg refuses what the LLVM backend does not lower:
// each op names why, then that it cannot lower it in this form.

// Performer's ops over a dynamic number of heads (the heads are a static
// loop bound of its contractions and of the cache's sums).
func.func @linear_attention_dynamic_heads(%fq: tensor<1x?x?x6xf32>, %v: tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32> {
  // expected-error @+2 {{the LLVM backend attends over a static number of heads}}
  // expected-error @+1 {{the LLVM backend cannot lower 'tfm.linear_attention' in this form}}
  %0 = tfm.linear_attention %fq, %fq, %v : (tensor<1x?x?x6xf32>, tensor<1x?x?x6xf32>, tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32>
  return %0 : tensor<1x?x?x8xf32>
}

// -----

// Rank 3 ([heads, n, M]): the heads are the first dimension.
func.func @linear_attention_dynamic_heads_rank3(%fq: tensor<?x?x6xf32>, %v: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+2 {{the LLVM backend attends over a static number of heads}}
  // expected-error @+1 {{the LLVM backend cannot lower 'tfm.linear_attention' in this form}}
  %0 = tfm.linear_attention %fq, %fq, %v causal : (tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @feature_map_dynamic_heads(%x: tensor<1x?x?x8xf32>, %w: tensor<4x6x8xf32>) -> tensor<1x4x?x6xf32> {
  // expected-error @+2 {{the LLVM backend maps the features of a static number of heads}}
  // expected-error @+1 {{the LLVM backend cannot lower 'tfm.feature_map' in this form}}
  %0 = tfm.feature_map %x by %w : tensor<1x?x?x8xf32>, tensor<4x6x8xf32>
  return %0 : tensor<1x4x?x6xf32>
}
