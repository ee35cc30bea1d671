// RUN: gatec-opt %s --split-input-file --defer-data-checks | FileCheck %s

// Two marked checks: each flag is folded into the error word (0 at entry;
// the first failed check's number), which is read once before the return
// and compared with each number, in program order, with the original
// messages. The unmarked check (a size) stays where it is.
// CHECK-LABEL: func.func @two
// CHECK-DAG:     %[[Z:.*]] = arith.constant 0 : i32
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<i32>
// CHECK:         %[[W0:.*]] = linalg.fill ins(%[[Z]] : i32) outs(%[[E]] : tensor<i32>)
// CHECK:         %[[W1:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<i1>) outs(%[[W0]] : tensor<i32>)
// CHECK:           ^bb0(%[[OK:.*]]: i1, %[[OLD:.*]]: i32):
// CHECK:             %[[BAD:.*]] = arith.xori %[[OK]], %true
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq, %[[OLD]], %c0_i32
// CHECK:             %[[SET:.*]] = arith.andi %[[BAD]], %[[FIRST]]
// CHECK:             %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:             %[[NEW:.*]] = arith.select %[[SET]], %[[ONE]], %[[OLD]]
// CHECK:             linalg.yield %[[NEW]]
// CHECK:         cf.assert %arg2, "size"
// CHECK:         %[[W2:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<i1>) outs(%[[W1]] : tensor<i32>)
// CHECK:           %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-NEXT:      arith.select %{{.*}}, %[[TWO]], %{{.*}}
// CHECK:         %[[GOT:.*]] = tensor.extract %[[W2]][] : tensor<i32>
// CHECK:         %[[P1:.*]] = arith.cmpi ne, %[[GOT]], %c1_i32
// CHECK:         cf.assert %[[P1]], "first"
// CHECK:         %[[P2:.*]] = arith.cmpi ne, %[[GOT]], %c2_i32
// CHECK:         cf.assert %[[P2]], "second"
// CHECK-NEXT:    return
func.func @two(%f1: tensor<i1>, %f2: tensor<i1>, %size: i1) {
  %a = tensor.extract %f1[] : tensor<i1>
  cf.assert %a, "first" {gatec.data_check}
  cf.assert %size, "size"
  %b = tensor.extract %f2[] : tensor<i1>
  cf.assert %b, "second" {gatec.data_check}
  return
}

// -----

// Nothing marked, or marked but not of the flag form (a scalar, an
// assert inside a region): left alone, and no error word is made.
// CHECK-LABEL: func.func @none
// CHECK-NOT:     tensor<i32>
// CHECK:         cf.assert %arg0, "plain"
// CHECK:         cf.assert %arg0, "scalar" {gatec.data_check}
// CHECK:         scf.if
// CHECK:           cf.assert %{{.*}}, "nested" {gatec.data_check}
func.func @none(%c: i1, %f: tensor<i1>) {
  cf.assert %c, "plain"
  cf.assert %c, "scalar" {gatec.data_check}
  scf.if %c {
    %a = tensor.extract %f[] : tensor<i1>
    cf.assert %a, "nested" {gatec.data_check}
  }
  return
}
