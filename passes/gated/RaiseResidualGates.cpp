//===- RaiseResidualGates.cpp - --raise-residual-gates --------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISERESIDUALGATES
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;
using gatec::gated::ResidualKind;

namespace {

/// Mul(a, b) with one side satisfying `f`: returns (that side, other side).
template <typename F>
std::optional<std::pair<Value, Value>> mulWith(Value v, F f) {
  auto m = def<onnx::MulOp>(v);
  if (!m)
    return std::nullopt;
  if (f(m.getA()))
    return std::pair(m.getA(), m.getB());
  if (f(m.getB()))
    return std::pair(m.getB(), m.getA());
  return std::nullopt;
}

/// The input x of the projection computing gate logits g = x·W (± b).
Value gateSource(Value g) {
  if (auto a = def<onnx::AddOp>(g))
    g = isConstant(a.getA()) ? a.getB() : a.getA();
  else if (auto s = def<onnx::SubOp>(g); s && isConstant(s.getB()))
    g = s.getA();
  auto mm = def<onnx::MatMulOp>(g);
  return mm ? mm.getA() : Value();
}

bool isSigmoid(Value v) { return (bool)def<onnx::SigmoidOp>(v); }

/// Whether an op is a learned layer of a residual branch: a contraction or
/// a raised gated op.
bool isLayer(Operation *op) {
  Dialect *d = op->getDialect();
  return isa<onnx::MatMulOp, onnx::GemmOp, onnx::ConvOp, onnx::EinsumOp>(op) ||
         (d && d->getNamespace() == "gated");
}

/// Whether v is computed from x (x is v or reaches it through operands);
/// with `throughLayer`, along a path through a learned layer.
bool computedFrom(Value v, Value x, bool throughLayer = false) {
  SmallVector<std::pair<Value, bool>> work{{v, !throughLayer}};
  llvm::DenseSet<Value> seen[2]; // reached before / after a layer
  while (!work.empty()) {
    auto [u, layer] = work.pop_back_val();
    if (u == x && layer)
      return true;
    if (!seen[layer].insert(u).second)
      continue;
    if (Operation *d = u.getDefiningOp()) {
      bool through = layer || isLayer(d);
      for (Value o : d->getOperands())
        work.push_back({o, through});
    }
  }
  return false;
}

/// A residual gate x + g⊙F(x): the gated branch y = F(x) is computed from
/// the skip x. An embedding scaled by √d and then added to the first
/// layer's output (Gemma) is no gate: the skip is the scaled value itself.
bool isResidual(Value x, Value y) { return computedFrom(y, x); }

/// The one-term residual kinds (x + α·y, x + γ⊙y, x + tanh(α)·y) need a
/// learned layer between x and y: the expanded tanh-GELU's
/// x + 0.044715·x³ (RecurrentGemma's MLP) is no ReZero gate.
bool isLayerBranch(Value x, Value y) { return computedFrom(y, x, true); }

/// 1 − s as Sub(1, s): returns s.
Value oneMinus(Value v) {
  auto sub = def<onnx::SubOp>(v);
  if (!sub)
    return {};
  auto one = scalarConstant(sub.getA());
  return one && *one == 1.0 ? sub.getB() : Value();
}

struct ResidualPattern : OpRewritePattern<onnx::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult replace(onnx::AddOp op, PatternRewriter &rewriter,
                        ResidualKind kind, Value x, Value y, Value g) const {
    Type t = op.getType();
    if (x.getType() != t || y.getType() != t)
      return failure();
    SmallVector<Operation *> matched;
    collectMatched(op.getResult(), {x, y, g}, matched);
    auto r = gated::ResidualOp::create(
        rewriter, fuseLocs(getContext(), matched), t, x, y, g, kind);
    if (!verifiesQuietly(r)) {
      rewriter.eraseOp(r);
      return failure();
    }
    rewriter.replaceOp(op, r.getResult());
    return success();
  }

  LogicalResult matchAndRewrite(onnx::AddOp op,
                                PatternRewriter &rewriter) const override {
    Value a = op.getA(), b = op.getB();
    // Two gated terms: highway s⊙x + (1−s)⊙y, GRU (1−z)⊙x + z⊙tanh(h).
    for (auto [p, q] : {std::pair(a, b), std::pair(b, a)}) {
      auto sx = mulWith(p, isSigmoid);
      if (!sx)
        continue;
      Value s = sx->first;
      auto oy = mulWith(q, [&](Value v) { return oneMinus(v) == s; });
      if (!oy)
        continue;
      Value logits = def<onnx::SigmoidOp>(s).getX();
      if (auto t = def<onnx::TanhOp>(sx->second))
        return replace(op, rewriter, ResidualKind::gru, oy->second,
                       t.getInput(), logits);
      return replace(op, rewriter, ResidualKind::highway, sx->second,
                     oy->second, logits);
    }
    for (auto [x, term] : {std::pair(a, b), std::pair(b, a)}) {
      // GTrXL's input gate σ(g)⊙u + x, g computed from u: u is the gated
      // skip and x the branch computed from it.
      if (auto sy = mulWith(term, isSigmoid)) {
        Value g = def<onnx::SigmoidOp>(sy->first).getX();
        Value u = sy->second;
        if (!def<onnx::TanhOp>(u) && gateSource(g) == u && isResidual(u, x))
          return replace(op, rewriter, ResidualKind::input, u, x, g);
      }
      if (!isResidual(x, term))
        continue;
      // x + σ(g)⊙tanh(u): sigtanh. σ(g)⊙u + x is the output gate when g is
      // computed from x, the input gate when g is computed from u.
      if (auto sy = mulWith(term, isSigmoid)) {
        Value g = def<onnx::SigmoidOp>(sy->first).getX();
        Value u = sy->second;
        if (auto t = def<onnx::TanhOp>(u))
          return replace(op, rewriter, ResidualKind::sigtanh, x, t.getInput(),
                         g);
        if (gateSource(g) == u)
          continue; // an input gate, but x is not computed from u
        return replace(op, rewriter, ResidualKind::output, x, u, g);
      }
      // x + tanh(α)⊙y, x + α⊙y (α scalar), x + γ⊙y (γ a [D] vector).
      if (!isLayerBranch(x, term))
        continue;
      if (auto ty = mulWith(term, [](Value v) {
            auto t = def<onnx::TanhOp>(v);
            return t && isConstant(t.getInput()) &&
                   onnx::getConstantAttr(t.getInput()).getNumElements() == 1;
          }))
        return replace(op, rewriter, ResidualKind::tanh_scalar, x, ty->second,
                       def<onnx::TanhOp>(ty->first).getInput());
      if (auto ay = mulWith(term, [](Value v) { return isConstant(v); })) {
        int64_t n = onnx::getConstantAttr(ay->first).getNumElements();
        auto xs = shapeOf(x);
        if (n == 1)
          return replace(op, rewriter, ResidualKind::rezero, x, ay->second,
                         ay->first);
        if (!xs.empty() && shapeOf(ay->first).size() == 1 && n == xs.back())
          return replace(op, rewriter, ResidualKind::layerscale, x, ay->second,
                         ay->first);
      }
    }
    return failure();
  }
};

struct RaiseResidualGatesPass
    : gated::impl::RaiseResidualGatesBase<RaiseResidualGatesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ResidualPattern>(&getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
