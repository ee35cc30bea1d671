// RUN: gatec-opt %s --map-forall-to-gpu=threads=64 | FileCheck %s

// A block loop of a (2, 3) iteration space over 64-thread loops: one
// gpu.launch of 6 blocks (the grid linearised, the loop's ivs recovered by
// delinearising blockIdx.x), the thread loops on threadIdx.x, predicated
// when smaller than the block, each followed by a barrier. The weight is
// read inside the kernel (outlining will copy the global into the kernel's
// module), not passed to it.
// CHECK-LABEL: func.func @scale_rows
// CHECK: scf.if
// CHECK:   gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c6, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64
// CHECK:     memref.get_global @w
// CHECK:     affine.delinearize_index %[[BX]] into (2, 3)
// CHECK:     %[[TX:.*]] = gpu.thread_id  x
// CHECK:     scf.for %{{.*}} = %[[TX]] to
// CHECK:     gpu.barrier
// CHECK:     %[[TX2:.*]] = gpu.thread_id  x
// CHECK:     arith.cmpi ult, %[[TX2]], %c1
// CHECK:     scf.if
// CHECK:       memref.store
// CHECK:     gpu.barrier
// CHECK:     gpu.terminator
// CHECK-NOT: scf.forall
module {
  memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @scale_rows(%x: memref<2x3x4xf32>, %y: memref<2x3x4xf32>, %f: memref<2x3xf32>) {
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    %w = memref.get_global @w : memref<4xf32>
    scf.forall (%i, %j) in (2, 3) {
      scf.forall (%t) in (64) {
        scf.for %k = %t to %c4 step %c64 {
          %a = memref.load %x[%i, %j, %k] : memref<2x3x4xf32>
          %b = memref.load %w[%k] : memref<4xf32>
          %p = arith.mulf %a, %b : f32
          memref.store %p, %y[%i, %j, %k] : memref<2x3x4xf32>
        }
      } {mapping = [#gpu.thread<x>]}
      scf.forall (%t) in (1) {
        memref.store %one, %f[%i, %j] : memref<2x3xf32>
      } {mapping = [#gpu.thread<x>]}
    }
    return
  }
}
