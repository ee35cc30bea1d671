// RUN: gatec-opt %s --raise-router -split-input-file | FileCheck %s

// Qwen3-MoE without norm_topk_prob, as the dynamo exporter writes it:
// Gemm(x, W_r, transB = 1) over N tokens (symbolic), Softmax, TopK(2).
// CHECK-LABEL: func.func @softmax_then_topk
// CHECK: %[[L:.*]] = "onnx.Gemm"
// CHECK-NEXT: %[[W:.*]], %[[I:.*]] = gated.router softmax_then_topk none %[[L]], k = 2 : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
// CHECK-NEXT: return %[[W]], %[[I]]
// CHECK-NOT: onnx.Softmax
// CHECK-NOT: onnx.TopK
func.func @softmax_then_topk(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<4x32xf32>, none) -> tensor<?x4xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  return %v, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// Qwen3-Next (norm_topk_prob): the top-k probabilities divided by their
// sum over the last axis.
// CHECK-LABEL: func.func @renormalise
// CHECK: %[[W:.*]], %[[I:.*]] = gated.router softmax_then_topk renormalise %{{.*}}, k = 2 : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
// CHECK-NEXT: return %[[W]], %[[I]]
// CHECK-NOT: onnx.ReduceSum
// CHECK-NOT: onnx.Div
func.func @renormalise(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<8x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<8x32xf32>, none) -> tensor<?x8xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %s = "onnx.ReduceSum"(%v, %ax) {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %d = "onnx.Div"(%v, %s) : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  return %d, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// GPT-OSS: TopK of the logits of a Gemm with a bias, then the softmax over
// the k values.
// CHECK-LABEL: func.func @topk_then_softmax
// CHECK: %[[L:.*]] = "onnx.Gemm"
// CHECK-NEXT: %[[W:.*]], %[[I:.*]] = gated.router topk_then_softmax none %[[L]], k = 2 : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
// CHECK-NEXT: return %[[W]], %[[I]]
func.func @topk_then_softmax(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %b = onnx.Constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<4x32xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %v, %i = "onnx.TopK"(%l, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %p = "onnx.Softmax"(%v) {axis = -1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  return %p, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// Over [B, T, E] (MatMul with a constant weight plus a bias, the softmax
// in f32 of f16 logits, sorted = 0): the weights are f32, the logits f16.
// The softmax over all experts stays for its other user.
// CHECK-LABEL: func.func @batched_f16
// CHECK: %[[L:.*]] = "onnx.Add"
// CHECK: %[[P:.*]] = "onnx.Softmax"
// CHECK: %[[W:.*]], %[[I:.*]] = gated.router softmax_then_topk none %[[L]], k = 1 : tensor<?x?x4xf16> -> tensor<?x?x1xf32>, tensor<?x?x1xi64>
// CHECK-NEXT: return %[[W]], %[[I]], %[[P]]
func.func @batched_f16(%x: tensor<?x?x8xf16>) -> (tensor<?x?x1xf32>, tensor<?x?x1xi64>, tensor<?x?x4xf32>) {
  %w = onnx.Constant dense<0.1> : tensor<8x4xf16>
  %b = onnx.Constant dense<0.5> : tensor<4xf16>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %m = "onnx.MatMul"(%x, %w) : (tensor<?x?x8xf16>, tensor<8x4xf16>) -> tensor<?x?x4xf16>
  %l = "onnx.Add"(%m, %b) : (tensor<?x?x4xf16>, tensor<4xf16>) -> tensor<?x?x4xf16>
  %c = "onnx.Cast"(%l) {saturate = 1 : i64, to = f32} : (tensor<?x?x4xf16>) -> tensor<?x?x4xf32>
  %p = "onnx.Softmax"(%c) {axis = 2 : i64} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = 2 : i64, largest = 1 : i64, sorted = 0 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> (tensor<?x?x1xf32>, tensor<?x?x1xi64>)
  return %v, %i, %p : tensor<?x?x1xf32>, tensor<?x?x1xi64>, tensor<?x?x4xf32>
}

// -----

// The sum over another axis is no renormalisation: the router is raised
// without it and the Div stays.
// CHECK-LABEL: func.func @sum_other_axis
// CHECK: %[[W:.*]], %{{.*}} = gated.router softmax_then_topk none
// CHECK: "onnx.ReduceSum"(%[[W]]
// CHECK: "onnx.Div"(%[[W]]
func.func @sum_other_axis(%x: tensor<?x32xf32>) -> tensor<?x2xf32> {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<8x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %ax = onnx.Constant dense<0> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<8x32xf32>, none) -> tensor<?x8xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %s = "onnx.ReduceSum"(%v, %ax) {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> tensor<1x2xf32>
  %d = "onnx.Div"(%v, %s) : (tensor<?x2xf32>, tensor<1x2xf32>) -> tensor<?x2xf32>
  return %d : tensor<?x2xf32>
}

// -----

// Negative: TopK over another axis (the tokens, not the experts).
// CHECK-LABEL: func.func @topk_other_axis
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @topk_other_axis(%x: tensor<6x32xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<6x32xf32>, tensor<4x32xf32>, none) -> tensor<6x4xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = 0 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %v, %i : tensor<2x4xf32>, tensor<2x4xi64>
}

// -----

// Negative: k is not a constant.
// CHECK-LABEL: func.func @k_not_constant
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @k_not_constant(%x: tensor<?x32xf32>, %k: tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<4x32xf32>, none) -> tensor<?x4xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
  return %v, %i : tensor<?x?xf32>, tensor<?x?xi64>
}

// -----

// Negative: the softmax is over another axis (over the tokens) than the
// TopK's.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @softmax_other_axis(%x: tensor<6x32xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<6x32xf32>, tensor<4x32xf32>, none) -> tensor<6x4xf32>
  %p = "onnx.Softmax"(%l) {axis = 0 : i64} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  return %v, %i : tensor<6x2xf32>, tensor<6x2xi64>
}

// -----

// Negative: the softmax after the TopK is over another axis.
// CHECK-LABEL: func.func @topk_softmax_other_axis
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @topk_softmax_other_axis(%x: tensor<6x32xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<6x32xf32>, tensor<4x32xf32>, none) -> tensor<6x4xf32>
  %v, %i = "onnx.TopK"(%l, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %p = "onnx.Softmax"(%v) {axis = 0 : i64} : (tensor<6x2xf32>) -> tensor<6x2xf32>
  return %p, %i : tensor<6x2xf32>, tensor<6x2xi64>
}

// -----

// Negative: the smallest k (largest = 0) is no router.
// CHECK-LABEL: func.func @smallest
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @smallest(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<4x32xf32>, none) -> tensor<?x4xf32>
  %p = "onnx.Softmax"(%l) {axis = -1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  return %v, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// Negative: a TopK of a softmax of logits that no projection with constant
// weights computes (a sampler over run-time scores).
// CHECK-LABEL: func.func @not_a_projection
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @not_a_projection(%s: tensor<?x16xf32>) -> (tensor<?x4xf32>, tensor<?x4xi64>) {
  %k = onnx.Constant dense<4> : tensor<1xi64>
  %p = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %v, %i = "onnx.TopK"(%p, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x16xf32>, tensor<1xi64>) -> (tensor<?x4xf32>, tensor<?x4xi64>)
  return %v, %i : tensor<?x4xf32>, tensor<?x4xi64>
}

// -----

// Negative: TopK → Softmax where the raw top-k logits are used too (the
// TopK stays, so no router replaces it).
// CHECK-LABEL: func.func @values_used_twice
// CHECK-NOT: gated.router
// CHECK: "onnx.TopK"
func.func @values_used_twice(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %n = "onnx.NoValue"() {value} : () -> none
  %w = onnx.Constant dense<0.1> : tensor<4x32xf32>
  %k = onnx.Constant dense<2> : tensor<1xi64>
  %l = "onnx.Gemm"(%x, %w, %n) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x32xf32>, tensor<4x32xf32>, none) -> tensor<?x4xf32>
  %v, %i = "onnx.TopK"(%l, %k) {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %p = "onnx.Softmax"(%v) {axis = -1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  return %p, %v : tensor<?x2xf32>, tensor<?x2xf32>
}
