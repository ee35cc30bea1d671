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

  /// `to` with the static sizes of `from` where `to` has dynamic ones (the
  /// same rank and element type), or `to` itself.
  static Type meet(Type to, Type from) {
    auto t = dyn_cast<RankedTensorType>(to);
    auto f = dyn_cast<RankedTensorType>(from);
    if (!f || f.getElementType() != getElementTypeOrSelf(to))
      return to;
    if (!t)
      return f;
    if (t.getRank() != f.getRank())
      return to;
    SmallVector<int64_t> shape(t.getShape());
    for (auto [d, s] : llvm::zip(shape, f.getShape()))
      if (ShapedType::isDynamic(d))
        d = s;
    return RankedTensorType::get(shape, t.getElementType());
  }

  /// A Scan body's inputs take the static sizes its operands give them: the
  /// initial states, and each scan input without its scan axis (a body
  /// graph often leaves its inputs' shapes out).
  static void refineScanBody(ScanOp scan, bool &changed) {
    Block &body = scan.getBody().front();
    auto inputs = scan.getInitialStateAndScanInputs();
    int64_t nState = inputs.size() - scan.getNumScanInputs();
    if (nState < 0 || body.getNumArguments() != inputs.size())
      return;
    for (auto [i, v] : llvm::enumerate(inputs)) {
      Type from = v.getType();
      if ((int64_t)i >= nState) {
        auto t = dyn_cast<RankedTensorType>(from);
        if (!t)
          continue;
        int64_t axis = 0;
        if (auto axes = scan.getScanInputAxes();
            axes && (int64_t)axes->size() > (int64_t)i - nState)
          axis = (*axes)[i - nState];
        if (axis < 0)
          axis += t.getRank();
        if (axis < 0 || axis >= t.getRank())
          continue;
        SmallVector<int64_t> shape(t.getShape());
        shape.erase(shape.begin() + axis);
        from = RankedTensorType::get(shape, t.getElementType());
      }
      BlockArgument arg = body.getArgument(i);
      Type refined = meet(arg.getType(), from);
      if (refined != arg.getType()) {
        arg.setType(refined);
        changed = true;
      }
    }
  }

  LogicalResult refineAll(func::FuncOp func, bool &changed) {
    func.walk<WalkOrder::PreOrder>(
        [&](ScanOp scan) { refineScanBody(scan, changed); });
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
