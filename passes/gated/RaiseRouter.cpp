//===- RaiseRouter.cpp - --raise-router -----------------------------------===//
//
// The mixture-of-experts router as the exporters write it, anchored at its
// onnx.TopK: Softmax → TopK (→ ReduceSum + Div) or TopK → Softmax, over the
// last axis of a projection's logits with a constant k, becomes one
// gated.router. See Passes.td for the forms.
//
//===----------------------------------------------------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISEROUTER
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {
/// v without the casts that do not change it: to its own type, or an
/// f16/bf16 value widened to f32 (the router's softmax in f32, as
/// transformers writes it, `softmax(logits, dtype=torch.float)`).
Value unwidened(Value v) {
  while (auto c = def<onnx::CastOp>(v)) {
    Type from = getElementTypeOrSelf(c.getInput().getType());
    Type to = getElementTypeOrSelf(c.getType());
    if (from != to && !(to.isF32() && (from.isF16() || from.isBF16())))
      break;
    v = c.getInput();
  }
  return v;
}

/// A Reshape that only merges or splits the dims before the last (the
/// expert axis stays the last, whole).
Value keepsLastDim(onnx::ReshapeOp r) {
  auto in = shapeOf(r.getData()), out = shapeOf(r.getReshaped());
  if (in.empty() || out.empty() || in.back() == ShapedType::kDynamic ||
      in.back() != out.back())
    return {};
  return r.getData();
}

/// v is the logits of a projection over the last axis: x·W (MatMul with a
/// constant 2-D W, or Gemm with constant B and C absent or constant), plus
/// an optional constant bias, seen through casts and reshapes that keep
/// the last dim.
bool isProjection(Value v) {
  v = unwidened(v);
  while (auto r = def<onnx::ReshapeOp>(v)) {
    Value in = keepsLastDim(r);
    if (!in)
      return false;
    v = unwidened(in);
  }
  if (auto add = def<onnx::AddOp>(v)) {
    if (isConstant(add.getB()))
      v = add.getA();
    else if (isConstant(add.getA()))
      v = add.getB();
    else
      return false;
  }
  if (auto mm = def<onnx::MatMulOp>(v))
    return isConstant(mm.getB()) && shapeOf(mm.getB()).size() == 2;
  if (auto g = def<onnx::GemmOp>(v))
    return isConstant(g.getB()) && shapeOf(g.getB()).size() == 2 &&
           g.getTransA() == 0 &&
           (isa<NoneType>(g.getC().getType()) || isConstant(g.getC()));
  return false;
}

/// `axis` names the last axis of a rank-`rank` tensor.
bool lastAxis(int64_t axis, int64_t rank) {
  return axis == -1 || axis == rank - 1;
}

/// The Softmax over the last axis that is the only user of v (seen
/// through casts to the same type or to f32), or null.
onnx::SoftmaxOp onlySoftmaxOf(Value v) {
  while (v.hasOneUse()) {
    Operation *u = *v.getUsers().begin();
    if (auto s = dyn_cast<onnx::SoftmaxOp>(u))
      return lastAxis(s.getAxis(), shapeOf(v).size()) ? s : onnx::SoftmaxOp();
    auto c = dyn_cast<onnx::CastOp>(u);
    if (!c || unwidened(c.getResult()) != v)
      return {};
    v = c.getResult();
  }
  return {};
}

/// values / ReduceSum(values, last axis, keepdims) when those two are
/// every use of `values`: the Div, or null.
onnx::DivOp renormalised(Value values) {
  int64_t rank = shapeOf(values).size();
  onnx::ReduceSumOp sum;
  onnx::DivOp div;
  for (Operation *u : values.getUsers()) {
    if (auto s = dyn_cast<onnx::ReduceSumOp>(u); s && !sum)
      sum = s;
    else if (auto d = dyn_cast<onnx::DivOp>(u); d && !div)
      div = d;
    else
      return {};
  }
  if (!sum || !div || div.getA() != values || div.getB() != sum.getResult() ||
      !sum.getResult().hasOneUse() || sum.getKeepdims() != 1 ||
      !isLastAxis(sum.getAxes(), rank))
    return {};
  return div;
}

struct RouterPattern : OpRewritePattern<onnx::TopKOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnx::TopKOp topk,
                                PatternRewriter &rewriter) const override {
    Value values = topk.getValues(), indices = topk.getIndices();
    auto shape = shapeOf(topk.getX());
    if (shape.empty() || !lastAxis(topk.getAxis(), shape.size()) ||
        topk.getLargest() != 1)
      return rewriter.notifyMatchFailure(topk, "not the largest over the "
                                               "last axis");
    int64_t experts = shape.back();
    auto k = onnx::getConstantInts(topk.getK());
    if (!k || k->size() != 1 || (*k)[0] < 1 ||
        experts == ShapedType::kDynamic || (*k)[0] > experts)
      return rewriter.notifyMatchFailure(topk, "k not a constant in [1, E]");

    // softmax_then_topk: TopK(Softmax(logits)), then maybe renormalised.
    // topk_then_softmax: Softmax(TopK(logits).values).
    SmallVector<Operation *> matched{topk, topk.getK().getDefiningOp()};
    Value logits, weights;
    auto order = gated::RouterOrder::softmax_then_topk;
    auto norm = gated::RouterNormalisation::none;
    if (auto sm = def<onnx::SoftmaxOp>(stripNoopCasts(topk.getX()))) {
      if (!lastAxis(sm.getAxis(), shape.size()) || !isProjection(sm.getInput()))
        return rewriter.notifyMatchFailure(topk, "no router softmax");
      matched.push_back(sm);
      logits = unwidened(sm.getInput());
      weights = values;
      if (auto div = renormalised(values)) {
        norm = gated::RouterNormalisation::renormalise;
        matched.push_back(div);
        matched.push_back(div.getB().getDefiningOp());
        weights = div.getResult();
      }
    } else if (auto sm = onlySoftmaxOf(values)) {
      if (!isProjection(topk.getX()))
        return rewriter.notifyMatchFailure(topk, "not a projection's logits");
      order = gated::RouterOrder::topk_then_softmax;
      logits = unwidened(topk.getX());
      matched.push_back(sm);
      weights = sm.getResult();
    } else {
      return rewriter.notifyMatchFailure(topk, "no softmax");
    }
    Location loc = fuseLocs(rewriter.getContext(), matched);
    auto router = gated::RouterOp::create(rewriter, loc, weights.getType(),
                                          indices.getType(), logits,
                                          (uint64_t)(*k)[0], order, norm);
    if (!verifiesQuietly(router)) {
      rewriter.eraseOp(router);
      return rewriter.notifyMatchFailure(topk, "the router does not verify");
    }
    rewriter.replaceAllUsesWith(weights, router.getWeights());
    rewriter.replaceAllUsesWith(indices, router.getIndices());
    return success();
  }
};

struct RaiseRouterPass : gated::impl::RaiseRouterBase<RaiseRouterPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RouterPattern>(&getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
