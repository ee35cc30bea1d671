// RUN: gatec-opt %s --check-weights | FileCheck %s --check-prefix=RECORD
// The first run records the weights that reach an output and who uses them.
// RECORD: module attributes {gatec.weights = {gate_w = "node 'gate' (MatMul, opset 17)", w = "node 'proj' (MatMul, opset 17)"}}
//
// A later rewrite that drops the gate (here: returning the ungated value, as
// a converter unaware of the gate would) fails the next check.
// RUN: gatec-opt %s --check-weights --mlir-print-debuginfo | sed 's/return %5 :/return %2 :/' > %t.mlir
// RUN: not gatec-opt %t.mlir --check-weights 2>&1 | FileCheck %s --check-prefix=DROP
// DROP: error: weight 'gate_w' no longer contributes to any output; it was used by node 'gate' (MatMul, opset 17)
#w = loc(fused<"initializer">["w"("m.onnx":0:0)])
#gw = loc(fused<"initializer">["gate_w"("m.onnx":0:0)])
#proj = loc(fused<"MatMul, opset 17">["proj"("m.onnx":0:0)])
#gate = loc(fused<"MatMul, opset 17">["gate"("m.onnx":0:0)])
module {
  func.func @main_graph(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
    %w = onnx.Constant dense<0.1> : tensor<16x16xf32> loc(#w)
    %gw = onnx.Constant dense<0.2> : tensor<16x16xf32> loc(#gw)
    %p = "onnx.MatMul"(%x, %w) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32> loc(#proj)
    %g = "onnx.MatMul"(%x, %gw) : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32> loc(#gate)
    %s = "onnx.Sigmoid"(%g) : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %y = "onnx.Mul"(%p, %s) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    return %y : tensor<2x16xf32>
  }
}
