func.func @f(%w: tensor<96x32xf32>) -> tensor<64x32xf32> {
  %0 = tfm.slice_rows %w from 9223372036854775807 : tensor<96x32xf32> -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}
