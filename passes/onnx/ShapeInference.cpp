//===- ShapeInference.cpp - --onnx-shape-inference ------------------------===//
#include "passes/onnx/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::onnx {
#define GEN_PASS_DEF_ONNXSHAPEINFERENCE
#include "passes/onnx/Passes.h.inc"
} // namespace gatec::onnx

using namespace mlir;

namespace gatec::onnx {
namespace {
struct OnnxShapeInferencePass
    : impl::OnnxShapeInferenceBase<OnnxShapeInferencePass> {
  using Base::Base;

  LogicalResult refineAll(func::FuncOp func, bool &changed) {
    // Post-order: a Scan's body is refined before the Scan itself.
    WalkResult r = func.walk([&](Operation *op) {
      if (failed(refineResultTypes(op, changed)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return failure();
    // The function returns what its terminator returns.
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    auto fnType = func.getFunctionType();
    if (TypeRange(ret.getOperandTypes()) != fnType.getResults()) {
      func.setType(FunctionType::get(func.getContext(), fnType.getInputs(),
                                     ret.getOperandTypes()));
      changed = true;
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    RewritePatternSet patterns(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (unsigned i = 0; i < maxIterations; ++i) {
      bool changed = false;
      if (failed(refineAll(func, changed)))
        return signalPassFailure();
      bool folded = false;
      GreedyRewriteConfig config;
      if (failed(applyPatternsGreedily(func, frozen, config, &folded)))
        return signalPassFailure();
      if (!changed && !folded)
        break;
    }
  }
};
} // namespace
} // namespace gatec::onnx
