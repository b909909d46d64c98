// RUN: tfm-opt %s -split-input-file --tfm-select-weight-format=format=int8 | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-optimize --tfm-select-weight-format=format=int8 | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-select-weight-format | FileCheck %s --check-prefix=F32
// RUN: tfm-opt %s -split-input-file --tfm-select-weight-format="format=bf16 remarks=true" -verify-diagnostics -o /dev/null
// RUN: not tfm-opt %s --tfm-select-weight-format=format=int4 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// --tfm-select-weight-format (tfm-compile --weight-dtype): the GEMM weights
// (the attention's in/out projections, the FFN's and the experts' linears,
// the LM head, here a tied embedding table) get `format`; the router (the
// MoE gate), biases, norms and an untied table do not. A weight is found
// through the layer function's arguments, and through tfm.slice_rows once
// the attention is decomposed: the graph-level IR and the one after
// tfm-optimize get the same marks. The default, f32, marks nothing.

// BAD: unknown format 'int4' (f32, bf16, f16 or int8)
// F32-NOT: format

// CHECK-LABEL: module @moe_decoder
// CHECK-NEXT: tfm.param @embed.weight {format = #tfm.weight_format<int8>} : tensor<10x8xf32>
// CHECK-NEXT: tfm.param @pos_embed.weight : tensor<4x8xf32>
// CHECK-NEXT: tfm.param @in_proj_weight {format = #tfm.weight_format<int8>} : tensor<24x8xf32>
// CHECK-NEXT: tfm.param @in_proj_bias : tensor<24xf32>
// CHECK-NEXT: tfm.param @out_proj.weight {format = #tfm.weight_format<int8>} : tensor<8x8xf32>
// CHECK-NEXT: tfm.param @out_proj.bias : tensor<8xf32>
// CHECK-NEXT: tfm.param @gate.weight : tensor<2x8xf32>
// CHECK-NEXT: tfm.param @experts.0.linear1.weight {format = #tfm.weight_format<int8>} : tensor<16x8xf32>
// CHECK-NEXT: tfm.param @experts.0.linear2.weight {format = #tfm.weight_format<int8>} : tensor<8x16xf32>
// CHECK-NEXT: tfm.param @experts.1.linear1.weight {format = #tfm.weight_format<int8>} : tensor<16x8xf32>
// CHECK-NEXT: tfm.param @experts.1.linear2.weight {format = #tfm.weight_format<int8>} : tensor<8x16xf32>
// CHECK-NEXT: tfm.param @norm.weight : tensor<8xf32>
// CHECK-NEXT: tfm.param @norm.bias : tensor<8xf32>
// expected-remark @+1 {{weights kept as bf16: 7 GEMM weights (848 values)}}
module @moe_decoder attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @embed.weight : tensor<10x8xf32>
  tfm.param @pos_embed.weight : tensor<4x8xf32>
  tfm.param @in_proj_weight : tensor<24x8xf32>
  tfm.param @in_proj_bias : tensor<24xf32>
  tfm.param @out_proj.weight : tensor<8x8xf32>
  tfm.param @out_proj.bias : tensor<8xf32>
  tfm.param @gate.weight : tensor<2x8xf32>
  tfm.param @experts.0.linear1.weight : tensor<16x8xf32>
  tfm.param @experts.0.linear2.weight : tensor<8x16xf32>
  tfm.param @experts.1.linear1.weight : tensor<16x8xf32>
  tfm.param @experts.1.linear2.weight : tensor<8x16xf32>
  tfm.param @norm.weight : tensor<8xf32>
  tfm.param @norm.bias : tensor<8xf32>
  func.func private @decoder_layer(%x: tensor<?x?x8xf32>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>, %wo: tensor<8x8xf32>, %bo: tensor<8xf32>, %g: tensor<2x8xf32>, %w1a: tensor<16x8xf32>, %w2a: tensor<8x16xf32>, %w1b: tensor<16x8xf32>, %w2b: tensor<8x16xf32>, %nw: tensor<8xf32>, %nb: tensor<8xf32>) -> tensor<?x?x8xf32> {
    %0 = tfm.multi_head_attention <scaled_dot> %x heads 2 in_proj(%wi, %bi) out_proj(%wo, %bo) causal : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %1 = tfm.add %x, %0 : tensor<?x?x8xf32>
    %2 = tfm.layer_norm %1, %nw, %nb : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
    %3 = tfm.moe <relu> %2, %g top 1 linear1(%w1a, %w1b) linear2(%w2a, %w2b) : (tensor<?x?x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
    %4 = tfm.add %2, %3 : tensor<?x?x8xf32>
    return %4 : tensor<?x?x8xf32>
  }
  func.func @forward(%ids: tensor<?x?xi32>) -> tensor<?x?x10xf32> {
    %e = tfm.weight @embed.weight : tensor<10x8xf32>
    %x = tfm.embedding %ids, %e : (tensor<?x?xi32>, tensor<10x8xf32>) -> tensor<?x?x8xf32>
    %wi = tfm.weight @in_proj_weight : tensor<24x8xf32>
    %bi = tfm.weight @in_proj_bias : tensor<24xf32>
    %wo = tfm.weight @out_proj.weight : tensor<8x8xf32>
    %bo = tfm.weight @out_proj.bias : tensor<8xf32>
    %g = tfm.weight @gate.weight : tensor<2x8xf32>
    %w1a = tfm.weight @experts.0.linear1.weight : tensor<16x8xf32>
    %w2a = tfm.weight @experts.0.linear2.weight : tensor<8x16xf32>
    %w1b = tfm.weight @experts.1.linear1.weight : tensor<16x8xf32>
    %w2b = tfm.weight @experts.1.linear2.weight : tensor<8x16xf32>
    %nw = tfm.weight @norm.weight : tensor<8xf32>
    %nb = tfm.weight @norm.bias : tensor<8xf32>
    %y = call @decoder_layer(%x, %wi, %bi, %wo, %bo, %g, %w1a, %w2a, %w1b, %w2b, %nw, %nb) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %h = tfm.weight @embed.weight : tensor<10x8xf32>
    %logits = tfm.linear %y, %h : (tensor<?x?x8xf32>, tensor<10x8xf32>) -> tensor<?x?x10xf32>
    return %logits : tensor<?x?x10xf32>
  }
}

