//===- RaiseSharedExpertGates.cpp - --raise-shared-expert-gates -----------===//
//
// The sigmoid gate on a mixture-of-experts layer's shared expert
// (Qwen2-MoE, Qwen3-Next): σ(x·w_g) ⊙ SharedExpert(x), to gated.gate with
// placement shared_expert.
//
//===----------------------------------------------------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISESHAREDEXPERTGATES
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {
/// v without Casts to its own type or from f16/bf16 to f32, and without
/// Reshapes that keep its last dim (the exporters flatten tokens to rows).
Value stripRowViews(Value v) {
  for (;;) {
    if (auto c = def<onnx::CastOp>(v)) {
      Type from = getElementTypeOrSelf(c.getInput().getType());
      Type to = getElementTypeOrSelf(c.getType());
      if (from != to && !(to.isF32() && (from.isF16() || from.isBF16())))
        return v;
      v = c.getInput();
      continue;
    }
    if (auto r = def<onnx::ReshapeOp>(v)) {
      auto in = shapeOf(r.getData()), out = shapeOf(r.getReshaped());
      if (in.empty() || out.empty() || in.back() == ShapedType::kDynamic ||
          in.back() != out.back())
        return v;
      v = r.getData();
      continue;
    }
    return v;
  }
}

/// The input x of a linear layer x·W (+ b) with a constant 2-D W (MatMul,
/// or Gemm with transA = 0, alpha 1 and a constant or no C), and W's
/// output width; null if v is no such layer.
Value linearInput(Value v, int64_t *width = nullptr) {
  v = stripRowViews(v);
  if (auto add = def<onnx::AddOp>(v)) {
    if (isConstant(add.getB()))
      v = add.getA();
    else if (isConstant(add.getA()))
      v = add.getB();
    else
      return {};
  }
  if (auto mm = def<onnx::MatMulOp>(v)) {
    auto w = shapeOf(mm.getB());
    if (!isConstant(mm.getB()) || w.size() != 2)
      return {};
    if (width)
      *width = w[1];
    return mm.getA();
  }
  if (auto g = def<onnx::GemmOp>(v)) {
    auto w = shapeOf(g.getB());
    if (!isConstant(g.getB()) || w.size() != 2 || g.getTransA() != 0 ||
        g.getAlpha().convertToDouble() != 1.0 ||
        !(isa<NoneType>(g.getC().getType()) || isConstant(g.getC())))
      return {};
    if (width)
      *width = w[g.getTransB() ? 0 : 1];
    return g.getA();
  }
  return {};
}

/// Whether a gated.router in the function routes the tokens x: its logits
/// are a linear layer of x (up to row views).
bool routedBySomeRouter(Value x) {
  Value base = stripRowViews(x);
  auto func = x.getParentRegion()->getParentOfType<func::FuncOp>();
  bool found = false;
  func.walk([&](gated::RouterOp r) {
    Value in = linearInput(r.getLogits());
    if (in && stripRowViews(in) == base)
      found = true;
  });
  return found;
}

struct SharedExpertGate : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      Value p = op->getOperand(side), s = op->getOperand(1 - side);
      if (p.getType() != op.getType())
        continue;
      gated::GateActivation act;
      Value z = gateLogits(s, act);
      int64_t width = 0;
      Value x = z ? linearInput(z, &width) : Value();
      // One gate value per token (w_g [d, 1]).
      if (!x || width != 1)
        continue;
      // p: the down projection of a GLU of the same tokens.
      Value h = linearInput(p);
      auto glu = h ? def<gated::GluOp>(stripRowViews(h)) : gated::GluOp();
      if (!glu || stripRowViews(glu.getX()) != stripRowViews(x) ||
          !routedBySomeRouter(x))
        continue;
      SmallVector<Operation *> matched;
      collectMatched(op.getResult(), {p, z}, matched);
      auto gate = gated::GateOp::create(
          rewriter, fuseLocs(getContext(), matched), p.getType(), p, z,
          gated::GatePlacement::shared_expert, act, gated::GateMode::multiply);
      if (!verifiesQuietly(gate)) {
        rewriter.eraseOp(gate);
        continue;
      }
      rewriter.replaceOp(op, gate.getResult());
      return success();
    }
    return failure();
  }
};

struct RaiseSharedExpertGatesPass
    : gated::impl::RaiseSharedExpertGatesBase<RaiseSharedExpertGatesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SharedExpertGate>(&getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
