// RUN: gatec-opt %s --pass-pipeline='builtin.module(gpu.module(fp-contract))' | FileCheck %s
// RUN: gatec-opt %s --pass-pipeline='builtin.module(gpu.module(fp-contract,convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=LLVM

// Multiplies, adds and subtracts in kernels become contractible, keeping
// their other flags; divisions and host code are left alone.
// CHECK-LABEL: gpu.func @k
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<nnan,contract> : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// The LLVM lowering keeps the flag (the NVPTX backend then forms fma.rn).
// LLVM: llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// LLVM: llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-LABEL: func.func @host
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: f32, %b: f32, %c: f32, %out: memref<3xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %p, %c : f32
      %d = arith.subf %s, %a fastmath<nnan> : f32
      %q = arith.divf %d, %b : f32
      memref.store %s, %out[%c0] : memref<3xf32>
      memref.store %d, %out[%c1] : memref<3xf32>
      memref.store %q, %out[%c2] : memref<3xf32>
      gpu.return
    }
  }
  func.func @host(%a: f32) -> f32 {
    %p = arith.mulf %a, %a : f32
    return %p : f32
  }
}
