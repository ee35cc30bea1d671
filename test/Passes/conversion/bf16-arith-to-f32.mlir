// RUN: gatec-opt %s --bf16-arith-to-f32 | FileCheck %s

// Each bf16 op runs in f32 and is rounded back to bf16 before the next one
// reads it (a + b is rounded, then multiplied).
// CHECK-LABEL: func.func @chain
// CHECK:         %[[A:.*]] = arith.extf %arg0 : bf16 to f32
// CHECK:         %[[B:.*]] = arith.extf %arg1 : bf16 to f32
// CHECK:         %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK:         %[[SR:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK:         %[[SE:.*]] = arith.extf %[[SR]] : bf16 to f32
// CHECK:         %[[M:.*]] = arith.mulf %[[SE]], %{{.*}} : f32
// CHECK:         %[[MR:.*]] = arith.truncf %[[M]] : f32 to bf16
// CHECK:         %[[C:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK:         arith.select %[[C]], %[[MR]], %arg0 : bf16
// CHECK-NOT:     arith.addf {{.*}} : bf16
func.func @chain(%a: bf16, %b: bf16) -> bf16 {
  %s = arith.addf %a, %b : bf16
  %m = arith.mulf %s, %a : bf16
  %c = arith.cmpf olt, %m, %a : bf16
  %r = arith.select %c, %m, %a : bf16
  return %r : bf16
}

// f16 and f32 are left to LLVM.
// CHECK-LABEL: func.func @others
// CHECK:         arith.addf %arg0, %arg0 : f16
func.func @others(%a: f16) -> f16 {
  %s = arith.addf %a, %a : f16
  return %s : f16
}
