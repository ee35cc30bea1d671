// RUN: gatec-opt %s --raise-short-conv -split-input-file | FileCheck %s

// LFM2's short conv as the TorchScript exporter writes it: c ⊙ Slice(Conv(b
// ⊙ x), first T) with a depthwise conv of 3 taps padded by 2 on each side
// and the Slice's end read with Shape from the conv's input.
// b, c and x are the three chunks of one projection (a Split along the
// channels), so they provably have one shape.
// CHECK-LABEL: func.func @lfm2_short_conv
// CHECK: %[[S:.*]]:3 = "onnx.Split"
// CHECK: %[[Y:.*]] = gated.short_conv %[[S]]#2, %[[S]]#0, %[[S]]#1, %{{.*}} : tensor<?x4x?xf32>, tensor<4x1x3xf32>
// CHECK-NOT: onnx.Conv
// CHECK: return %[[Y]]
func.func @lfm2_short_conv(%bcx: tensor<?x12x?xf32>) -> tensor<?x4x?xf32> {
  %w = onnx.Constant dense<0.5> : tensor<4x1x3xf32>
  %none = "onnx.NoValue"() {value} : () -> none
  %b, %c, %x = "onnx.Split"(%bcx, %none) <{axis = 1 : i64, num_outputs = 3 : i64}> : (tensor<?x12x?xf32>, none) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>)
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %bx = "onnx.Mul"(%b, %x) : (tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %t = "onnx.Shape"(%bx) <{start = 2 : i64, end = 3 : i64}> : (tensor<?x4x?xf32>) -> tensor<1xi64>
  %conv = "onnx.Conv"(%bx, %w, %none) <{auto_pad = "NOTSET", dilations = array<i64: 1>, group = 4 : i64, kernel_shape = array<i64: 3>, pads = array<i64: 2, 2>, strides = array<i64: 1>}> : (tensor<?x4x?xf32>, tensor<4x1x3xf32>, none) -> tensor<?x4x?xf32>
  %s = "onnx.Slice"(%conv, %zero, %t, %axis, %one) : (tensor<?x4x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?xf32>
  %y = "onnx.Mul"(%c, %s) : (tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  return %y : tensor<?x4x?xf32>
}

// -----

// Static lengths, a conv bias, the end a constant equal to T.
// CHECK-LABEL: func.func @static_bias
// CHECK: gated.short_conv %arg1, %arg0, %arg2, %{{.*}} bias(%{{.*}} : tensor<4xf32>) : tensor<1x4x6xf32>, tensor<4x1x2xf32>
func.func @static_bias(%b: tensor<1x4x6xf32>, %x: tensor<1x4x6xf32>, %c: tensor<1x4x6xf32>) -> tensor<1x4x6xf32> {
  %w = onnx.Constant dense<0.5> : tensor<4x1x2xf32>
  %bias = onnx.Constant dense<0.1> : tensor<4xf32>
  %none = "onnx.NoValue"() {value} : () -> none
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %end = onnx.Constant dense<6> : tensor<1xi64>
  %axis = onnx.Constant dense<-1> : tensor<1xi64>
  %bx = "onnx.Mul"(%b, %x) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %conv = "onnx.Conv"(%bx, %w, %bias) <{group = 4 : i64, kernel_shape = array<i64: 2>, pads = array<i64: 1, 1>}> : (tensor<1x4x6xf32>, tensor<4x1x2xf32>, tensor<4xf32>) -> tensor<1x4x7xf32>
  %s = "onnx.Slice"(%conv, %zero, %end, %axis, %none) : (tensor<1x4x7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4x6xf32>
  %y = "onnx.Mul"(%s, %c) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  return %y : tensor<1x4x6xf32>
}

// -----

// Not raised: a conv that is not causal (pads 1 on the left for 3 taps),
// one that is not depthwise (group 1), and a Slice that keeps other
// outputs than the first T (start 2).
// CHECK-LABEL: func.func @not_short_conv
// CHECK-NOT: gated.short_conv
// CHECK-COUNT-3: onnx.Conv
func.func @not_short_conv(%b: tensor<1x4x6xf32>, %x: tensor<1x4x6xf32>, %c: tensor<1x4x6xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32>) {
  %w = onnx.Constant dense<0.5> : tensor<4x1x3xf32>
  %wf = onnx.Constant dense<0.5> : tensor<4x4x3xf32>
  %none = "onnx.NoValue"() {value} : () -> none
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %end = onnx.Constant dense<6> : tensor<1xi64>
  %end8 = onnx.Constant dense<8> : tensor<1xi64>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %bx = "onnx.Mul"(%b, %x) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %c1 = "onnx.Conv"(%bx, %w, %none) <{group = 4 : i64, pads = array<i64: 1, 1>}> : (tensor<1x4x6xf32>, tensor<4x1x3xf32>, none) -> tensor<1x4x6xf32>
  %s1 = "onnx.Slice"(%c1, %zero, %end, %axis, %none) : (tensor<1x4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4x6xf32>
  %y1 = "onnx.Mul"(%c, %s1) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %c2 = "onnx.Conv"(%bx, %wf, %none) <{group = 1 : i64, pads = array<i64: 2, 2>}> : (tensor<1x4x6xf32>, tensor<4x4x3xf32>, none) -> tensor<1x4x8xf32>
  %s2 = "onnx.Slice"(%c2, %zero, %end, %axis, %none) : (tensor<1x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4x6xf32>
  %y2 = "onnx.Mul"(%c, %s2) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %c3 = "onnx.Conv"(%bx, %w, %none) <{group = 4 : i64, pads = array<i64: 2, 2>}> : (tensor<1x4x6xf32>, tensor<4x1x3xf32>, none) -> tensor<1x4x8xf32>
  %s3 = "onnx.Slice"(%c3, %two, %end8, %axis, %none) : (tensor<1x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4x6xf32>
  %y3 = "onnx.Mul"(%c, %s3) : (tensor<1x4x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  return %y1, %y2, %y3 : tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32>
}

// -----

// b, x and c of independent dynamic shapes: the Muls may broadcast, so the
// pattern is left alone.
// CHECK-LABEL: func.func @independent_shapes
// CHECK-NOT: gated.short_conv
func.func @independent_shapes(%b: tensor<?x4x?xf32>, %x: tensor<?x4x?xf32>, %c: tensor<?x4x?xf32>) -> tensor<?x4x?xf32> {
  %w = onnx.Constant dense<0.5> : tensor<4x1x3xf32>
  %none = "onnx.NoValue"() {value} : () -> none
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %bx = "onnx.Mul"(%b, %x) : (tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %t = "onnx.Shape"(%bx) <{start = 2 : i64, end = 3 : i64}> : (tensor<?x4x?xf32>) -> tensor<1xi64>
  %conv = "onnx.Conv"(%bx, %w, %none) <{group = 4 : i64, kernel_shape = array<i64: 3>, pads = array<i64: 2, 2>}> : (tensor<?x4x?xf32>, tensor<4x1x3xf32>, none) -> tensor<?x4x?xf32>
  %s = "onnx.Slice"(%conv, %zero, %t, %axis, %one) : (tensor<?x4x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?xf32>
  %y = "onnx.Mul"(%c, %s) : (tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  return %y : tensor<?x4x?xf32>
}
