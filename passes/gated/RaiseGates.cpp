//===- RaiseGates.cpp - --raise-gates -------------------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISEGATES
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {
/// Gate logits g = x·W (+ b): true if g is such a projection.
bool isGateProjection(Value g) {
  if (auto a = def<onnx::AddOp>(g))
    g = isConstant(a.getA()) ? a.getB()
                             : (isConstant(a.getB()) ? a.getA() : Value());
  auto mm = g ? def<onnx::MatMulOp>(g) : onnx::MatMulOp();
  return mm && isConstant(mm.getB());
}

/// Which operand of a gated.attention the value v reaches through layout
/// ops (Reshape, Transpose, Unsqueeze, Expand, scalar Mul/Div, norms):
/// 0 query, 1 key, 2 value; -1 if none.
int attentionOperand(Value v, int depth = 0) {
  if (depth > 12)
    return -1;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto attn = dyn_cast<gated::AttentionOp>(user)) {
      if (use.get() == attn.getQuery())
        return 0;
      if (use.get() == attn.getKey())
        return 1;
      if (use.get() == attn.getValue())
        return 2;
      continue;
    }
    if (isa<onnx::ReshapeOp, onnx::TransposeOp, onnx::UnsqueezeOp,
            onnx::ExpandOp, onnx::MulOp, onnx::DivOp, gated::RMSNormOp,
            onnx::AddOp, onnx::SliceOp, onnx::ConcatOp, onnx::NegOp>(user)) {
      int r = attentionOperand(user->getResult(0), depth + 1);
      if (r >= 0)
        return r;
    }
  }
  return -1;
}

/// Whether v is the output projection of an attention: MatMul(a, W) with a
/// reached from a gated.attention result through layout ops.
bool isAttentionOutput(Value v) {
  auto mm = def<onnx::MatMulOp>(v);
  if (!mm || !isConstant(mm.getB()))
    return false;
  Value a = mm.getA();
  for (int i = 0; i < 6; ++i) {
    if (def<gated::AttentionOp>(a))
      return true;
    Operation *d = a.getDefiningOp();
    if (!d || !isa<onnx::ReshapeOp, onnx::TransposeOp>(d))
      return false;
    a = d->getOperand(0);
  }
  return false;
}

struct GatePattern : RewritePattern {
  GatePattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<onnx::MulOp, onnx::AddOp>(op))
      return failure();
    bool isMul = isa<onnx::MulOp>(op);
    for (int side = 0; side < 2; ++side) {
      Value p = op->getOperand(side), b = op->getOperand(1 - side);
      gated::GateActivation act;
      Value g = gateLogits(b, act);
      if (!g || !isGateProjection(g) ||
          p.getType() != op->getResult(0).getType())
        continue;
      std::optional<gated::GatePlacement> placement;
      if (isAttentionOutput(p)) {
        placement = gated::GatePlacement::G5;
      } else if (isGateProjection(p)) {
        int which = attentionOperand(op->getResult(0));
        if (which == 0)
          placement = gated::GatePlacement::G4;
        if (which == 1)
          placement = gated::GatePlacement::G3;
        if (which == 2)
          placement = gated::GatePlacement::G2;
      }
      if (!placement)
        continue;
      SmallVector<Operation *> matched;
      collectMatched(op->getResult(0), {p, g}, matched);
      auto gate = gated::GateOp::create(
          rewriter, fuseLocs(getContext(), matched), p.getType(), p, g,
          *placement, act,
          isMul ? gated::GateMode::multiply : gated::GateMode::add);
      if (!verifiesQuietly(gate)) {
        rewriter.eraseOp(gate);
        return failure();
      }
      rewriter.replaceOp(op, gate.getResult());
      return success();
    }
    return failure();
  }
};

struct RaiseGatesPass : gated::impl::RaiseGatesBase<RaiseGatesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GatePattern>(&getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
