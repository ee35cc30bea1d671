// RUN: gatec-opt %s --convert-onnx-to-linalg -split-input-file | FileCheck %s
// RUN: gatec-opt %s --convert-gated-to-linalg --convert-onnx-to-linalg -split-input-file | FileCheck %s --check-prefix=FOLD

// A dynamic dim may be 1 at run time while the output's is 8 (ONNX
// multidirectional broadcasting): it is checked (1 or 8, else a cf.assert
// with the node's location) and broadcast at run time by a copy where it
// is 1; the element-wise generic then reads it like a full-size operand.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @dynamic_against_static
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[N]], %c8
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[N]], %c1
// CHECK: %[[OK:.*]] = arith.ori %[[ONE]], %[[SAME]]
// CHECK: cf.assert %[[OK]], "gatec: run-time sizes that do not broadcast (neither equal nor 1) in dim 1 of an operand of {{.*}}"
// CHECK: %[[B:.*]] = scf.if %{{.*}} -> (tensor<2x?xf32>) {
// CHECK:   linalg.generic {indexing_maps = [#[[ROW]], #[[ID]]]{{.*}} ins(%arg0 : tensor<2x?xf32>)
// CHECK: } else {
// CHECK:   scf.yield %arg0
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]]{{.*}} ins(%[[B]], %arg1 :
func.func @dynamic_against_static(%a: tensor<2x?xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "onnx.Add"(%a, %b) : (tensor<2x?xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Two unrelated dynamic dims: the output's size is (a == 1 ? b : a), and
// each operand is checked against it.
// CHECK-LABEL: func.func @dynamic_against_dynamic
// CHECK: %[[A:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[B:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[A1:.*]] = arith.cmpi eq, %[[A]], %c1
// CHECK: %[[S:.*]] = arith.select %[[A1]], %[[B]], %[[A]]
// CHECK: arith.cmpi eq, %{{.*}}, %[[S]]
// CHECK: cf.assert
// CHECK: scf.if
// CHECK: arith.cmpi eq, %{{.*}}, %[[S]]
// CHECK: cf.assert
// CHECK: scf.if
// CHECK: tensor.empty(%[[S]]) : tensor<?xf32>
func.func @dynamic_against_dynamic(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "onnx.Mul"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Provably equal sizes keep the plain maps: the same dim of one value
// (through the lowered Exp), and arguments with the same ONNX dim_param
// (the runtime checks those).
// CHECK-LABEL: func.func @provably_equal
// CHECK-NOT: cf.assert
// CHECK-NOT: scf.if
// CHECK: return
func.func @provably_equal(%a: tensor<?x4xf32> {onnx.dim_params = ["n", ""]}, %b: tensor<?x4xf32> {onnx.dim_params = ["n", ""]}, %c: tensor<i1>) -> tensor<?x4xf32> {
  %e = "onnx.Exp"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %0 = "onnx.Add"(%e, %a) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "onnx.Where"(%c, %0, %b) : (tensor<i1>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Different dim_params may differ: checked.
// CHECK-LABEL: func.func @different_params
// CHECK: cf.assert
func.func @different_params(%a: tensor<?x4xf32> {onnx.dim_params = ["n", ""]}, %b: tensor<?x4xf32> {onnx.dim_params = ["m", ""]}) -> tensor<?x4xf32> {
  %0 = "onnx.Add"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// MatMul batch dims broadcast the same way; the matrix dims are not.
// CHECK-LABEL: func.func @matmul_batch
// CHECK: cf.assert {{.*}} in dim 0 of
// CHECK: scf.if
// CHECK: cf.assert {{.*}} in dim 0 of
// CHECK: scf.if
// CHECK-NOT: cf.assert
// CHECK: linalg.generic
func.func @matmul_batch(%a: tensor<?x3x4xf32>, %b: tensor<?x4x2xf32>) -> tensor<?x3x2xf32> {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<?x3x4xf32>, tensor<?x4x2xf32>) -> tensor<?x3x2xf32>
  return %0 : tensor<?x3x2xf32>
}

// -----

// A gated op lowered before its onnx operands: its check cannot be proved
// then; once the operands are lowered (the Relu of %x), it is removed.
// FOLD-LABEL: func.func @gated_then_onnx
// FOLD-NOT: cf.assert
// FOLD-NOT: scf.if
// FOLD: return
func.func @gated_then_onnx(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = "onnx.Relu"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %0 = gated.residual output %x, %y gate(%y : tensor<?x8xf32>) : tensor<?x8xf32>, tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// The dims of an attention result are its operands' (DimSourceOpInterface),
// with H and T swapped where `bshd` names them: the [B, T, H, Dv] result
// has the query's B and T, so adding the residual stream of the same
// dim_params needs no check.
// CHECK-LABEL: func.func @attention_bshd_dims
// CHECK-NOT: cf.assert
// CHECK-NOT: scf.if
// CHECK: return
func.func @attention_bshd_dims(%q: tensor<?x4x?x8xf32> {onnx.dim_params = ["b", "", "t", ""]}, %kv: tensor<?x?x4x8xf32> {onnx.dim_params = ["b", "s", "", ""]}, %x: tensor<?x?x4x8xf32> {onnx.dim_params = ["b", "t", "", ""]}) -> tensor<?x?x4x8xf32> {
  %r = gated.attention %q, %kv, %kv {bshd = ["key", "value", "result"], scale = 0.35 : f32} : tensor<?x4x?x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x?x4x8xf32>
  %0 = "onnx.Add"(%r, %x) : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32>
  return %0 : tensor<?x?x4x8xf32>
}

// -----

// Without `bshd` on the query, T is the query's dim 2: the key's
// sequence dim (a different dim_param) is not mistaken for it, and the
// residual add with the key is checked.
// CHECK-LABEL: func.func @attention_dims_not_swapped
// CHECK: cf.assert
func.func @attention_dims_not_swapped(%q: tensor<?x4x?x8xf32> {onnx.dim_params = ["b", "", "t", ""]}, %kv: tensor<?x?x4x8xf32> {onnx.dim_params = ["b", "s", "", ""]}) -> tensor<?x?x4x8xf32> {
  %r = gated.attention %q, %kv, %kv {bshd = ["key", "value", "result"], scale = 0.35 : f32} : tensor<?x4x?x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x?x4x8xf32>
  %0 = "onnx.Add"(%r, %kv) : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32>
  return %0 : tensor<?x?x4x8xf32>
}
