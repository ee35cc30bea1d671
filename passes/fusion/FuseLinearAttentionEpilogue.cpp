//===- FuseLinearAttentionEpilogue.cpp - --fuse-linear-attention-epilogue -===//
//
// The (gated) RMSNorm over the head dim that reads a gated.linear_attention
// output becomes the op's epilogue: each task normalises and gates the rows
// it has just computed, instead of a separate pass over the output.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"

namespace gatec::fusion {
#define GEN_PASS_DEF_FUSELINEARATTENTIONEPILOGUE
#include "passes/fusion/Passes.h.inc"
} // namespace gatec::fusion

using namespace mlir;
using namespace gatec;

namespace {
/// Whether v is available at `op` (defined before it in its block or in an
/// enclosing region).
bool availableAt(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->getParent()->isAncestor(op->getParentRegion());
  Operation *d = v.getDefiningOp();
  if (d->getBlock() == op->getBlock())
    return d->isBeforeInBlock(op);
  return d->getParentRegion()->isProperAncestor(op->getParentRegion()) ||
         d->getBlock()->getParentOp()->isAncestor(op);
}

/// Fuses `norm` into the linear attention whose output it reads through
/// onnx.Reshape ops only (each with no other reader), if the norm is over
/// the head dim Dv. Returns whether it did.
bool fuse(gated::RMSNormOp norm) {
  // The epilogue gates the normalised rows (not Mamba2's gate-first norm).
  if (norm.getGateFirst())
    return false;
  SmallVector<Operation *> chain;
  Value v = norm.getX();
  while (auto r = v.getDefiningOp<onnx::ReshapeOp>()) {
    if (!r->hasOneUse())
      return false;
    chain.push_back(r);
    v = r.getData();
  }
  auto la = v.getDefiningOp<gated::LinearAttentionOp>();
  if (!la || v != la.getOutput() || !v.hasOneUse() || la.getNormWeight() ||
      la->getBlock() != norm->getBlock())
    return false;
  // The norm's rows must be the output's rows of Dv: reshapes keep the
  // order of the elements, so equal last dims is enough.
  auto ot = cast<RankedTensorType>(la.getOutput().getType());
  auto xt = dyn_cast<RankedTensorType>(norm.getX().getType());
  int64_t dv = ot.getDimSize(3);
  if (!xt || xt.getRank() < 1 || dv == ShapedType::kDynamic ||
      xt.getDimSize(xt.getRank() - 1) != dv)
    return false;
  Value w = norm.getWeight(), z = norm.getGate();
  if (!isa<RankedTensorType>(w.getType()) ||
      (z && !isa<RankedTensorType>(z.getType())))
    return false;
  // The new operands must be available at the op: if not, the op and the
  // reshapes move down to the norm, which needs the final state to be read
  // after it only.
  if (!availableAt(w, la) || (z && !availableAt(z, la))) {
    for (Operation *user : la.getFinalState().getUsers())
      if (user->getBlock() != norm->getBlock() || user->isBeforeInBlock(norm))
        return false;
    la->moveBefore(norm);
    for (Operation *r : llvm::reverse(chain))
      r->moveBefore(norm);
  }
  la.getNormWeightMutable().assign(w);
  la.setNormEpsilonAttr(norm.getEpsilonAttr());
  if (norm.getUnitOffset())
    la.setNormUnitOffset(true);
  if (z) {
    la.getNormGateMutable().assign(z);
    la.setNormGateActivationAttr(norm.getGateActivationAttr());
  }
  la->setLoc(FusedLoc::get(la.getContext(), {la.getLoc(), norm.getLoc()}));
  norm.getResult().replaceAllUsesWith(norm.getX());
  norm.erase();
  return true;
}

struct FuseLinearAttentionEpiloguePass
    : fusion::impl::FuseLinearAttentionEpilogueBase<
          FuseLinearAttentionEpiloguePass> {
  void runOnOperation() override {
    SmallVector<gated::RMSNormOp> norms;
    getOperation().walk([&](gated::RMSNormOp n) { norms.push_back(n); });
    for (gated::RMSNormOp n : norms)
      fuse(n);
  }
};
} // namespace
