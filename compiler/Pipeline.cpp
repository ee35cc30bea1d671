//===- Pipeline.cpp - the phases of gatec ---------------------------------===//
#include "compiler/Pipeline.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "passes/conversion/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/gated/Passes.h"
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

const std::vector<Phase> &getPhases() {
  static const std::vector<Phase> phases = {
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
      {"cpu", "loops, LLVM dialect for the host CPU",
       [](mlir::OpPassManager &pm) {
         (void)mlir::parsePassPipeline(
             "convert-linalg-to-loops,memref-expand,expand-strided-metadata,"
             "lower-affine,"
             // Each scf.forall iteration is a task for an OpenMP thread; the
             // alloca scopes the OpenMP conversion adds are lowered before
             // scf-to-cf splits their bodies into blocks.
             "scf-forall-to-parallel,convert-scf-to-openmp,"
             "finalize-memref-to-llvm,"
             // bf16 arithmetic in f32, rounded to bf16 after each op, and
             // the rounding as integer arithmetic: libgcc 12 has no
             // __truncsfbf2 for the model library to link.
             "bf16-arith-to-f32,arith-expand{include-bf16=true},"
             "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,"
             "convert-to-llvm,reconcile-unrealized-casts",
             pm);
       }},
  };
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
}

} // namespace gatec
