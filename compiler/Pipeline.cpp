//===- Pipeline.cpp - the phases of gatec ---------------------------------===//
#include "compiler/Pipeline.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "passes/conversion/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/gated/Passes.h"
#include "passes/gpu/Passes.h"
#include "passes/onnx/Passes.h"
#include "passes/tiling/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

namespace gatec {

PipelineOptions &pipelineOptions() {
  static PipelineOptions options;
  return options;
}

namespace {
/// Phases 1-5, shared by every target.
std::vector<Phase> commonPhases() {
  return {
      {"onnx", "ONNX ops as imported; shapes inferred, shape chains folded",
       [](mlir::OpPassManager &pm) {
         pm.addNestedPass<mlir::func::FuncOp>(onnx::createOnnxShapeInference());
         pm.addPass(mlir::createCSEPass());
       }},
      {"gated", "gate constructs raised to gated ops",
       [](mlir::OpPassManager &pm) {
         auto &f = pm.nest<mlir::func::FuncOp>();
         f.addPass(gated::createRaiseNorms());
         f.addPass(gated::createRaiseAttention());
         f.addPass(gated::createRaiseGates());
         f.addPass(gated::createRaiseGlu());
         f.addPass(gated::createRaiseResidualGates());
         f.addPass(gated::createRaiseLinearAttention());
         f.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
       }},
      {"fused", "gates fused into the kernels that produce their operands",
       [](mlir::OpPassManager &pm) {
         // The G1 gate is fused into the attention kernel's epilogue and
         // GEMM epilogues into their GEMMs by the tiled phase's passes
         // (--tile-attention, --tile-and-fuse-linalg).
         if (pipelineOptions().widenProjections)
           pm.addNestedPass<mlir::func::FuncOp>(
               fusion::createWidenProjections());
         pm.addNestedPass<mlir::func::FuncOp>(
             gated::createChunkLinearAttention());
         pm.addPass(mlir::createCSEPass());
       }},
      {"linalg", "everything as linalg/tensor/arith/math on tensors",
       [](mlir::OpPassManager &pm) {
         auto &f = pm.nest<mlir::func::FuncOp>();
         f.addPass(conversion::createConvertLinearAttentionToLoops());
         f.addPass(conversion::createConvertGatedToLinalg(
             {/*keepAttention=*/pipelineOptions().flashAttention}));
         f.addPass(conversion::createConvertOnnxToLinalg());
         f.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
       }},
      {"tiled", "bufferized, tiled loops (scf.forall) on memrefs",
       [](mlir::OpPassManager &pm) {
         auto &f = pm.nest<mlir::func::FuncOp>();
         if (pipelineOptions().flashAttention)
           f.addPass(tiling::createTileAttention());
         if (pipelineOptions().fuseProducers)
           f.addPass(tiling::createFuseElementwise());
         tiling::TileAndFuseLinalgOptions tiling;
         tiling.fuseProducers = pipelineOptions().fuseProducers;
         // mma.sync takes 16 rows: row blocks of 16 fill its tiles (with
         // --cpu-thread-mapping too, so that the CPU runs the same tiles).
         if (pipelineOptions().gpuMma)
           tiling.rows = 16;
         f.addPass(tiling::createTileAndFuseLinalg(tiling));
         f.addPass(tiling::createInnermostParallelLoop());
         f.addPass(mlir::createCanonicalizerPass());
         f.addPass(mlir::createCSEPass());
         // Function results are owned by the caller (the ABI wrapper frees
         // them after copying into the runtime's buffers).
         (void)mlir::parsePassPipeline(
             "one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map},"
             "ownership-based-buffer-deallocation,canonicalize,"
             "buffer-deallocation-simplification,"
             "bufferization-lower-deallocations,convert-bufferization-to-"
             "memref,"
             "cse,canonicalize",
             pm);
       }},
  };
}

/// The host-side lowering of loops and memrefs to the LLVM dialect.
const char *kHostToLLVM =
    "convert-linalg-to-loops,memref-expand,expand-strided-metadata,"
    "lower-affine,";

Phase cpuPhase() {
  return {"cpu", "loops, LLVM dialect for the host CPU",
          [](mlir::OpPassManager &pm) {
            if (pipelineOptions().cpuThreadMapping) {
              gpu::DistributeToThreadsOptions o;
              o.threads = pipelineOptions().gpuThreads;
              o.mma = pipelineOptions().gpuMma ? "emulate" : "none";
              pm.addNestedPass<mlir::func::FuncOp>(
                  gpu::createDistributeToThreads(o));
            }
            (void)mlir::parsePassPipeline(
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
                    "libm,convert-to-llvm,reconcile-unrealized-casts",
                pm);
          }};
}

std::vector<Phase> cudaPhases() {
  return {
      {"gpu", "tiled loops mapped onto blocks and threads, kernels outlined",
       [](mlir::OpPassManager &pm) {
         gpu::DistributeToThreadsOptions d;
         d.threads = pipelineOptions().gpuThreads;
         d.mma = pipelineOptions().gpuMma ? "sync" : "none";
         // No canonicalization in between: it would fold one-block loops
         // (the kernels of host ops) into their bodies.
         pm.addNestedPass<mlir::func::FuncOp>(
             gpu::createDistributeToThreads(d));
         gpu::MapForallToGpuOptions m;
         m.threads = pipelineOptions().gpuThreads;
         pm.addPass(gpu::createMapForallToGpu(m));
         pm.addNestedPass<mlir::func::FuncOp>(gpu::createDeviceMemory());
         // Outlined first: the canonicalizer would hoist the constants the
         // mapping sank into the kernels back to the host function.
         (void)mlir::parsePassPipeline("gpu-kernel-outlining", pm);
         pm.addNestedPass<mlir::gpu::GPUModuleOp>(
             gpu::createAlignWorkgroupMemory());
         pm.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
       }},
      {"nvvm", "kernels in the NVVM dialect; host code still on memrefs",
       [](mlir::OpPassManager &pm) {
         const PipelineOptions &o = pipelineOptions();
         (void)mlir::parsePassPipeline(
             "nvvm-attach-target{chip=" + o.gpuArch +
                 " features=+ptx80 O=3},"
                 "gpu.module(lower-affine,expand-strided-metadata,"
                 "lower-affine,convert-vector-to-scf,convert-scf-to-cf,"
                 "convert-vector-to-llvm,convert-gpu-to-nvvm{index-"
                 "bitwidth=64},canonicalize,cse,reconcile-unrealized-casts)",
             pm);
       }},
      {"ptx",
       "kernels as PTX/cubin embedded in the host module (LLVM "
       "dialect); host code calls the CUDA runtime",
       [](mlir::OpPassManager &pm) {
         const PipelineOptions &o = pipelineOptions();
         (void)mlir::parsePassPipeline(
             std::string(kHostToLLVM) +
                 // Launches, copies and allocations become asynchronous on
                 // one stream, with host waits only where the host needs
                 // the GPU's results.
                 "convert-scf-to-cf,func.func(gpu-async-region,"
                 "elide-host-waits),lower-run-time-checks,"
                 "arith-expand{include-bf16=true},"
                 "finalize-memref-to-llvm,convert-math-to-llvm,"
                 "convert-math-to-libm,gpu-to-llvm,"
                 "convert-to-llvm,"
                 "reconcile-unrealized-casts,"
                 "gpu-module-to-binary{format=" +
                 o.gpuFormat + "},canonicalize",
             pm);
       }},
  };
}
} // namespace

const std::vector<Phase> &getPhases() {
  static std::vector<Phase> phases;
  static std::string builtFor;
  if (builtFor != pipelineOptions().target || phases.empty()) {
    builtFor = pipelineOptions().target;
    phases = commonPhases();
    if (builtFor == "cuda") {
      auto gpuPhases = cudaPhases();
      phases.insert(phases.end(), gpuPhases.begin(), gpuPhases.end());
    } else {
      phases.push_back(cpuPhase());
    }
  }
  return phases;
}
int findPhase(llvm::StringRef name) {
  const auto &phases = getPhases();
  for (size_t i = 0; i < phases.size(); ++i)
    if (phases[i].name == name)
      return i;
  return -1;
}

void registerGatecDialects(mlir::DialectRegistry &registry) {
  registry.insert<onnx::OnnxDialect, gated::GatedDialect,
                  mlir::func::FuncDialect>();
  // The dialects, interfaces and LLVM IR translations of the lowering.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void registerGatecPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  mlir::registerAllPasses();
  onnx::registerOnnxPasses();
  gated::registerGatedPasses();
  conversion::registerConversionPasses();
  tiling::registerTilingPasses();
  fusion::registerFusionPasses();
  gpu::registerGpuPasses();
}

} // namespace gatec
