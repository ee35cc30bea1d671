// RUN: gatec-opt %s --map-forall-to-gpu=threads=64 --verify-diagnostics

// A view marked for workgroup memory whose buffer is not the marked scratch
// buffer (hand-written IR): a located error, not a crash.
func.func @unmarked_source(%x: memref<4x32xf32>, %buf: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (4) {
    // expected-error @below {{must view the block loop's one buffer marked gatec.workgroup_scratch}}
    %tile = memref.view %buf[%c0][] {gatec.workgroup_offset = 0 : i64} : memref<?xi8> to memref<32xf32>
    scf.forall (%t) in (64) {
      %c1 = arith.constant 1.0 : f32
      memref.store %c1, %tile[%t] : memref<32xf32>
    } {mapping = [#gpu.thread<x>]}
  }
  return
}
