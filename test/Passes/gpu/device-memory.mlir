// RUN: gatec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(device-memory))' | FileCheck %s

// The buffer a kernel writes moves to device memory with its deallocation;
// the host-only scalar (shape bookkeeping) stays in host memory.
// CHECK-LABEL: func.func @buffers
// CHECK: %[[D:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: %[[H:.*]] = memref.alloc() : memref<i64>
// CHECK: memref.store %{{.*}}, %[[H]][]
// CHECK: gpu.launch
// CHECK:   memref.store %{{.*}}, %[[D]]
// CHECK: gpu.dealloc %[[D]] : memref<8xf32>
// CHECK: memref.dealloc %[[H]] : memref<i64>
func.func @buffers(%x: memref<8xf32>) -> memref<8xf32> {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %tmp = memref.alloc() : memref<8xf32>
  %h = memref.alloc() : memref<i64>
  %n = arith.constant 8 : i64
  memref.store %n, %h[] : memref<i64>
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
    %v = memref.load %x[%t0] : memref<8xf32>
    memref.store %v, %tmp[%t0] : memref<8xf32>
    gpu.terminator
  }
  %out = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
    %v = memref.load %tmp[%t0] : memref<8xf32>
    memref.store %v, %out[%t0] : memref<8xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<8xf32>
  memref.dealloc %h : memref<i64>
  return %out : memref<8xf32>
}

// -----

// A host read of a device buffer (a shape computed on the device) reads a
// host copy of it.
// CHECK-LABEL: func.func @host_reads_device
// CHECK: %[[H:.*]] = memref.alloc() : memref<8xf32>
// CHECK: gpu.memcpy %[[H]], %arg0
// CHECK: %[[V:.*]] = memref.subview %[[H]][2] [2] [1]
// CHECK: memref.load %[[V]][%{{.*}}]
// CHECK: memref.dealloc %[[H]]
func.func @host_reads_device(%x: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.subview %x[2] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: 2>>
  %r = memref.load %v[%c0] : memref<2xf32, strided<[1], offset: 2>>
  return %r : f32
}

// -----

// The host may not write a device buffer.
func.func @host_writes_device(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  // expected-error @below {{host code reads or writes a device buffer}}
  memref.store %one, %x[%c0] : memref<8xf32>
  return
}

// -----

// A buffer chosen at run time (the run-time broadcast of a size-1 dim: a
// copy, or the operand itself) that a kernel reads: the copy is allocated
// on the device, and the conditional deallocation ownership-based
// deallocation leaves for it is a gpu.dealloc (it was a host free() of a
// device pointer).
// CHECK-LABEL: func.func @chosen_at_run_time
// CHECK: %[[B:.*]] = scf.if
// CHECK:   %[[C:.*]] = gpu.alloc () : memref<8xf32>
// CHECK:   scf.yield %[[C]]
// CHECK: gpu.launch
// CHECK: scf.if %{{.*}} {
// CHECK:   gpu.dealloc %[[B]] : memref<8xf32>
// CHECK-NOT: memref.dealloc
func.func @chosen_at_run_time(%x: memref<8xf32>, %bcast: i1, %out: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %b = scf.if %bcast -> (memref<8xf32>) {
    %copy = memref.alloc() : memref<8xf32>
    gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
               threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<8xf32>
      memref.store %v, %copy[%t0] : memref<8xf32>
      gpu.terminator
    }
    scf.yield %copy : memref<8xf32>
  } else {
    scf.yield %x : memref<8xf32>
  }
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c8, %s1 = %c1, %s2 = %c1) {
    %v = memref.load %b[%t0] : memref<8xf32>
    memref.store %v, %out[%t0] : memref<8xf32>
    gpu.terminator
  }
  scf.if %bcast {
    memref.dealloc %b : memref<8xf32>
  }
  return
}
