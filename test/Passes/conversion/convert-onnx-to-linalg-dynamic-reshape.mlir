// RUN: gatec-opt %s --convert-onnx-to-linalg --canonicalize -split-input-file | FileCheck %s

// The head split of an export: Reshape to (B, T, -1, D) with B and T read
// from the input's Shape. Of the same rank as its [B, T, H, D] input, it is
// that input (each dim its own group, every group exact): no tensor.reshape.
// The shape vector itself is built from its elements (no tensor.concat).
// CHECK-LABEL: func.func @same_rank
// CHECK-NOT: tensor.reshape
// CHECK-NOT: tensor.concat
// CHECK: %[[E:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3]]
// CHECK: return %[[E]] : tensor<?x?x4x16xf32>
func.func @same_rank(%arg0: tensor<?x?x64xf32>) -> tensor<?x?x4x16xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<0> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %c16 = onnx.Constant dense<16> : tensor<1xi64>
  %s = "onnx.Shape"(%arg0) <{start = 0 : i64}> : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %g0 = "onnx.Gather"(%s, %c0) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %g1 = "onnx.Gather"(%s, %c1) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %u0 = "onnx.Unsqueeze"(%g0, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %u1 = "onnx.Unsqueeze"(%g1, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %sh = "onnx.Concat"(%u0, %u1, %m1, %c16) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %sh2 = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %x = "onnx.Reshape"(%arg0, %sh2) <{allowzero = 0 : i64}> : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %r = "onnx.Reshape"(%x, %sh) <{allowzero = 0 : i64}> : (tensor<?x?x4x16xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  return %r : tensor<?x?x4x16xf32>
}

// -----

// The same with T taken from another input: its dims are not provably the
// input's, so the general reshape (sizes computed at run time) stays.
// CHECK-LABEL: func.func @same_rank_other_input
// CHECK: tensor.reshape
func.func @same_rank_other_input(%arg0: tensor<?x?x4x16xf32>, %arg1: tensor<?x?xf32>) -> tensor<?x?x4x16xf32> {
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<0> : tensor<1xi64>
  %z = onnx.Constant dense<0> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %c16 = onnx.Constant dense<16> : tensor<1xi64>
  %s = "onnx.Shape"(%arg1) <{start = 0 : i64}> : (tensor<?x?xf32>) -> tensor<2xi64>
  %g1 = "onnx.Gather"(%s, %c1) <{axis = 0 : i64}> : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %u1 = "onnx.Unsqueeze"(%g1, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %sh = "onnx.Concat"(%z, %u1, %m1, %c16) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%arg0, %sh) <{allowzero = 0 : i64}> : (tensor<?x?x4x16xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  return %r : tensor<?x?x4x16xf32>
}

// -----

// Graph inputs that share a dim_param have one size (the runtime checks
// them before the model runs): a key split with the batch size read from
// the query input's Shape is an expand_shape.
// CHECK-LABEL: func.func @shared_dim_param
// CHECK-NOT: tensor.reshape
// CHECK: tensor.expand_shape %arg1 {{\[}}[0], [1], [2, 3]]
func.func @shared_dim_param(%arg0: tensor<?x?x32xf32> {onnx.dim_params = ["batch", "seq", ""]}, %arg1: tensor<?x?x32xf32> {onnx.dim_params = ["batch", "media_seq", ""]}) -> tensor<?x?x4x8xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<0> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %c8 = onnx.Constant dense<8> : tensor<1xi64>
  %sx = "onnx.Shape"(%arg0) <{start = 0 : i64}> : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %sm = "onnx.Shape"(%arg1) <{start = 0 : i64}> : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %b = "onnx.Gather"(%sx, %c0) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%sm, %c1) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ub = "onnx.Unsqueeze"(%b, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %us = "onnx.Unsqueeze"(%s, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %sh = "onnx.Concat"(%ub, %us, %m1, %c8) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%arg1, %sh) <{allowzero = 0 : i64}> : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  return %r : tensor<?x?x4x8xf32>
}

// -----

// Different dim_params may differ: the general reshape stays.
// CHECK-LABEL: func.func @other_dim_param
// CHECK: tensor.reshape
func.func @other_dim_param(%arg0: tensor<?x?x32xf32> {onnx.dim_params = ["batch", "seq", ""]}, %arg1: tensor<?x?x32xf32> {onnx.dim_params = ["media_batch", "media_seq", ""]}) -> tensor<?x?x4x8xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<0> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %c8 = onnx.Constant dense<8> : tensor<1xi64>
  %sx = "onnx.Shape"(%arg0) <{start = 0 : i64}> : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %sm = "onnx.Shape"(%arg1) <{start = 0 : i64}> : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %b = "onnx.Gather"(%sx, %c0) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %s = "onnx.Gather"(%sm, %c1) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ub = "onnx.Unsqueeze"(%b, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %us = "onnx.Unsqueeze"(%s, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %sh = "onnx.Concat"(%ub, %us, %m1, %c8) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%arg1, %sh) <{allowzero = 0 : i64}> : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  return %r : tensor<?x?x4x8xf32>
}

// -----

// A Reshape whose input was lowered before it (here by hand, as
// --convert-gated-to-linalg does in the pipeline): its dims are followed
// through the linalg result's init and tensor.empty to the graph input.
// CHECK-LABEL: func.func @through_lowered_producer
// CHECK-NOT: tensor.reshape
// CHECK: tensor.expand_shape
func.func @through_lowered_producer(%arg0: tensor<?x?x32xf32>) -> tensor<?x?x4x8xf32> {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %d0 = tensor.dim %arg0, %i0 : tensor<?x?x32xf32>
  %d1 = tensor.dim %arg0, %i1 : tensor<?x?x32xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x32xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<?x?x32xf32>) outs(%e : tensor<?x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.negf %in : f32
    linalg.yield %y : f32
  } -> tensor<?x?x32xf32>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %a0 = onnx.Constant dense<0> : tensor<1xi64>
  %m1 = onnx.Constant dense<-1> : tensor<1xi64>
  %c8 = onnx.Constant dense<8> : tensor<1xi64>
  %s = "onnx.Shape"(%arg0) <{start = 0 : i64}> : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %g0 = "onnx.Gather"(%s, %c0) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %g1 = "onnx.Gather"(%s, %c1) <{axis = 0 : i64}> : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %u0 = "onnx.Unsqueeze"(%g0, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %u1 = "onnx.Unsqueeze"(%g1, %a0) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %sh = "onnx.Concat"(%u0, %u1, %m1, %c8) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%n, %sh) <{allowzero = 0 : i64}> : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  return %r : tensor<?x?x4x8xf32>
}
