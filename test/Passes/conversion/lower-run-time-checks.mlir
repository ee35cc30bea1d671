// RUN: gatec-opt %s --split-input-file --lower-run-time-checks | FileCheck %s

// A check at the top level of a function: the failure branch calls
// gatec_check_failed with the message (one global per distinct message);
// the rest of the function continues in the next block.
// CHECK-DAG: llvm.mlir.global internal constant @gatec_check_msg_0("sizes do not broadcast at node 'Add'\00")
// CHECK-DAG: func.func private @gatec_check_failed(!llvm.ptr)
// CHECK-LABEL: func.func @checked
// CHECK: cf.cond_br %arg0, ^[[OK:bb[0-9]+]], ^[[FAIL:bb[0-9]+]]
// CHECK: ^[[FAIL]]:
// CHECK:   %[[M:.*]] = llvm.mlir.addressof @gatec_check_msg_0 : !llvm.ptr
// CHECK:   call @gatec_check_failed(%[[M]]) : (!llvm.ptr) -> ()
// CHECK:   cf.br ^[[OK]]
// CHECK: ^[[OK]]:
// CHECK:   arith.addi
// CHECK-NOT: cf.assert
func.func @checked(%ok: i1, %a: index) -> index {
  cf.assert %ok, "sizes do not broadcast at node 'Add'"
  %b = arith.addi %a, %a : index
  return %b : index
}

// -----

// A check inside a region (the body of a parallel loop) keeps abort():
// a worker thread cannot return the run's error.
// CHECK-LABEL: func.func @in_a_loop
// CHECK: scf.forall
// CHECK:   cf.assert
// CHECK-NOT: gatec_check_failed
func.func @in_a_loop(%ok: i1) {
  scf.forall (%i) in (4) {
    cf.assert %ok, "inside"
  }
  return
}
