// RUN: gatec-opt %s --raise-shared-expert-gates -split-input-file | FileCheck %s

// Qwen3-Next's MoE layer as the dynamo exporter writes it (after
// --raise-glu and --raise-router): the shared expert's SwiGLU and down
// projection, scaled per token by σ(Gemm(x, w_gᵀ)), added to the routed
// experts' sum. The Mul becomes a shared_expert gate.
// CHECK-LABEL: func.func @qwen3_next_shared_expert
// CHECK: %[[D:.*]] = "onnx.MatMul"
// CHECK: %[[Z:.*]] = "onnx.Gemm"(%arg0
// CHECK: %[[G:.*]] = gated.gate shared_expert sigmoid multiply %[[D]], %[[Z]] : tensor<?x8xf32>, tensor<?x1xf32>
// CHECK-NOT: onnx.Sigmoid
// CHECK: "onnx.Add"(%arg1, %[[G]])
func.func @qwen3_next_shared_expert(%x: tensor<?x8xf32>, %routed: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<8x16xf32>
  %v = onnx.Constant dense<0.2> : tensor<8x16xf32>
  %wd = onnx.Constant dense<0.3> : tensor<16x8xf32>
  %wr = onnx.Constant dense<0.4> : tensor<4x8xf32>
  %wg = onnx.Constant dense<0.5> : tensor<1x8xf32>
  %l = "onnx.Gemm"(%x, %wr, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, none) -> tensor<?x4xf32>
  %weights, %indices = gated.router softmax_then_topk renormalise %l, k = 2 : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
  %h = gated.glu silu %x, %w, %v : tensor<?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  %d = "onnx.MatMul"(%h, %wd) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %z = "onnx.Gemm"(%x, %wg, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x8xf32>, tensor<1x8xf32>, none) -> tensor<?x1xf32>
  %s = "onnx.Sigmoid"(%z) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %g = "onnx.Mul"(%s, %d) : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %o = "onnx.Add"(%routed, %g) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o, %weights, %indices : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// The TorchScript export: MatMul with w_g [d, 1], and the router reads the
// tokens through a Reshape that keeps the last dim.
// CHECK-LABEL: func.func @shared_expert_matmul_reshaped_router
// CHECK: gated.gate shared_expert sigmoid multiply
func.func @shared_expert_matmul_reshaped_router(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>) {
  %w = onnx.Constant dense<0.1> : tensor<8x16xf32>
  %v = onnx.Constant dense<0.2> : tensor<8x16xf32>
  %wd = onnx.Constant dense<0.3> : tensor<16x8xf32>
  %wr = onnx.Constant dense<0.4> : tensor<8x4xf32>
  %wg = onnx.Constant dense<0.5> : tensor<8x1xf32>
  %shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %xr = "onnx.Reshape"(%x, %shape) {allowzero = 0 : i64} : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %l = "onnx.MatMul"(%xr, %wr) : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %weights, %indices = gated.router softmax_then_topk renormalise %l, k = 2 : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
  %h = gated.glu silu %x, %w, %v : tensor<?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  %d = "onnx.MatMul"(%h, %wd) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %z = "onnx.MatMul"(%x, %wg) : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
  %s = "onnx.Sigmoid"(%z) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %g = "onnx.Mul"(%s, %d) : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %g, %weights, %indices : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// No router reads x: a sigmoid-scaled FFN outside an MoE layer is left alone
// (no gate kind claims it).
// CHECK-LABEL: func.func @no_router_left_alone
// CHECK-NOT: gated.gate
// CHECK: onnx.Sigmoid
func.func @no_router_left_alone(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w = onnx.Constant dense<0.1> : tensor<8x16xf32>
  %v = onnx.Constant dense<0.2> : tensor<8x16xf32>
  %wd = onnx.Constant dense<0.3> : tensor<16x8xf32>
  %wg = onnx.Constant dense<0.5> : tensor<8x1xf32>
  %h = gated.glu silu %x, %w, %v : tensor<?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  %d = "onnx.MatMul"(%h, %wd) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %z = "onnx.MatMul"(%x, %wg) : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
  %s = "onnx.Sigmoid"(%z) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %g = "onnx.Mul"(%s, %d) : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %g : tensor<?x8xf32>
}

// -----

// A gate of width d (one value per channel) is not the shared-expert gate.
// CHECK-LABEL: func.func @channel_gate_left_alone
// CHECK-NOT: gated.gate
func.func @channel_gate_left_alone(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>) {
  %w = onnx.Constant dense<0.1> : tensor<8x16xf32>
  %v = onnx.Constant dense<0.2> : tensor<8x16xf32>
  %wd = onnx.Constant dense<0.3> : tensor<16x8xf32>
  %wr = onnx.Constant dense<0.4> : tensor<8x4xf32>
  %wg = onnx.Constant dense<0.5> : tensor<8x8xf32>
  %l = "onnx.MatMul"(%x, %wr) : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %weights, %indices = gated.router softmax_then_topk renormalise %l, k = 2 : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
  %h = gated.glu silu %x, %w, %v : tensor<?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  %d = "onnx.MatMul"(%h, %wd) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %z = "onnx.MatMul"(%x, %wg) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %s = "onnx.Sigmoid"(%z) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %g = "onnx.Mul"(%s, %d) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %g, %weights, %indices : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi64>
}
