//===- InnermostParallelLoop.cpp - --innermost-parallel-loop --------------===//
//
// Loop order of contractions for the vectorizer: the output's contiguous
// dimension innermost, the reduction outside it.
//
//===----------------------------------------------------------------------===//
#include "passes/tiling/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace gatec::tiling {
#define GEN_PASS_DEF_INNERMOSTPARALLELLOOP
#include "passes/tiling/Passes.h.inc"
} // namespace gatec::tiling

using namespace mlir;

namespace {
/// The loop that indexes the last dimension of `map`'s result, if any.
std::optional<unsigned> lastDimLoop(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return d.getPosition();
  return std::nullopt;
}

struct InnermostParallelLoopPass
    : gatec::tiling::impl::InnermostParallelLoopBase<
          InnermostParallelLoopPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      if (op.getNumReductionLoops() == 0)
        continue;
      unsigned n = op.getNumLoops();
      // Every output (a GLU computes x·W and x·V together) along one loop.
      std::optional<unsigned> j =
          lastDimLoop(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
      for (OpOperand &init : op.getDpsInitsMutable())
        if (lastDimLoop(op.getMatchingIndexingMap(&init)) != j)
          j = std::nullopt;
      if (!j || *j == n - 1 ||
          !linalg::isParallelIterator(op.getIteratorTypesArray()[*j]))
        continue;
      // Worth it only if an input is also contiguous along that loop.
      bool contiguousInput =
          llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
            return lastDimLoop(op.getMatchingIndexingMap(in)) == j;
          });
      if (!contiguousInput)
        continue;
      SmallVector<unsigned> perm;
      for (unsigned i = 0; i < n; ++i)
        if (i != *j)
          perm.push_back(i);
      perm.push_back(*j);
      rewriter.setInsertionPoint(op);
      (void)linalg::interchangeGenericOp(rewriter, op, perm);
    }
  }
};
} // namespace
