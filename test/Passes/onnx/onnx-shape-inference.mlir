// RUN: gatec-opt %s --onnx-shape-inference -split-input-file | FileCheck %s

// Unranked results become the types the ONNX shape rules give; the function
// signature follows its return.
// CHECK-LABEL: func.func @refine
// CHECK-SAME: -> tensor<2x4x8x8xf32>
func.func @refine(%x: tensor<2x8x32xf32>) -> tensor<*xf32> {
  %s = onnx.Constant dense<[2, 8, 4, 8]> : tensor<4xi64>
  // CHECK: "onnx.Reshape"{{.*}} -> tensor<2x8x4x8xf32>
  %r = "onnx.Reshape"(%x, %s) : (tensor<2x8x32xf32>, tensor<4xi64>) -> tensor<*xf32>
  // CHECK: "onnx.Transpose"{{.*}} -> tensor<2x4x8x8xf32>
  %t = "onnx.Transpose"(%r) {perm = array<i64: 0, 2, 1, 3>} : (tensor<*xf32>) -> tensor<*xf32>
  return %t : tensor<*xf32>
}

// -----

// A shape read at run time: the result's rank is the shape's static length
// (its dims are known at run time only).
// CHECK-LABEL: func.func @reshape_run_time_shape
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?x?xf32>
// CHECK: "onnx.Relu"{{.*}} -> tensor<?x?x?xf32>
func.func @reshape_run_time_shape(%x: tensor<?x?xf32>, %s: tensor<3xi64>) -> tensor<*xf32> {
  %r = "onnx.Reshape"(%x, %s) : (tensor<?x?xf32>, tensor<3xi64>) -> tensor<*xf32>
  %y = "onnx.Relu"(%r) : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Shape arithmetic on static dims folds to a constant; the scale
// 1/sqrt(head_dim) computed from the shape folds too.
// CHECK-LABEL: func.func @fold_scale
func.func @fold_scale(%q: tensor<2x4x8x16xf32>) -> tensor<*xf32> {
  // CHECK-NOT: onnx.Shape
  // CHECK-NOT: onnx.Sqrt
  // CHECK: %[[C:.*]] = onnx.Constant dense<4.000000e+00> : tensor<1xf32>
  // CHECK: "onnx.Div"(%arg0, %[[C]])
  %shape = "onnx.Shape"(%q) {start = -1 : i64} : (tensor<2x4x8x16xf32>) -> tensor<*xi64>
  %f = "onnx.Cast"(%shape) {to = f32} : (tensor<*xi64>) -> tensor<*xf32>
  %sq = "onnx.Sqrt"(%f) : (tensor<*xf32>) -> tensor<*xf32>
  %y = "onnx.Div"(%q, %sq) : (tensor<2x4x8x16xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// No algebraic rewriting: x - (x + 1) is not folded.
// CHECK-LABEL: func.func @no_algebra
func.func @no_algebra(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = onnx.Constant dense<1.0> : tensor<f32>
  // CHECK: "onnx.Add"
  // CHECK: "onnx.Sub"
  %a = "onnx.Add"(%x, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = "onnx.Sub"(%x, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// With dynamic dims the chain stays; known entries still make dims static.
// CHECK-LABEL: func.func @dynamic_chain
func.func @dynamic_chain(%x: tensor<?x?x32xf32>) -> tensor<*xf32> {
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %ax = onnx.Constant dense<0> : tensor<1xi64>
  %rest = onnx.Constant dense<[4, 8]> : tensor<2xi64>
  // CHECK: "onnx.Shape"
  %s = "onnx.Shape"(%x) : (tensor<?x?x32xf32>) -> tensor<*xi64>
  %b = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = "onnx.Unsqueeze"(%b, %ax) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %m = onnx.Constant dense<-1> : tensor<1xi64>
  %t = "onnx.Concat"(%b1, %m, %rest) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<*xi64>
  // CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?x4x8xf32>
  %r = "onnx.Reshape"(%x, %t) : (tensor<?x?x32xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// The 2-D causal mask of a static sequence folds (Range, Unsqueeze, Less).
// CHECK-LABEL: func.func @causal_mask
func.func @causal_mask() -> tensor<*xi1> {
  // CHECK: onnx.Constant dense<{{\[}}[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %s = onnx.Constant dense<0> : tensor<i64>
  %l = onnx.Constant dense<3> : tensor<i64>
  %d = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %ax1 = onnx.Constant dense<1> : tensor<1xi64>
  %r = "onnx.Range"(%s, %l, %d) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  %row = "onnx.Unsqueeze"(%r, %ax1) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %col = "onnx.Unsqueeze"(%r, %ax0) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %m = "onnx.Less"(%row, %col) : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi1>
  return %m : tensor<*xi1>
}

// -----

// A Scan body's inputs take the static sizes of the initial state and of
// each scan input without its scan axis; the body and the Scan's results
// are refined from them (the scan output is then static apart from its
// scan axis, as the Scan lowering needs).
// CHECK-LABEL: func.func @scan_body_inputs
// CHECK: ^bb0(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x4xf32>):
// CHECK: "onnx.Add"{{.*}} -> tensor<2x4xf32>
// CHECK: -> (tensor<2x4xf32>, tensor<?x2x4xf32>)
func.func @scan_body_inputs(%init: tensor<2x4xf32>, %xs: tensor<?x2x4xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %final, %ys = "onnx.Scan"(%init, %xs) ({
  ^bb0(%s: tensor<2x?xf32>, %x: tensor<?x?xf32>):
    %n = "onnx.Add"(%s, %x) : (tensor<2x?xf32>, tensor<?x?xf32>) -> tensor<*xf32>
    onnx.Yield %n, %n : tensor<*xf32>, tensor<*xf32>
  }) {num_scan_inputs = 1 : i64} : (tensor<2x4xf32>, tensor<?x2x4xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return %final, %ys : tensor<*xf32>, tensor<*xf32>
}

// -----

// torch's expand as the TorchScript exporter writes it: the target shape's
// -1 entries replaced by Where(Equal(shape, -1), ones, shape). Entries that
// are dims (never -1) or constants other than -1 are kept, -1 gives 1: the
// mask's dims are [B, 1, 1, S], not unknown.
// CHECK-LABEL: func.func @expand_where_minus_one
// CHECK: "onnx.Expand"
// CHECK-SAME: -> tensor<?x1x1x?xi1>
func.func @expand_where_minus_one(%m: tensor<?x1x1x?xi1>, %x: tensor<?x?xf32>) -> tensor<*xi1> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %m1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %one = onnx.Constant dense<[1]> : tensor<1xi64>
  %minus = onnx.Constant dense<-1> : tensor<4xi64>
  %ones = onnx.Constant dense<1> : tensor<4xi64>
  %xs = "onnx.Shape"(%x) <{start = 0 : i64}> : (tensor<?x?xf32>) -> tensor<2xi64>
  %b = "onnx.Gather"(%xs, %c0) <{axis = 0 : i64}> : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%xs, %c1) <{axis = 0 : i64}> : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %bu = "onnx.Unsqueeze"(%b, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %su = "onnx.Unsqueeze"(%s, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = "onnx.Concat"(%bu, %m1, %one, %su) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %eq = "onnx.Equal"(%shape, %minus) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %t = "onnx.Where"(%eq, %ones, %shape) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %e = "onnx.Expand"(%m, %t) : (tensor<?x1x1x?xi1>, tensor<4xi64>) -> tensor<*xi1>
  return %e : tensor<*xi1>
}
