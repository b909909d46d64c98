// RUN: tfm-opt %s -split-input-file --tfm-optimize --tfm-select-gemm-precision=compute=bf16 | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-optimize --tfm-select-gemm-precision | FileCheck %s --check-prefix=F32
// RUN: tfm-opt %s -split-input-file --tfm-optimize --tfm-select-gemm-precision="compute=bf16 remarks=true" -verify-diagnostics -o /dev/null
// RUN: not tfm-opt %s --tfm-select-gemm-precision=compute=f16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// --tfm-select-gemm-precision (tfm-compile --compute=bf16): every GEMM the
// pipeline leaves gets bf16_inputs (the attention's projections, the FFN's
// linears, the experts' grouped GEMMs, the LM head) but the MoE router's,
// whose logits tfm.route_experts reads. The default, f32, marks nothing.

// BAD: unknown compute 'f16' (f32 or bf16)
// F32-NOT: bf16_inputs

// CHECK-LABEL: func.func @layer(
// CHECK: tfm.linear %{{.+}} {bf16_inputs} : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>)
// CHECK: tfm.attention
// CHECK: tfm.linear %{{.+}} residual %{{.+}} {bf16_inputs} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>)
// The router: f32.
// CHECK: %[[L:.+]] = tfm.linear %{{[^ ]+}}, %{{[^ ]+}} : (tensor<?x?x8xf32>, tensor<2x8xf32>) -> tensor<?x?x2xf32>
// CHECK: tfm.route_experts %[[L]]
// CHECK: tfm.grouped_linear {{.+}} activation <relu> {bf16_inputs}
// CHECK: tfm.grouped_linear {{.+}} {bf16_inputs}
// CHECK: tfm.linear %{{.+}} activation <gelu> {bf16_inputs}
// CHECK: tfm.linear %{{.+}} {bf16_inputs}
// CHECK: return
// expected-remark @+1 {{6 GEMMs with bf16 inputs (products summed in f32)}}
func.func @layer(%x: tensor<?x?x8xf32>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>, %g: tensor<2x8xf32>, %w1a: tensor<16x8xf32>, %w2a: tensor<8x16xf32>, %w1b: tensor<16x8xf32>, %w2b: tensor<8x16xf32>, %v1: tensor<16x8xf32>, %c1: tensor<16xf32>, %v2: tensor<8x16xf32>, %c2: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %0 = tfm.multi_head_attention <scaled_dot> %x heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %1 = tfm.add %x, %0 : tensor<?x?x8xf32>
  %2 = tfm.moe <relu> %1, %g top 1 linear1(%w1a, %w1b) linear2(%w2a, %w2b) : (tensor<?x?x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  %3 = tfm.ffn <gelu> %2, %v1, %c1, %v2, %c2 : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %3 : tensor<?x?x8xf32>
}

// -----

// weight_format: each GEMM gets the format of the params its weight can be
// (through the layer function's argument, from both call sites); the
// router's weight has none. Both compute settings set it.
// CHECK-LABEL: func.func private @ffn_layer(
// CHECK: tfm.linear %{{.+}} {bf16_inputs, weight_format = #tfm.weight_format<f16>}
// F32-LABEL: func.func private @ffn_layer(
// F32: tfm.linear %{{.+}} {weight_format = #tfm.weight_format<f16>}
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @w0 {format = #tfm.weight_format<f16>} : tensor<8x8xf32>
  tfm.param @w1 {format = #tfm.weight_format<f16>} : tensor<8x8xf32>
  // expected-remark @+1 {{1 GEMM with bf16 inputs (products summed in f32)}}
  func.func private @ffn_layer(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
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

