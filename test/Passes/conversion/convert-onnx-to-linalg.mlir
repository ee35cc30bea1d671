// RUN: gatec-opt %s --convert-onnx-to-linalg -split-input-file -verify-diagnostics | FileCheck %s

// Constants become arith.constant, weights stay dense_resource blobs.
// CHECK-LABEL: func.func @constants
// CHECK: arith.constant dense<[3, -1]> : tensor<2xi64>
// CHECK: arith.constant dense_resource<w> : tensor<2x2xf32>
// CHECK-NOT: onnx.
func.func @constants() -> (tensor<2xi64>, tensor<2x2xf32>) {
  %0 = onnx.Constant dense<[3, -1]> : tensor<2xi64>
  %1 = onnx.Constant dense_resource<w> : tensor<2x2xf32>
  return %0, %1 : tensor<2xi64>, tensor<2x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// MatMul with a 2-D weight: a contraction whose loops are the result dims
// and K; the bias broadcasts along the last dim; the dynamic batch size
// comes from tensor.dim.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @matmul_add
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x8x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[B]], {{.*}}]
func.func @matmul_add(%x: tensor<?x8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<?x8x4xf32> {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<?x8x16xf32>, tensor<16x4xf32>) -> tensor<?x8x4xf32>
  %1 = "onnx.Add"(%0, %b) : (tensor<?x8x4xf32>, tensor<4xf32>) -> tensor<?x8x4xf32>
  return %1 : tensor<?x8x4xf32>
}

// -----

// A Reshape whose shape is Concat(Shape(x)[0], Shape(x)[1], 4, -1) provably
// keeps the dynamic dims: an expand_shape of their tensor.dim sizes, and
// the shape computation disappears.
// CHECK-LABEL: func.func @reshape_heads
// CHECK: %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c1
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3]] output_shape [%[[B]], %[[T]], 4, 16]
// CHECK-NOT: tensor.concat
func.func @reshape_heads(%x: tensor<?x?x64xf32>) -> tensor<?x?x4x16xf32> {
  %0 = onnx.Constant dense<0> : tensor<i64>
  %1 = onnx.Constant dense<1> : tensor<i64>
  %2 = onnx.Constant dense<0> : tensor<1xi64>
  %3 = onnx.Constant dense<4> : tensor<1xi64>
  %4 = onnx.Constant dense<-1> : tensor<1xi64>
  %s = "onnx.Shape"(%x) <{start = 0 : i64}> : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %b = "onnx.Gather"(%s, %0) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %t = "onnx.Gather"(%s, %1) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bu = "onnx.Unsqueeze"(%b, %2) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %tu = "onnx.Unsqueeze"(%t, %2) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = "onnx.Concat"(%bu, %tu, %3, %4) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%x, %shape) <{allowzero = 0 : i64}> : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  return %r : tensor<?x?x4x16xf32>
}

// -----

