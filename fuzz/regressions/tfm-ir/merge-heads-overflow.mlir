func.func @f(%x: tensor<4294967296x7x4294967296xf32>) -> tensor<7x0xf32> {
  %0 = tfm.merge_heads %x : tensor<4294967296x7x4294967296xf32> -> tensor<7x0xf32>
  return %0 : tensor<7x0xf32>
}
