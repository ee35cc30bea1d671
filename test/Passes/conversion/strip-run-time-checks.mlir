// RUN: gatec-opt %s --strip-run-time-checks --canonicalize | FileCheck %s

// Every check is erased, a size check and a data check (an AND-reduction
// over the indices) alike; what computed their conditions is then dead and
// the canonicalizer removes it. The kernel (here the clamp) stays.
// CHECK-LABEL: func.func @checks
// CHECK-NOT:     cf.assert
// CHECK-NOT:     linalg.generic
// CHECK:         %[[C:.*]] = arith.minui %arg2, %arg3 : index
// CHECK-NEXT:    return %[[C]]
func.func @checks(%ids: tensor<?xi64>, %n: i64, %i: index, %m: index) -> index {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %ids, %c0 : tensor<?xi64>
  %same = arith.cmpi eq, %d, %m : index
  cf.assert %same, "gatec: sizes that differ"
  %true = arith.constant true
  %e = tensor.empty() : tensor<i1>
  %init = linalg.fill ins(%true : i1) outs(%e : tensor<i1>) -> tensor<i1>
  %all = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%ids : tensor<?xi64>) outs(%init : tensor<i1>) {
  ^bb0(%x: i64, %acc: i1):
    %lt = arith.cmpi slt, %x, %n : i64
    %and = arith.andi %lt, %acc : i1
    linalg.yield %and : i1
  } -> tensor<i1>
  %ok = tensor.extract %all[] : tensor<i1>
  cf.assert %ok, "gatec: an index out of range" {gatec.data_check}
  %c = arith.minui %i, %m : index
  return %c : index
}
