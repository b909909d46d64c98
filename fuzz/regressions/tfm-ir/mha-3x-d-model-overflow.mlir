func.func @f(%x: tensor<?x?x6148914691236517206xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x6148914691236517206xf32> {
  %attn = tfm.multi_head_attention <scaled_dot> %x heads 2
      in_proj(%wi, %bi) out_proj(%wo, %bo)
      : (tensor<?x?x6148914691236517206xf32>, tensor<96x32xf32>, tensor<96xf32>,
         tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x6148914691236517206xf32>
  return %attn : tensor<?x?x6148914691236517206xf32>
}
