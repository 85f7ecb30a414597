module {
  func.func @main(%arg0: tensor<3xf32> {mgx.param = "x"}) -> tensor<2x3xf32> {
    %0 = tensor.empty() : tensor<2x3xf32>
    %broadcasted = linalg.broadcast ins(%arg0 : tensor<3xf32>) outs(%0 : tensor<2x3xf32>) dimensions = [1e308]  {mgx.args = array<i64: -1>, mgx.op = "multibroadcast[out_lens={2, 3 index
      %19 = arith.index_cast %18 : index to i64
      %20 = arith.select %14, %19, %out : i64
      linalg.yield %20 : i64
    } -> tensor<1x4xi64>
    return %7 : tensor<1x4xi64>
  }
}
