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

// -----

// A Mamba op's state holds sequences: its rows must be [batch, seq, C].
func.func @causal_conv1d_state_rank2(%x: tensor<?x24xf32>, %w: tensor<24x1x3xf32>, %b: tensor<24xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 1, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x24xf32> {
  // expected-error @+2 {{the LLVM backend carries the state of [batch, seq, channels] rows}}
  // expected-error @+1 {{the LLVM backend cannot lower 'tfm.causal_conv1d' in this form}}
  %0 = tfm.causal_conv1d %x, %w, %b offset %p state(%s) : (tensor<?x24xf32>, tensor<24x1x3xf32>, tensor<24xf32>, index, !tfm.mamba_state<maxBatch = 1, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x24xf32>
  return %0 : tensor<?x24xf32>
}

// -----

func.func @selective_scan_state_rank2(%u: tensor<?x24xf32>, %a: tensor<24x4xf32>, %bm: tensor<?x4xf32>, %d: tensor<24xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 1, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x24xf32> {
  // expected-error @+2 {{the LLVM backend carries the state of [batch, seq, channels] rows}}
  // expected-error @+1 {{the LLVM backend cannot lower 'tfm.selective_scan' in this form}}
  %0 = tfm.selective_scan %u, %u, %a, %bm, %bm, %d, %u offset %p state(%s) : (tensor<?x24xf32>, tensor<?x24xf32>, tensor<24x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<24xf32>, tensor<?x24xf32>, index, !tfm.mamba_state<maxBatch = 1, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x24xf32>
  return %0 : tensor<?x24xf32>
}
