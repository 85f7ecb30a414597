func.func @main(%a: tensor<2xf32> {mgx.param = "a"}) -> tensor<2xf32> {
  %0 = arith.addf %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
