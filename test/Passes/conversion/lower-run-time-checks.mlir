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

// -----

// A malloc at the top level of a function: NULL for a size other than 0
// calls gatec_alloc_failed with a message naming the node (the run's
// out-of-memory error); one inside a region is left alone. Every malloc and
// free becomes the library's gatec_malloc / gatec_free (they track the
// run's buffers).
// CHECK-DAG: llvm.func @gatec_malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @gatec_free(!llvm.ptr)
// CHECK-DAG: llvm.mlir.global internal constant @gatec_check_msg_0("gatec: a buffer of node 'cat' could not be allocated\00")
// CHECK-DAG: func.func private @gatec_alloc_failed(!llvm.ptr)
// CHECK-LABEL: func.func @allocates
// CHECK:   %[[P:.*]] = llvm.call @gatec_malloc(%[[N:.*]]) : (i64) -> !llvm.ptr
// CHECK:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:   %[[GOT:.*]] = llvm.icmp "ne" %[[P]], %[[NULL]] : !llvm.ptr
// CHECK:   %[[NONE:.*]] = llvm.icmp "eq" %[[N]], %[[ZERO]] : i64
// CHECK:   %[[OK:.*]] = llvm.or %[[GOT]], %[[NONE]] : i1
// CHECK:   cf.cond_br %[[OK]], ^[[OK:bb[0-9]+]], ^[[FAIL:bb[0-9]+]]
// CHECK: ^[[FAIL]]:
// CHECK:   call @gatec_alloc_failed
// CHECK: ^[[OK]]:
// CHECK:   scf.forall
// CHECK:     %[[Q:.*]] = llvm.call @gatec_malloc
// CHECK:     llvm.call @gatec_free(%[[Q]])
// CHECK-NOT: gatec_alloc_failed
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @free(!llvm.ptr)
func.func @allocates(%n: i64) -> !llvm.ptr {
  %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(#cat)
  scf.forall (%i) in (4) {
    %q = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.call @free(%q) : (!llvm.ptr) -> ()
  }
  return %p : !llvm.ptr
}
#cat = loc(fused<"Concat, opset 17">["cat"])

// -----

// A malloc in an OpenMP worksharing loop's body (a worker's scratch): a
// NULL stores the message in a frame slot and skips the rest of the
// iteration (a new omp.yield block); after the omp.parallel the slot is
// read and a message there calls gatec_alloc_failed.
// CHECK-DAG: llvm.mlir.global internal constant @gatec_check_msg_0("gatec: a buffer of node 'scratch' could not be allocated (in a worker thread)\00")
// CHECK-LABEL: func.func @worker_allocates
// CHECK:   %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK:   llvm.store %{{.*}}, %[[SLOT]]
// CHECK:   omp.parallel {
// CHECK:     omp.loop_nest
// CHECK:       %[[Q:.*]] = llvm.call @gatec_malloc
// CHECK:       cf.cond_br %{{.*}}, ^[[CONT:bb[0-9]+]], ^[[FAIL:bb[0-9]+]]
// CHECK:     ^[[FAIL]]:
// CHECK:       llvm.store %{{.*}}, %[[SLOT]] atomic monotonic
// CHECK:       cf.br ^[[SKIP:bb[0-9]+]]
// CHECK:     ^[[CONT]]:
// CHECK:       llvm.store
// CHECK:       omp.yield
// CHECK:     ^[[SKIP]]:
// CHECK-NEXT:  omp.yield
// CHECK:   omp.terminator
// CHECK:   %[[MSG:.*]] = llvm.load %[[SLOT]] atomic monotonic
// CHECK:   cf.cond_br %{{.*}}, ^{{.*}}, ^[[OOM:bb[0-9]+]]
// CHECK: ^[[OOM]]:
// CHECK:   call @gatec_alloc_failed(%[[MSG]])
llvm.func @malloc(i64) -> !llvm.ptr
func.func @worker_allocates(%n: i64, %ub: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %f = llvm.mlir.constant(1.0 : f32) : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%c0) to (%ub) step (%c1) {
        %q = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(#scratch)
        llvm.store %f, %q : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
#scratch = loc(fused<"Mul, opset 17">["scratch"])
