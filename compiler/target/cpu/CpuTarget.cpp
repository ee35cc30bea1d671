//===- CpuTarget.cpp - the CPU target's phase -----------------------------===//
//
// Phase 6a, `cpu`: the tiled loops to the LLVM dialect for the host CPU,
// each scf.forall an OpenMP parallel loop (with --cpu-thread-mapping, the
// GPU's block/thread mapping first, to check it on the CPU).
//
//===----------------------------------------------------------------------===//
#include "compiler/target/Targets.h"

#include "passes/cpu/Passes.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace gatec {
int64_t cpuVectorBitsOf(llvm::StringRef cpu) {
  llvm::StringMap<bool> f;
  if (cpu.empty()) {
    f = llvm::sys::getHostCPUFeatures();
  } else {
    if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
      return 0;
    llvm::SmallVector<llvm::StringRef> names;
    llvm::X86::getFeaturesForCPU(cpu, names);
    for (llvm::StringRef n : names)
      f[n] = true;
  }
  if (f.lookup("avx512f"))
    return 512;
  if (f.lookup("avx2") && f.lookup("fma"))
    return 256;
  return 128;
}

using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

Phase cpuPhase(const PipelineOptions &o) {
  return {"cpu", "loops, LLVM dialect for the host CPU",
          [o](mlir::OpPassManager &pm) -> LogicalResult {
            if (o.cpuThreadMapping) {
              gpu::DistributeToThreadsOptions d;
              d.threads = o.gpuThreads;
              d.mma = o.gpuMma || o.gpuTf32 ? "emulate" : "none";
              d.tf32 = o.gpuTf32;
              pm.addNestedPass<mlir::func::FuncOp>(
                  gpu::createDistributeToThreads(d));
            } else if (o.cpuMicroKernels) {
              cpu::MatmulMicroKernelOptions m;
              m.vectorBits =
                  o.cpuVectorBits ? o.cpuVectorBits : cpuVectorBitsOf(o.cpu);
              // Register tiles of 2 vectors per row: 8 rows (16 of the 32
              // AVX-512 registers accumulate), 6 with AVX2's 16 registers,
              // 4 with SSE's.
              m.nrVectors = 2;
              m.mr = m.vectorBits >= 512 ? 8 : m.vectorBits >= 256 ? 6 : 4;
              pm.addPass(cpu::createMatmulMicroKernel(m));
            }
            // exp/tanh in arith ops: their loops vectorize.
            pm.addNestedPass<mlir::func::FuncOp>(cpu::createPolynomialMath());
            // One function per distinct kernel: repeated layers are
            // compiled once.
            if (o.outlineKernels)
              pm.addPass(cpu::createOutlineLoopNests());
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