// A shape known only at run time: its elements are read, 0 copies the
// input dim, -1 takes the remaining elements; then tensor.reshape.
// CHECK-LABEL: func.func @reshape_runtime
// CHECK: tensor.extract %arg1[%c0
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.divsi
// CHECK: %[[S:.*]] = tensor.from_elements {{.*}} : tensor<2xindex>
// CHECK: tensor.reshape %arg0(%[[S]]) : (tensor<?x?x64xf32>, tensor<2xindex>) -> tensor<?x?xf32>
func.func @reshape_runtime(%x: tensor<?x?x64xf32>, %shape: tensor<2xi64>) -> tensor<?x?xf32> {
  %r = "onnx.Reshape"(%x, %shape) <{allowzero = 0 : i64}> : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Slice (INT64_MAX end, negative axis) is an extract_slice, Transpose a
// linalg.transpose, Concat a tensor.concat.
// CHECK-LABEL: func.func @movement
// CHECK: tensor.extract_slice %arg0[0, 0, 0, 8] [2, 8, 4, 8] [1, 1, 1, 1]
// CHECK: linalg.transpose ins({{.*}} : tensor<2x8x4x8xf32>) outs({{.*}} : tensor<2x4x8x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: tensor.concat dim(3) %arg0, %arg0
func.func @movement(%x: tensor<2x8x4x16xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x8x4x32xf32>) {
  %st = onnx.Constant dense<8> : tensor<1xi64>
  %en = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %ax = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.NoValue
  %s = "onnx.Slice"(%x, %st, %en, %ax, %none) : (tensor<2x8x4x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x8x4x8xf32>
  %t = "onnx.Transpose"(%s) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x8x4x8xf32>) -> tensor<2x4x8x8xf32>
  %c = "onnx.Concat"(%x, %x) <{axis = -1 : i64}> : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x32xf32>
  return %t, %c : tensor<2x4x8x8xf32>, tensor<2x8x4x32xf32>
}

// -----

// Cast float -> int truncates toward zero (fptosi); integer Div too (divsi).
// CHECK-LABEL: func.func @integers
// CHECK: arith.fptosi %{{.*}} : f32 to i64
// CHECK: arith.divsi %{{.*}} : i64
func.func @integers(%x: tensor<4xf32>, %a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %0 = "onnx.Cast"(%x) <{to = i64}> : (tensor<4xf32>) -> tensor<4xi64>
  %1 = "onnx.Div"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// Gather of one element of a shape: tensor.extract, negative indices count
// from the end.
// CHECK-LABEL: func.func @gather_dim
// CHECK: %[[S:.*]] = tensor.from_elements {{.*}} : tensor<2xi64>
// CHECK: arith.cmpi slt
// CHECK: %[[V:.*]] = tensor.extract %[[S]]
// CHECK: tensor.from_elements %[[V]] : tensor<i64>
func.func @gather_dim(%x: tensor<?x8xf32>) -> tensor<i64> {
  %i = onnx.Constant dense<-2> : tensor<i64>
  %s = "onnx.Shape"(%x) <{start = 0 : i64}> : (tensor<?x8xf32>) -> tensor<2xi64>
  %d = "onnx.Gather"(%s, %i) <{axis = 0 : i64}> : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  return %d : tensor<i64>
}

// -----

// Softmax: a max and a sum of exp(x - max) reduced over the axis, then
// exp(x - max) / sum.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = "onnx.Softmax"(%x) <{axis = -1 : i64}> : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// Unsigned integers keep their tensor types; the scalars cross to signless
// for arith, which divides, compares and takes the max unsigned.
// CHECK-LABEL: func.func @unsigned
// CHECK: arith.divui
// CHECK: arith.cmpi ult
// CHECK: arith.maxui
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>, tensor<4xui8>) {
  %0 = "onnx.Div"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = "onnx.Less"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %2 = "onnx.Max"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xi1>, tensor<4xui8>
}

// -----

// Gemm: a contraction over k (B transposed), then alpha and beta * C.
// CHECK-LABEL: func.func @gemm
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @gemm(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = "onnx.Gemm"(%a, %b, %c) <{alpha = 0.5 : f32, beta = 2.0 : f32, transB = 1 : i64}> : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Axes known at run time: a reduced-or-not flag per dim from the axes
// tensor, then a loop over the reduced elements of each output element.
// CHECK-LABEL: func.func @reduce_runtime_axes
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: tensor.reshape
func.func @reduce_runtime_axes(%x: tensor<3x4xf32>, %a: tensor<1xi64>) -> tensor<?xf32> {
  %0 = "onnx.ReduceSum"(%x, %a) <{keepdims = 0 : i64}> : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CumSum sums each element's run of the axis in a loop.
// CHECK-LABEL: func.func @cumsum
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: arith.addf
func.func @cumsum(%x: tensor<2x3xf32>, %a: tensor<i64>) -> tensor<2x3xf32> {
  %0 = "onnx.CumSum"(%x, %a) <{exclusive = 1 : i64, reverse = 1 : i64}> : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative steps (and starts/ends/axes/steps read at run time): a generic
// reading x[start + i * step].
// CHECK-LABEL: func.func @negative_step
// CHECK: linalg.generic
// CHECK: arith.muli
// CHECK: tensor.extract
func.func @negative_step(%x: tensor<8xf32>) -> tensor<8xf32> {
  %st = onnx.Constant dense<-1> : tensor<1xi64>
  %en = onnx.Constant dense<-9223372036854775807> : tensor<1xi64>
  %ax = onnx.Constant dense<0> : tensor<1xi64>
  %sp = onnx.Constant dense<-1> : tensor<1xi64>
  %r = "onnx.Slice"(%x, %st, %en, %ax, %sp) : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// The causal depthwise conv1d of a Gated DeltaNet layer (group = channels,
// kernel 4, pads [3, 0]): X goes into zeros at offset 3 of the sequence,
// one contraction over (n, m, o | c, k) reads X[n, m + c, o + k] (C/G = 1),
// the bias is added after it; the sequence length is dynamic.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @conv1d_depthwise_causal
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c2
// CHECK: %[[TP:.*]] = arith.addi %[[T]], %c3
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<2x8x?xf32>
// CHECK: %[[XP:.*]] = tensor.insert_slice %arg0 into %[[Z]][0, 0, 3] [2, 8, %{{.*}}] [1, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[XP]], %arg1
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[B]], {{.*}}]
// CHECK-NOT: onnx.
func.func @conv1d_depthwise_causal(%x: tensor<2x8x?xf32>, %w: tensor<8x1x4xf32>, %b: tensor<8xf32>) -> tensor<2x8x?xf32> {
  %y = "onnx.Conv"(%x, %w, %b) <{group = 8 : i64, pads = array<i64: 3, 0>}> : (tensor<2x8x?xf32>, tensor<8x1x4xf32>, tensor<8xf32>) -> tensor<2x8x?xf32>
  return %y : tensor<2x8x?xf32>
}

// -----

// Grouped 2-D conv with strides and dilations: output channel m reads the
// input channels of its group, (m floordiv M/G) * C/G + c.
// CHECK: affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 3) * 2 + d4, d2 * 2 + d5 * 2, d3 + d6)>
// CHECK-LABEL: func.func @conv2d_grouped
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic
func.func @conv2d_grouped(%x: tensor<1x4x9x5xf32>, %w: tensor<6x2x3x2xf32>) -> tensor<1x6x3x4xf32> {
  %n = onnx.NoValue
  %y = "onnx.Conv"(%x, %w, %n) <{group = 2 : i64, strides = array<i64: 2, 1>, dilations = array<i64: 2, 1>}> : (tensor<1x4x9x5xf32>, tensor<6x2x3x2xf32>, none) -> tensor<1x6x3x4xf32>
  return %y : tensor<1x6x3x4xf32>
}

// -----

// Scan becomes an scf.for over the scan axis: the state and the scan
// output are iteration arguments, each step extracts its row of the scan
// input (the reverse one from the end), lowers the body in the loop,
// inserts its row of the output and copies the new state into the old one
// (so that the state bufferizes in place); values the body captures (%c) are the
// lowered ones from outside the loop.
// CHECK-LABEL: func.func @scan_cumsum
// CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK: %[[YS:.*]] = tensor.empty() : tensor<6x4xf32>
// CHECK: %[[R:.*]]:2 = scf.for %[[I:.*]] = %c0 to %c6 step %c1 iter_args(%[[S:.*]] = %arg0, %[[ACC:.*]] = %[[YS]])
// CHECK:   %[[BACK:.*]] = arith.subi %{{.*}}, %[[I]]
// CHECK:   %[[X:.*]] = tensor.extract_slice %arg1[%[[BACK]], 0] [1, 4] [1, 1] : tensor<6x4xf32> to tensor<4xf32>
// CHECK:   %[[ADD:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[X]]
// CHECK:   %[[MUL:.*]] = linalg.generic {{.*}} ins(%[[ADD]], %[[C]]
// CHECK:   %[[NEXT:.*]] = linalg.copy ins(%[[ADD]] : tensor<4xf32>) outs(%[[S]] : tensor<4xf32>)
// CHECK:   %[[INS:.*]] = tensor.insert_slice %[[MUL]] into %[[ACC]][%[[I]], 0] [1, 4] [1, 1]
// CHECK:   scf.yield %[[NEXT]], %[[INS]]
// CHECK: return %[[R]]#0, %[[R]]#1
// CHECK-NOT: onnx.
func.func @scan_cumsum(%init: tensor<4xf32>, %xs: tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>) {
  %c = onnx.Constant dense<2.0> : tensor<4xf32>
  %final, %ys = "onnx.Scan"(%init, %xs) ({
  ^bb0(%s: tensor<4xf32>, %x: tensor<4xf32>):
    %n = "onnx.Add"(%s, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %m = "onnx.Mul"(%n, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n, %m : tensor<4xf32>, tensor<4xf32>
  }) {num_scan_inputs = 1 : i64, scan_input_directions = array<i64: 1>} : (tensor<4xf32>, tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>)
  return %final, %ys : tensor<4xf32>, tensor<6x4xf32>
}

// -----

// Unsupported forms are located errors.// -----

// Unsupported forms are located errors.
func.func @rotary_3d_no_heads(%x: tensor<1x2x8xf32>, %c: tensor<4x4xf32>, %p: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  // expected-error @+1 {{'onnx.RotaryEmbedding' op cannot be lowered: a 3-D input without num_heads}}
  %r = "onnx.RotaryEmbedding"(%x, %c, %c, %p) : (tensor<1x2x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

func.func @unranked(%x: tensor<2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'onnx.Einsum' op cannot be lowered: an unranked tensor}}
  %r = "onnx.Einsum"(%x) <{equation = "...i->...i"}> : (tensor<2x3xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @random_dropout(%x: tensor<4xf32>, %t: tensor<i1>) -> tensor<4xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.Dropout' op cannot be lowered: a training_mode known only at run time (random dropout is not supported)}}
  %r, %m = "onnx.Dropout"(%x, %n, %t) : (tensor<4xf32>, none, tensor<i1>) -> (tensor<4xf32>, none)
  return %r : tensor<4xf32>
}

// -----

func.func @conv_dynamic_kernel(%x: tensor<1x4x8xf32>, %w: tensor<4x1x?xf32>) -> tensor<1x4x?xf32> {
  %n = onnx.NoValue
  // expected-error @+1 {{'onnx.Conv' op cannot be lowered: W (the kernel) has a dynamic shape}}
  %y = "onnx.Conv"(%x, %w, %n) <{group = 4 : i64}> : (tensor<1x4x8xf32>, tensor<4x1x?xf32>, none) -> tensor<1x4x?xf32>
  return %y : tensor<1x4x?xf32>
}

// -----

func.func @scan_dynamic_output(%init: tensor<4xf32>, %xs: tensor<6x?xf32>) -> (tensor<4xf32>, tensor<6x?xf32>) {
  // expected-error @+1 {{'onnx.Scan' op cannot be lowered: a scan output with a dynamic size besides its scan axis}}
  %final, %ys = "onnx.Scan"(%init, %xs) ({
  ^bb0(%s: tensor<4xf32>, %x: tensor<?xf32>):
    onnx.Yield %s, %x : tensor<4xf32>, tensor<?xf32>
  }) {num_scan_inputs = 1 : i64} : (tensor<4xf32>, tensor<6x?xf32>) -> (tensor<4xf32>, tensor<6x?xf32>)
  return %final, %ys : tensor<4xf32>, tensor<6x?xf32>
}
