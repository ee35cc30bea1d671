//===- CudaTarget.cpp - the CUDA target's phases --------------------------===//
//
// Phases 6b-8b, `gpu`, `nvvm` and `ptx`: the tiled loops mapped onto blocks
// and threads, the kernels in NVVM, then PTX/cubin embedded in a host module
// that calls the CUDA runtime (runtime/src/cuda).
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

std::vector<Phase> cudaPhases(const PipelineOptions &o) {
  return {
      {"gpu", "tiled loops mapped onto blocks and threads, kernels outlined",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         gpu::DistributeToThreadsOptions d;
         d.threads = o.gpuThreads;
         d.mma = o.gpuMma || o.gpuTf32 ? "sync" : "none";
         d.tf32 = o.gpuTf32;
         // No canonicalization in between: it would fold one-block loops
         // (the kernels of host ops) into their bodies.
         pm.addNestedPass<mlir::func::FuncOp>(
             gpu::createDistributeToThreads(d));
         gpu::MapForallToGpuOptions m;
         m.threads = o.gpuThreads;
         pm.addPass(gpu::createMapForallToGpu(m));
         pm.addNestedPass<mlir::func::FuncOp>(gpu::createDeviceMemory());
         // Weights as device buffers the runtime uploads once, not PTX
         // initialisers.
         pm.addPass(gpu::createDeviceConstants());
         // Outlined first: the canonicalizer would hoist the constants the
         // mapping sank into the kernels back to the host function.
         if (failed(addPassPipeline(pm, "gpu", "gpu-kernel-outlining")))
           return failure();
         pm.addNestedPass<mlir::gpu::GPUModuleOp>(
             gpu::createAlignWorkgroupMemory());
         pm.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
         return success();
       }},
      {"nvvm", "kernels in the NVVM dialect; host code still on memrefs",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         // FMA contraction from sm_90 on: for sm_80, ptxas (CUDA 13) then
         // keeps the flash-attention and chunked linear-attention kernels
         // at 255 registers and spills (2.9 KB per thread in a Gated
         // DeltaNet kernel, 150-164 bytes in the fp16 Llama block's),
         // which it does not with separate multiplies and adds.
         unsigned sm = 0;
         llvm::StringRef(o.gpuArch).drop_front(3).consumeInteger(10, sm);
         std::string contract = sm >= 90 ? "fp-contract," : "";
         return addPassPipeline(
             pm, "nvvm",
             "nvvm-attach-target{chip=" + o.gpuArch +
                 " features=+ptx80 O=3},"
                 "gpu.module(" +
                 contract +
                 "lower-affine,expand-strided-metadata,"
                 "lower-affine,convert-vector-to-scf,convert-scf-to-cf,"
                 "convert-vector-to-llvm,convert-gpu-to-nvvm{index-"
                 "bitwidth=64},canonicalize,cse,reconcile-unrealized-casts)");
       }},
      {"ptx",
       "kernels as PTX/cubin embedded in the host module (LLVM "
       "dialect); host code calls the CUDA runtime",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         return addPassPipeline(
             pm, "ptx",
             std::string(kHostToLLVM) +
                 // Launches, copies and allocations become asynchronous on
                 // one stream, with host waits only where the host needs
                 // the GPU's results.
                 "convert-scf-to-cf,func.func(gpu-async-region,"
                 "elide-host-waits),"
                 "arith-expand{include-bf16=true},"
                 "finalize-memref-to-llvm,"
                 // After the host's memref.allocs became malloc calls:
                 // a NULL one is the run's out-of-memory error. (A failed
                 // device allocation is recorded by the CUDA backend,
                 // which then skips every later launch and copy.)
                 "lower-run-time-checks,"
                 "convert-math-to-llvm,"
                 "convert-math-to-libm,gpu-to-llvm,"
                 "convert-to-llvm,"
                 "reconcile-unrealized-casts,"
                 "gpu-module-to-binary{format=" +
                 o.gpuFormat + "},canonicalize");
       }},
  };
}
} // namespace gatec
