// One post-norm encoder layer (nn.TransformerEncoderLayer, batch first):
// d_model 32, 4 heads, d_ff 64, GELU. Batch and sequence are dynamic.
//   tfm-opt examples/encoder-block.mlir

tfm.param @"layers.0.self_attn.in_proj_weight" : tensor<96x32xf32>
tfm.param @"layers.0.self_attn.in_proj_bias" : tensor<96xf32>
tfm.param @"layers.0.self_attn.out_proj.weight" : tensor<32x32xf32>
tfm.param @"layers.0.self_attn.out_proj.bias" : tensor<32xf32>
tfm.param @"layers.0.norm1.weight" : tensor<32xf32>
tfm.param @"layers.0.norm1.bias" : tensor<32xf32>
tfm.param @"layers.0.linear1.weight" : tensor<64x32xf32>
tfm.param @"layers.0.linear1.bias" : tensor<64xf32>
tfm.param @"layers.0.linear2.weight" : tensor<32x64xf32>
tfm.param @"layers.0.linear2.bias" : tensor<32xf32>
tfm.param @"layers.0.norm2.weight" : tensor<32xf32>
tfm.param @"layers.0.norm2.bias" : tensor<32xf32>

func.func @forward(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %wi = tfm.weight @"layers.0.self_attn.in_proj_weight" : tensor<96x32xf32>
  %bi = tfm.weight @"layers.0.self_attn.in_proj_bias" : tensor<96xf32>
  %wo = tfm.weight @"layers.0.self_attn.out_proj.weight" : tensor<32x32xf32>
  %bo = tfm.weight @"layers.0.self_attn.out_proj.bias" : tensor<32xf32>
  %attn = tfm.multi_head_attention <scaled_dot> %x heads 4
      in_proj(%wi, %bi) out_proj(%wo, %bo)
      : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>,
         tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %r1 = tfm.add %x, %attn : tensor<?x?x32xf32>
  %g1 = tfm.weight @"layers.0.norm1.weight" : tensor<32xf32>
  %b1 = tfm.weight @"layers.0.norm1.bias" : tensor<32xf32>
  %h1 = tfm.layer_norm %r1, %g1, %b1
      : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>

  %w1 = tfm.weight @"layers.0.linear1.weight" : tensor<64x32xf32>
  %c1 = tfm.weight @"layers.0.linear1.bias" : tensor<64xf32>
  %w2 = tfm.weight @"layers.0.linear2.weight" : tensor<32x64xf32>
  %c2 = tfm.weight @"layers.0.linear2.bias" : tensor<32xf32>
  %ff = tfm.ffn <gelu> %h1, %w1, %c1, %w2, %c2
      : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>,
         tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %r2 = tfm.add %h1, %ff : tensor<?x?x32xf32>
  %g2 = tfm.weight @"layers.0.norm2.weight" : tensor<32xf32>
  %b2 = tfm.weight @"layers.0.norm2.bias" : tensor<32xf32>
  %y = tfm.layer_norm %r2, %g2, %b2
      : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}
