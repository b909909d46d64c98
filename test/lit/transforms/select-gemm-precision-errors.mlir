// RUN: tfm-opt %s -split-input-file --tfm-select-gemm-precision -verify-diagnostics

// Every diagnostic of --tfm-select-gemm-precision but the option's (in
// select-gemm-precision.mlir).

// One kernel reads every weight its argument carries: they must agree.
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @w0 {format = #tfm.weight_format<f16>} : tensor<8x8xf32>
  tfm.param @w1 : tensor<8x8xf32>
  func.func private @ffn_layer(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error @+1 {{reads weights kept in different formats: @w0 and @w1}}
    %0 = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    return %0 : tensor<?x?x8xf32>
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %w0 = tfm.weight @w0 : tensor<8x8xf32>
    %w1 = tfm.weight @w1 : tensor<8x8xf32>
    %0 = call @ffn_layer(%x, %w0) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %1 = call @ffn_layer(%0, %w1) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    return %1 : tensor<?x?x8xf32>
  }
}
