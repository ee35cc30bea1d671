// RUN: gatec-opt %s --map-forall-to-gpu=threads=64 | FileCheck %s

// A block loop of a (2, 3) iteration space over 64-thread loops: one
// gpu.launch of 6 blocks (the grid linearised, the loop's ivs recovered by
// delinearising blockIdx.x), the thread loops on threadIdx.x, predicated
// when smaller than the block, each followed by a barrier. The weight is
// read inside the kernel (outlining will copy the global into the kernel's
// module), not passed to it. No guard against an empty grid (the runtime
// skips those), so launches stay in one region.
// CHECK-LABEL: func.func @scale_rows
// CHECK-NOT: scf.if
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
  // The block's slice of the workgroup scratch buffer (as
  // --distribute-to-threads marks it) becomes a view of a workgroup
  // attribution of the launch at the slice's offset, cast to the generic
  // address space for its users; the host buffer is gone.
  // CHECK-LABEL: func.func @shared_tile
  // CHECK-NOT: memref.alloc
  // CHECK: gpu.launch {{.*}} workgroup(%[[WG:.*]] : memref<256xi8, #gpu.address_space<workgroup>>)
  // CHECK:   %[[V:.*]] = memref.view %[[WG]][%c128{{.*}}][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
  // CHECK:   %[[G:.*]] = memref.memory_space_cast %[[V]] : memref<32xf32, #gpu.address_space<workgroup>> to memref<32xf32>
  // CHECK:   memref.store %{{.*}}, %[[G]]
  // CHECK:   memref.load %[[G]]
  // CHECK-NOT: memref.dealloc
  // CHECK: return
  func.func @shared_tile(%x: memref<4x32xf32>) {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %scratch = memref.alloc(%c1024) {alignment = 64 : i64, gatec.workgroup_scratch = 256 : i64} : memref<?xi8>
    scf.forall (%i) in (4) {
      %base = arith.muli %i, %c256 : index
      %off = arith.addi %base, %c128 : index
      %tile = memref.view %scratch[%off][] {gatec.workgroup_offset = 128 : i64} : memref<?xi8> to memref<32xf32>
      scf.forall (%t) in (64) {
        scf.for %k = %t to %c32 step %c64 {
          %a = memref.load %x[%i, %k] : memref<4x32xf32>
          memref.store %a, %tile[%k] : memref<32xf32>
        }
      } {mapping = [#gpu.thread<x>]}
      scf.forall (%t) in (64) {
        scf.for %k = %t to %c32 step %c64 {
          %a = memref.load %tile[%k] : memref<32xf32>
          %b = arith.addf %a, %a : f32
          memref.store %b, %x[%i, %k] : memref<4x32xf32>
        }
      } {mapping = [#gpu.thread<x>]}
    }
    memref.dealloc %scratch : memref<?xi8>
    return
  }
}
