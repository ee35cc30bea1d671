//===- FuseElementwise.cpp - --fuse-elementwise ---------------------------===//
//
// Elementwise producer-consumer fusion of linalg.generic ops, restricted so
// that no work is duplicated.
//
//===----------------------------------------------------------------------===//
#include "passes/tiling/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::tiling {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/tiling/Passes.h.inc"
} // namespace gatec::tiling

using namespace mlir;

namespace {
struct FuseElementwisePass
    : gatec::tiling::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::ControlFusionFn control = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
      // Into an all-parallel consumer only: fused into a contraction or a
      // reduction, the producer's body would run once per reduced element.
      return producer && producer->hasOneUse() && consumer &&
             consumer.getNumReductionLoops() == 0;
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
