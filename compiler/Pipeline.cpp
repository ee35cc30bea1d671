//===- Pipeline.cpp - the phases of gatec ---------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/target/Targets.h"

#include "passes/conversion/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/gated/Passes.h"
#include "passes/gpu/Passes.h"
#include "passes/onnx/Passes.h"
#include "passes/tiling/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace gatec {
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

LogicalResult addPassPipeline(mlir::OpPassManager &pm, llvm::StringRef phase,
                              llvm::StringRef pipeline) {
  std::string err;
  llvm::raw_string_ostream os(err);
  if (succeeded(mlir::parsePassPipeline(pipeline, pm, os)))
    return success();
  llvm::errs() << "gatec: internal error: the pass pipeline of phase '" << phase
               << "' does not parse: " << err << "\n  pipeline: '" << pipeline
               << "'\n";
  return failure();
}

namespace {
/// Phases 1-5, shared by every target.
std::vector<Phase> commonPhases(const PipelineOptions &o) {
  return {
      {"onnx", "ONNX ops as imported; shapes inferred, shape chains folded",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         pm.addNestedPass<mlir::func::FuncOp>(onnx::createOnnxShapeInference());
         pm.addPass(mlir::createCSEPass());
         return success();
       }},
      {"gated", "gate constructs raised to gated ops",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         auto &f = pm.nest<mlir::func::FuncOp>();
         f.addPass(gated::createRaiseNorms());
         f.addPass(gated::createRaiseAttention());
         f.addPass(gated::createRaiseGates());
         f.addPass(gated::createRaiseGlu());
         f.addPass(gated::createRaiseRouter());
         f.addPass(gated::createRaiseSharedExpertGates());
         f.addPass(gated::createRaiseResidualGates());
         f.addPass(gated::createRaiseShortConv());
         f.addPass(gated::createRaiseLinearAttention());
         f.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
         return success();
       }},
      {"fused", "gates fused into the kernels that produce their operands",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         // The G1 gate is fused into the attention kernel's epilogue and
         // GEMM epilogues into their GEMMs by the tiled phase's passes
         // (--tile-attention, --tile-and-fuse-linalg).
         if (o.widenProjections)
           pm.addNestedPass<mlir::func::FuncOp>(
               fusion::createWidenProjections());
         pm.addNestedPass<mlir::func::FuncOp>(
             gated::createChunkLinearAttention());
         pm.addNestedPass<mlir::func::FuncOp>(fusion::createAbsorbHeadLayout());
         if (o.fuseNormEpilogue)
           pm.addNestedPass<mlir::func::FuncOp>(
               fusion::createFuseLinearAttentionEpilogue());
         pm.addPass(mlir::createCSEPass());
         return success();
       }},
      {"linalg", "everything as linalg/tensor/arith/math on tensors",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         auto &f = pm.nest<mlir::func::FuncOp>();
         // On the GPU (and its CPU emulation) the chunks' products are
         // linalg ops, spread over a block's threads.
         conversion::ConvertLinearAttentionToLoopsOptions la;
         if (o.target == "cuda" || o.cpuThreadMapping)
           la.products = "linalg";
         f.addPass(conversion::createConvertLinearAttentionToLoops(la));
         f.addPass(conversion::createConvertGatedToLinalg(
             {/*keepAttention=*/o.flashAttention}));
         f.addPass(conversion::createConvertOnnxToLinalg());
         if (!o.runTimeChecks)
           f.addPass(conversion::createStripRunTimeChecks());
         else if (o.deferDataChecks)
           f.addPass(conversion::createDeferDataChecks());
         f.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
         return success();
       }},
      {"tiled", "bufferized, tiled loops (scf.forall) on memrefs",
       [o](mlir::OpPassManager &pm) -> LogicalResult {
         auto &f = pm.nest<mlir::func::FuncOp>();
         // On the CPU the keys are transposed once per layer (attention
         // alone, T=2048: 200 -> 183 ms; one more loop nest per attention)
         // instead of once per query block and head of a GQA group.
         if (o.flashAttention) {
           tiling::TileAttentionOptions attention;
           attention.transposeKeysOnce =
               o.target == "cpu" && !o.cpuThreadMapping;
           f.addPass(tiling::createTileAttention(attention));
         }
         if (o.fuseProducers)
           f.addPass(tiling::createFuseElementwise());
         tiling::TileAndFuseLinalgOptions tiling;
         tiling.fuseProducers = o.fuseProducers;
         // mma.sync takes 16 rows: row blocks of 16 fill its tiles (with
         // --cpu-thread-mapping too, so that the CPU runs the same tiles).
         if (o.gpuMma || o.gpuTf32)
           tiling.rows = 16;
         // CPU micro-kernels: row blocks of 32 rows reuse each packed panel
         // of B (K x NR, in L2) over 32 / mr register tiles.
         else if (o.target == "cpu" && !o.cpuThreadMapping && o.cpuMicroKernels)
           tiling.rows = o.cpuRowBlock ? o.cpuRowBlock : 32;
         // CPU micro-kernels: one GEMM per loop, so that a loop over a few
         // rows can spread its GEMM's columns over the threads (an FFN's
         // down projection no longer recomputes the gate/up rows per
         // column chunk).
         if (o.target == "cpu" && !o.cpuThreadMapping && o.cpuMicroKernels)
           tiling.fuseProducts = false;
         f.addPass(tiling::createTileAndFuseLinalg(tiling));
         f.addPass(tiling::createInnermostParallelLoop());
         f.addPass(mlir::createCanonicalizerPass());
         f.addPass(mlir::createCSEPass());
         // Function results are owned by the caller (the ABI wrapper frees
         // them after copying into the runtime's buffers).
         return addPassPipeline(
             pm, "tiled",
             "one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map},"
             "ownership-based-buffer-deallocation,canonicalize,"
             "buffer-deallocation-simplification,"
             "bufferization-lower-deallocations,convert-bufferization-to-"
             "memref,"
             "cse,canonicalize" +
                 std::string(o.runTimeChecks ? ",func.func(check-buffer-sizes)"
                                             : ""));
       }},
  };
}

} // namespace

/// The host-side lowering of loops and memrefs to the LLVM dialect.
const char *const kHostToLLVM =
    "convert-linalg-to-loops,memref-expand,expand-strided-metadata,"
    "lower-affine,";

std::vector<Phase> buildPhases(const PipelineOptions &options) {
  std::vector<Phase> phases = commonPhases(options);
  if (options.target == "cuda") {
    auto gpuPhases = cudaPhases(options);
    phases.insert(phases.end(), gpuPhases.begin(), gpuPhases.end());
  } else {
    phases.push_back(cpuPhase(options));
  }
  return phases;
}

int findPhase(llvm::ArrayRef<Phase> phases, llvm::StringRef name) {
  for (size_t i = 0; i < phases.size(); ++i)
    if (phases[i].name == name)
      return i;
  return -1;
}

std::string phaseNames(llvm::ArrayRef<Phase> phases) {
  std::string s;
  for (const Phase &p : phases)
    s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

} // namespace gatec
