//===- Pipeline.cpp - the phases of gatec ---------------------------------===//
#include "compiler/Pipeline.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "passes/conversion/Passes.h"
#include "passes/gated/Passes.h"
#include "passes/onnx/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace gatec {

const std::vector<Phase> &getPhases() {
  static const std::vector<Phase> phases = {
      {"onnx", "ONNX ops as imported; shapes inferred, shape chains folded",
       [](mlir::OpPassManager &pm) {
         pm.addNestedPass<mlir::func::FuncOp>(
             onnx::createOnnxShapeInference());
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
         f.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::createCSEPass());
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
  registry.insert<onnx::OnnxDialect, gated::GatedDialect, mlir::func::FuncDialect>();
}

void registerGatecPasses() {
  onnx::registerOnnxPasses();
  gated::registerGatedPasses();
  conversion::registerConversionPasses();
  mlir::registerTransformsPasses();
}

} // namespace gatec
