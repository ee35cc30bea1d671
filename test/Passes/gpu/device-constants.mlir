// RUN: gatec-opt %s --split-input-file --pass-pipeline='builtin.module(device-constants{min-bytes=64})' | FileCheck %s
// RUN: gatec-opt %s --split-input-file --pass-pipeline='builtin.module(device-constants{min-bytes=64},gpu-kernel-outlining)' | FileCheck %s --check-prefix=OUTLINED

// A weight two kernels read is asked for once, at the function's entry: the
// runtime uploads it on the first run and records its device address in the
// slot @w__device. The kernels read the device copy (a descriptor of the
// returned pointer with the global's static shape and strides); the small
// table stays a kernel initialiser; the host's own read of the weight stays
// a read of the host constant.
// CHECK: memref.global "private" constant @w : memref<4x8xf32> = dense<5.000000e-01>
// CHECK-NEXT: memref.global "private" @w__device : memref<1xi64> = dense<0>
// CHECK-LABEL: func.func @two_kernels
// CHECK-NEXT: %[[H:.*]] = memref.get_global @w : memref<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = memref.get_global @w__device : memref<1xi64>
// CHECK-NEXT: %[[N:.*]] = arith.constant 128 : i64
// CHECK-NEXT: %[[SI:.*]] = memref.extract_aligned_pointer_as_index %[[S]]
// CHECK-NEXT: %[[SI64:.*]] = arith.index_cast %[[SI]] : index to i64
// CHECK-NEXT: %[[SP:.*]] = llvm.inttoptr %[[SI64]] : i64 to !llvm.ptr
// CHECK-NEXT: %[[HI:.*]] = memref.extract_aligned_pointer_as_index %[[H]]
// CHECK-NEXT: %[[HI64:.*]] = arith.index_cast %[[HI]] : index to i64
// CHECK-NEXT: %[[HP:.*]] = llvm.inttoptr %[[HI64]] : i64 to !llvm.ptr
// CHECK-NEXT: %[[D:.*]] = call @gatec_cuda_constant(%[[SP]], %[[HP]], %[[N]]) : (!llvm.ptr, !llvm.ptr, i64) -> !llvm.ptr
// CHECK: llvm.insertvalue %[[D]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[D]], %{{.*}}[1]
// CHECK: llvm.insertvalue %{{.*}}[3, 0]
// CHECK: llvm.insertvalue %{{.*}}[4, 0]
// CHECK: llvm.insertvalue %{{.*}}[3, 1]
// CHECK: %[[DESC:.*]] = llvm.insertvalue %{{.*}}[4, 1] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK-NEXT: %[[W:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<4x8xf32>
// CHECK-NOT: gatec_cuda_constant
// CHECK: gpu.launch
// CHECK-NOT: memref.get_global @w
// CHECK: memref.load %[[W]]
// CHECK: memref.get_global @small
// CHECK: gpu.launch
// CHECK: memref.subview %[[W]][1, 0] [1, 8] [1, 1]
// CHECK: %[[H2:.*]] = memref.get_global @w : memref<4x8xf32>
// CHECK-NEXT: memref.load %[[H2]]
// CHECK: func.func private @gatec_cuda_constant(!llvm.ptr, !llvm.ptr, i64) -> !llvm.ptr

// Outlined, the kernels take the device copy as an argument; only the small
// table is copied into a kernel's module.
// OUTLINED-LABEL: func.func @two_kernels
// OUTLINED: gpu.launch_func @two_kernels_kernel::@two_kernels_kernel {{.*}} args(%{{.*}} : memref<4x8xf32>
// OUTLINED: gpu.launch_func @two_kernels_kernel_0::@two_kernels_kernel {{.*}} args(%{{.*}} : memref<4x8xf32>
// OUTLINED: gpu.module @two_kernels_kernel
// OUTLINED-NOT: @w
// OUTLINED: memref.global "private" constant @small : memref<4xf32>
// OUTLINED-NOT: @w
// OUTLINED: gpu.module @two_kernels_kernel_0
// OUTLINED-NOT: memref.global
// OUTLINED: return
memref.global "private" constant @w : memref<4x8xf32> = dense<0.5>
memref.global "private" constant @small : memref<4xf32> = dense<1.0>
func.func @two_kernels(%out: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
    %w = memref.get_global @w : memref<4x8xf32>
    %v = memref.load %w[%c0, %t0] : memref<4x8xf32>
    %s = memref.get_global @small : memref<4xf32>
    %u = memref.load %s[%c0] : memref<4xf32>
    %r = arith.addf %v, %u : f32
    memref.store %r, %out[%t0] : memref<8xf32>
    gpu.terminator
  }
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
    %w = memref.get_global @w : memref<4x8xf32>
    %row = memref.subview %w[1, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: 8>>
    %v = memref.load %row[%t0] : memref<8xf32, strided<[1], offset: 8>>
    memref.store %v, %out[%t0] : memref<8xf32>
    gpu.terminator
  }
  %h = memref.get_global @w : memref<4x8xf32>
  %x = memref.load %h[%c0, %c0] : memref<4x8xf32>
  return %x : f32
}
