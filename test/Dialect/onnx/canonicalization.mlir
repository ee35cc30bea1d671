// RUN: gatec-opt %s --canonicalize -split-input-file | FileCheck %s
// The folders of the onnx ops: constant shape arithmetic only.

// CHECK-LABEL: func.func @shape_gather_concat
// CHECK: %[[C:.*]] = onnx.Constant dense<[8, 4, 16]> : tensor<3xi64>
// CHECK: return %[[C]]
func.func @shape_gather_concat(%x: tensor<2x8x64xf32>) -> tensor<3xi64> {
  %s = "onnx.Shape"(%x) : (tensor<2x8x64xf32>) -> tensor<3xi64>
  %i = onnx.Constant dense<1> : tensor<1xi64>
  %g = "onnx.Gather"(%s, %i) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = onnx.Constant dense<[4, 16]> : tensor<2xi64>
  %c = "onnx.Concat"(%g, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  return %c : tensor<3xi64>
}

// -----

// A Cast to the type its input has is the identity; casts of constants fold
// (float to int truncates toward zero).
// CHECK-LABEL: func.func @casts
// CHECK-DAG: %[[I:.*]] = onnx.Constant dense<[2, -2]> : tensor<2xi64>
// CHECK: return %arg0, %[[I]]
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi64>) {
  %a = "onnx.Cast"(%x) {to = f32} : (tensor<4xf32>) -> tensor<4xf32>
  %f = onnx.Constant dense<[2.7, -2.7]> : tensor<2xf32>
  %i = "onnx.Cast"(%f) {to = i64} : (tensor<2xf32>) -> tensor<2xi64>
  return %a, %i : tensor<4xf32>, tensor<2xi64>
}

// -----

// Shape of a dynamic tensor does not fold, but the dims that are static do.
// CHECK-LABEL: func.func @partial
// CHECK-DAG: %[[D:.*]] = onnx.Constant dense<64> : tensor<i64>
// CHECK-DAG: %[[S:.*]] = "onnx.Shape"(%arg0)
// CHECK: return %[[S]], %[[D]]
func.func @partial(%x: tensor<?x?x64xf32>) -> (tensor<3xi64>, tensor<i64>) {
  %s = "onnx.Shape"(%x) : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %i = onnx.Constant dense<2> : tensor<i64>
  %g = "onnx.Gather"(%s, %i) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %s, %g : tensor<3xi64>, tensor<i64>
}

// -----

// The same through Slice (the TorchScript SDPA export reads the head dim as
// Shape(q)[-1:] for its scale): static dims fold, a dynamic one does not.
// CHECK-LABEL: func.func @partial_slice
// CHECK-DAG: %[[D:.*]] = onnx.Constant dense<8> : tensor<1xi64>
// CHECK-DAG: %[[T:.*]] = "onnx.Slice"
// CHECK: return %[[D]], %[[T]]
func.func @partial_slice(%q: tensor<?x4x?x8xf32>) -> (tensor<1xi64>, tensor<2xi64>) {
  %s = "onnx.Shape"(%q) : (tensor<?x4x?x8xf32>) -> tensor<4xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %big = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %n = onnx.NoValue
  %d = "onnx.Slice"(%s, %m1, %big, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %t = "onnx.Slice"(%s, %one, %three, %n, %n) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2xi64>
  return %d, %t : tensor<1xi64>, tensor<2xi64>
}

// -----

// Integer division truncates (C semantics); INT64_MIN / -1 is left to run
// time; Where and Equal on constants.
// CHECK-LABEL: func.func @arith
// CHECK-DAG: onnx.Constant dense<[-3, 3]> : tensor<2xi64>
// CHECK-DAG: "onnx.Div"
// CHECK-DAG: onnx.Constant dense<[1, 7]> : tensor<2xi64>
func.func @arith() -> (tensor<2xi64>, tensor<i64>, tensor<2xi64>) {
  %a = onnx.Constant dense<[-7, 7]> : tensor<2xi64>
  %b = onnx.Constant dense<2> : tensor<i64>
  %d = "onnx.Div"(%a, %b) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %min = onnx.Constant dense<-9223372036854775808> : tensor<i64>
  %m1 = onnx.Constant dense<-1> : tensor<i64>
  %e = "onnx.Div"(%min, %m1) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %neg = onnx.Constant dense<-7> : tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %c = "onnx.Equal"(%a, %neg) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  %w = "onnx.Where"(%c, %one, %a) : (tensor<2xi1>, tensor<i64>, tensor<2xi64>) -> tensor<2xi64>
  return %d, %e, %w : tensor<2xi64>, tensor<i64>, tensor<2xi64>
}

// -----

// ConstantOfShape folds to a splat up to 2^16 elements; a larger one stays an
// op (filled at run time: 2^31 elements ran the translation to LLVM IR out
// of memory, and a 256 MiB splat became a 268 MB library).
// CHECK-LABEL: func.func @constant_of_shape
// CHECK-DAG: %[[S:.*]] = onnx.Constant dense<1.500000e+00> : tensor<256x256xf32>
// CHECK-DAG: %[[B:.*]] = "onnx.ConstantOfShape"(%{{.*}}) <{value = dense<1.500000e+00> : tensor<1xf32>}> : (tensor<1xi64>) -> tensor<2147483648xf32>
// CHECK-DAG: %[[H:.*]] = "onnx.ConstantOfShape"(%{{.*}}) <{value = dense<0> : tensor<1xi64>}> : (tensor<2xi64>) -> tensor<1048576x1048576xi64>
// CHECK: return %[[S]], %[[B]], %[[H]]
func.func @constant_of_shape() -> (tensor<256x256xf32>, tensor<2147483648xf32>, tensor<1048576x1048576xi64>) {
  %s1 = onnx.Constant dense<[256, 256]> : tensor<2xi64>
  %a = "onnx.ConstantOfShape"(%s1) {value = dense<1.5> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<256x256xf32>
  %s2 = onnx.Constant dense<2147483648> : tensor<1xi64>
  %b = "onnx.ConstantOfShape"(%s2) {value = dense<1.5> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<2147483648xf32>
  %s3 = onnx.Constant dense<[1048576, 1048576]> : tensor<2xi64>
  %h = "onnx.ConstantOfShape"(%s3) {value = dense<0> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<1048576x1048576xi64>
  return %a, %b, %h : tensor<256x256xf32>, tensor<2147483648xf32>, tensor<1048576x1048576xi64>
}