// -----

// An encoder's FFN (graph level), its untied embedding table and a
// positional table stay f32; a weight no function passes to a product
// (an unused one) is not marked.
// CHECK-LABEL: module @ffn_encoder
// CHECK-NEXT: tfm.param @embed.weight : tensor<10x8xf32>
// CHECK-NEXT: tfm.param @linear1.weight {format = #tfm.weight_format<int8>} : tensor<16x8xf32>
// CHECK-NEXT: tfm.param @linear1.bias : tensor<16xf32>
// CHECK-NEXT: tfm.param @linear2.weight {format = #tfm.weight_format<int8>} : tensor<8x16xf32>
// CHECK-NEXT: tfm.param @linear2.bias : tensor<8xf32>
// CHECK-NEXT: tfm.param @unused.weight : tensor<8x8xf32>
// expected-remark @+1 {{weights kept as bf16: 2 GEMM weights (256 values)}}
module @ffn_encoder attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @embed.weight : tensor<10x8xf32>
  tfm.param @linear1.weight : tensor<16x8xf32>
  tfm.param @linear1.bias : tensor<16xf32>
  tfm.param @linear2.weight : tensor<8x16xf32>
  tfm.param @linear2.bias : tensor<8xf32>
  tfm.param @unused.weight : tensor<8x8xf32>
  func.func @forward(%ids: tensor<?x?xi32>) -> tensor<?x?x8xf32> {
    %e = tfm.weight @embed.weight : tensor<10x8xf32>
    %x = tfm.embedding %ids, %e : (tensor<?x?xi32>, tensor<10x8xf32>) -> tensor<?x?x8xf32>
    %w1 = tfm.weight @linear1.weight : tensor<16x8xf32>
    %b1 = tfm.weight @linear1.bias : tensor<16xf32>
    %w2 = tfm.weight @linear2.weight : tensor<8x16xf32>
    %b2 = tfm.weight @linear2.bias : tensor<8xf32>
    %u = tfm.weight @unused.weight : tensor<8x8xf32>
    %y = tfm.ffn <gelu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

// A mamba mixer's in_proj, x_proj, dt_proj and out_proj are GEMM weights;
// its conv weight and bias, dt_proj's bias, A_log and D are not.
// CHECK-LABEL: module @mamba
// CHECK-NEXT: tfm.param @in_proj.weight {format = #tfm.weight_format<int8>} : tensor<32x8xf32>
// CHECK-NEXT: tfm.param @conv1d.weight : tensor<16x1x4xf32>
// CHECK-NEXT: tfm.param @conv1d.bias : tensor<16xf32>
// CHECK-NEXT: tfm.param @x_proj.weight {format = #tfm.weight_format<int8>} : tensor<9x16xf32>
// CHECK-NEXT: tfm.param @dt_proj.weight {format = #tfm.weight_format<int8>} : tensor<16x1xf32>
// CHECK-NEXT: tfm.param @dt_proj.bias : tensor<16xf32>
// CHECK-NEXT: tfm.param @A_log : tensor<16x4xf32>
// CHECK-NEXT: tfm.param @D : tensor<16xf32>
// CHECK-NEXT: tfm.param @out_proj.weight {format = #tfm.weight_format<int8>} : tensor<8x16xf32>
// expected-remark @+1 {{weights kept as bf16: 4 GEMM weights (544 values)}}
module @mamba {
  tfm.param @in_proj.weight : tensor<32x8xf32>
  tfm.param @conv1d.weight : tensor<16x1x4xf32>
  tfm.param @conv1d.bias : tensor<16xf32>
  tfm.param @x_proj.weight : tensor<9x16xf32>
  tfm.param @dt_proj.weight : tensor<16x1xf32>
  tfm.param @dt_proj.bias : tensor<16xf32>
  tfm.param @A_log : tensor<16x4xf32>
  tfm.param @D : tensor<16xf32>
  tfm.param @out_proj.weight : tensor<8x16xf32>
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    %win = tfm.weight @in_proj.weight : tensor<32x8xf32>
    %cw = tfm.weight @conv1d.weight : tensor<16x1x4xf32>
    %cb = tfm.weight @conv1d.bias : tensor<16xf32>
    %wx = tfm.weight @x_proj.weight : tensor<9x16xf32>
    %wdt = tfm.weight @dt_proj.weight : tensor<16x1xf32>
    %bdt = tfm.weight @dt_proj.bias : tensor<16xf32>
    %a = tfm.weight @A_log : tensor<16x4xf32>
    %d = tfm.weight @D : tensor<16xf32>
    %wout = tfm.weight @out_proj.weight : tensor<8x16xf32>
    %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<16x1x4xf32>, tensor<16xf32>, tensor<9x16xf32>, tensor<16x1xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
    return %0 : tensor<?x?x8xf32>
  }
}
