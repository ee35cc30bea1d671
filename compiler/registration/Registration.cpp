//===- Registration.cpp - gatec's dialects and passes ---------------------===//
//
// The registration of every dialect gatec's IR may contain and every pass
// of the project: all gatec-opt links (no importer, no protobuf), and what
// the compiler driver registers before it parses pass pipelines.
//
//===----------------------------------------------------------------------===//
#include "compiler/registration/Registration.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "passes/conversion/Passes.h"
#include "passes/cpu/Passes.h"
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
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace gatec {

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
  cpu::registerCpuPasses();
}

} // namespace gatec
