//===- CpuTarget.cpp - the CPU target's phase -----------------------------===//
//
// Phase 6a, `cpu`: the tiled loops to the LLVM dialect for the host CPU,
// each scf.forall an OpenMP parallel loop (with --cpu-thread-mapping, the
// GPU's block/thread mapping first, to check it on the CPU).
//
//===----------------------------------------------------------------------===//
#include "compiler/target/Targets.h"

#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/Passes.h"

namespace gatec {
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

Phase cpuPhase(const PipelineOptions &o) {
  return {"cpu", "loops, LLVM dialect for the host CPU",
          [o](mlir::OpPassManager &pm) -> LogicalResult {
            if (o.cpuThreadMapping) {
              gpu::DistributeToThreadsOptions d;
              d.threads = o.gpuThreads;
              d.mma = o.gpuMma ? "emulate" : "none";
              pm.addNestedPass<mlir::func::FuncOp>(
                  gpu::createDistributeToThreads(d));
            }
            return addPassPipeline(
                pm, "cpu",
                std::string(kHostToLLVM) +
                    // Each scf.forall iteration is a task for an OpenMP
                    // thread; the alloca scopes the OpenMP conversion adds
                    // are lowered before scf-to-cf splits their bodies into
                    // blocks.
                    "scf-forall-to-parallel,convert-scf-to-openmp,"
                    // Vector code (the chunked linear attention's
                    // register-blocked products): transfers become vector
                    // loads and stores.
                    "convert-vector-to-llvm,"
                    "finalize-memref-to-llvm,"
                    // bf16 arithmetic in f32, rounded to bf16 after each op,
                    // and the rounding as integer arithmetic: libgcc 12 has
                    // no __truncsfbf2 for the model library to link.
                    "bf16-arith-to-f32,arith-expand{include-bf16=true},"
                    "convert-scf-to-cf,lower-run-time-checks,"
                    "convert-math-to-llvm,convert-math-to-"
                    "libm,convert-to-llvm,reconcile-unrealized-casts");
          }};
}

} // namespace gatec
