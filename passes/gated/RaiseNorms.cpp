//===- RaiseNorms.cpp - --raise-norms -------------------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISENORMS
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {

/// sqrt(mean_last(x²) + eps): returns x (casts stripped) and eps.
bool matchRms(Value rms, int64_t rank, Value &x, double &eps) {
  auto sqrt = def<onnx::SqrtOp>(rms);
  auto add = sqrt ? def<onnx::AddOp>(sqrt.getX()) : onnx::AddOp();
  if (!add)
    return false;
  for (auto [m, e] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto mean = def<onnx::ReduceMeanOp>(m);
    auto epsilon = scalarConstant(e);
    if (!mean || !epsilon || !mean.getKeepdims() ||
        !isLastAxis(mean.getAxes(), rank))
      continue;
    Value sq = mean.getData();
    if (auto pow = def<onnx::PowOp>(sq)) {
      auto two = scalarConstant(pow.getY());
      if (!two || *two != 2.0)
        continue;
      x = stripNoopCasts(pow.getX());
    } else if (auto mul = def<onnx::MulOp>(sq);
               mul && mul.getA() == mul.getB()) {
      x = stripNoopCasts(mul.getA());
    } else {
      continue;
    }
    eps = *epsilon;
    return true;
  }
  return false;
}

/// x / rms(x) in the forms torch exports: Mul(x, Div(1, rms)),
/// Mul(x, Reciprocal(rms)), Div(x, rms). Returns x.
bool matchNormalized(Value v, Value &x, double &eps) {
  v = stripNoopCasts(v);
  int64_t rank = shapeOf(v).size();
  if (rank == 0)
    return false;
  if (auto div = def<onnx::DivOp>(v)) {
    if (matchRms(div.getB(), rank, x, eps) && stripNoopCasts(div.getA()) == x)
      return true;
    return false;
  }
  auto mul = def<onnx::MulOp>(v);
  if (!mul)
    return false;
  for (auto [a, inv] :
       {std::pair(mul.getA(), mul.getB()), std::pair(mul.getB(), mul.getA())}) {
    Value rms;
    if (auto d = def<onnx::DivOp>(inv)) {
      auto one = scalarConstant(d.getA());
      if (!one || *one != 1.0)
        continue;
      rms = d.getB();
    } else if (auto r = def<onnx::ReciprocalOp>(inv)) {
      rms = r.getX();
    } else {
      continue;
    }
    if (matchRms(rms, rank, x, eps) && stripNoopCasts(a) == x)
      return true;
  }
  return false;
}

bool isVectorOfLastDim(Value w, Value x) {
  auto ws = shapeOf(w), xs = shapeOf(x);
  return ws.size() == 1 && !xs.empty() && ws[0] == xs.back() &&
         ws[0] != ShapedType::kDynamic;
}

/// Reshape(normalized(Reshape(x))) where both reshapes keep the last dim
/// (Mamba2's gated norm over n_groups = 1: [B, T, D] -> [B, T, 1, D] and
/// back): rows of the last dim are the same rows, so this is normalized(x).
bool matchNormalizedThroughReshape(Value v, Value &x, double &eps) {
  auto back = def<onnx::ReshapeOp>(v);
  Value x4;
  if (!back || !matchNormalized(back.getData(), x4, eps))
    return false;
  auto in = def<onnx::ReshapeOp>(x4);
  if (!in)
    return false;
  auto outS = shapeOf(v), midS = shapeOf(x4), inS = shapeOf(in.getData());
  if (outS.empty() || midS.empty() || inS.empty() ||
      outS.back() == ShapedType::kDynamic || midS.back() != outS.back() ||
      inS.back() != outS.back() || in.getData().getType() != v.getType())
    return false;
  x = in.getData();
  return true;
}

/// Mul(normalized(x), w) (either order) -> gated.rms_norm(x, w).
struct DecomposedRMSNorm : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, w] :
         {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      Value x;
      double eps;
      if (!isConstant(w) ||
          !(matchNormalized(n, x, eps) ||
            matchNormalizedThroughReshape(n, x, eps)) ||
          !isVectorOfLastDim(w, x) || x.getType() != op.getType())
        continue;
      SmallVector<Operation *> matched;
      collectMatched(op.getResult(), {x, w}, matched);
      auto norm = gated::RMSNormOp::create(
          rewriter, fuseLocs(getContext(), matched), op.getType(), x, w,
          /*gate=*/Value(), rewriter.getF32FloatAttr(eps),
          /*unit_offset=*/UnitAttr(), /*gate_activation=*/nullptr,
          /*gate_first=*/UnitAttr());
      rewriter.replaceOp(op, norm.getResult());
      return success();
    }
    return failure();
  }
};

/// Mul(gated.rms_norm(x, w), act(z)) (either order; act sigmoid,
/// 0.5 + 0.5·sigmoid or z·sigmoid(z), z of x's type) -> the gated RMSNorm
/// gated.rms_norm(x, w) gate(z, act): Gated DeltaNet's output gate.
struct GatedRMSNorm : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, g] :
         {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      auto norm = def<gated::RMSNormOp>(n);
      if (!norm || norm.getGate() || !norm->hasOneUse() ||
          norm.getType() != op.getType() || g.getType() != op.getType())
        continue;
      // The activation may be computed before a reshape to the norm's
      // shape (act(z) then Reshape): the same reshapes are applied to z.
      SmallVector<onnx::ReshapeOp> reshapes;
      Value a = g;
      while (auto r = def<onnx::ReshapeOp>(a)) {
        reshapes.push_back(r);
        a = r.getData();
      }
      gated::GateActivation act;
      Value z = gateLogits(a, act);
      // (Where the gate and the norm differ at run time, the op broadcasts
      // them as the Mul did.)
      if (!z || z.getType() != a.getType())
        continue;
      SmallVector<Operation *> matched{norm};
      collectMatched(op.getResult(), {n, z}, matched);
      for (onnx::ReshapeOp r : llvm::reverse(reshapes)) {
        IRMapping map;
        map.map(r.getData(), z);
        z = rewriter.clone(*r, map)->getResult(0);
      }
      auto gatedNorm = gated::RMSNormOp::create(
          rewriter, fuseLocs(getContext(), matched), op.getType(), norm.getX(),
          norm.getWeight(), z, norm.getEpsilonAttr(), norm.getUnitOffsetAttr(),
          gated::GateActivationAttr::get(getContext(), act));
      rewriter.replaceOp(op, gatedNorm.getResult());
      return success();
    }
    return failure();
  }
};

/// gated.rms_norm(Mul(y, act(z)), w) (either order; the product read by the
/// norm only, y and z of its type) -> gated.rms_norm(y, w) gate(z, act)
/// gate_first: Mamba2's gated norm, which gates before normalising.
struct GateFirstRMSNorm : OpRewritePattern<gated::RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(gated::RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    auto m = def<onnx::MulOp>(op.getX());
    if (op.getGate() || !m || !m->hasOneUse())
      return failure();
    for (auto [y, g] :
         {std::pair(m.getA(), m.getB()), std::pair(m.getB(), m.getA())}) {
      gated::GateActivation act;
      Value z = gateLogits(g, act);
      if (!z || y.getType() != op.getX().getType() ||
          z.getType() != op.getX().getType())
        continue;
      SmallVector<Operation *> matched{op};
      collectMatched(m.getResult(), {y, z}, matched);
      auto gatedNorm = gated::RMSNormOp::create(
          rewriter, fuseLocs(getContext(), matched), op.getType(), y,
          op.getWeight(), z, op.getEpsilonAttr(), op.getUnitOffsetAttr(),
          gated::GateActivationAttr::get(getContext(), act),
          rewriter.getUnitAttr());
      rewriter.replaceOp(op, gatedNorm.getResult());
      return success();
    }
    return failure();
  }
};

/// ONNX RMSNormalization-23 over the last axis.
struct RMSNormalizationOp : OpRewritePattern<onnx::RMSNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::RMSNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    int64_t axis = (int64_t)op.getAxis();
    if (rank == 0 || (axis != -1 && axis != rank - 1) ||
        !isVectorOfLastDim(op.getScale(), op.getX()) ||
        op.getX().getType() != op.getType())
      return failure();
    rewriter.replaceOpWithNewOp<gated::RMSNormOp>(
        op, op.getType(), op.getX(), op.getScale(), /*gate=*/Value(),
        op.getEpsilonAttr(), /*unit_offset=*/UnitAttr(),
        /*gate_activation=*/nullptr, /*gate_first=*/UnitAttr());
    return success();
  }
};

/// ONNX LayerNormalization-17 over the last axis (only Y used).
struct LayerNormalizationOp : OpRewritePattern<onnx::LayerNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::LayerNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    int64_t axis = (int64_t)op.getAxis();
    if (rank == 0 || (axis != -1 && axis != rank - 1) ||
        !isVectorOfLastDim(op.getScale(), op.getX()) ||
        op.getX().getType() != op.getY().getType())
      return failure();
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return failure();
    Value bias = op.getB();
    if (isa<NoneType>(bias.getType()))
      bias = Value();
    else if (!isVectorOfLastDim(bias, op.getX()))
      return failure();
    auto ln = gated::LayerNormOp::create(
        rewriter, op.getLoc(), op.getY().getType(), op.getX(), op.getScale(),
        bias, op.getEpsilonAttr());
    rewriter.replaceAllUsesWith(op.getY(), ln.getResult());
    rewriter.eraseOp(op);
    return success();
  }
};

/// (x − mean(x)) / sqrt(mean((x − mean(x))²) + eps) · w [+ b].
struct DecomposedLayerNorm : OpRewritePattern<onnx::MulOp> {
  // Tried before DecomposedRMSNorm, which would see the centred x.
  DecomposedLayerNorm(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, w] :
         {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      auto div = def<onnx::DivOp>(n);
      if (!div || !isConstant(w))
        continue;
      auto sub = def<onnx::SubOp>(div.getA());
      if (!sub)
        continue;
      Value x = sub.getA();
      auto mean = def<onnx::ReduceMeanOp>(sub.getB());
      int64_t rank = shapeOf(x).size();
      if (!mean || mean.getData() != x || !mean.getKeepdims() ||
          !isLastAxis(mean.getAxes(), rank))
        continue;
      // The variance reads the centred x.
      Value varX;
      double eps;
      if (!matchRms(div.getB(), rank, varX, eps) || varX != sub.getResult())
        continue;
      if (!isVectorOfLastDim(w, x) || x.getType() != op.getType())
        continue;
      // A following Add of a constant [D] bias is folded in.
      Value bias;
      Operation *root = op;
      if (op->hasOneUse()) {
        if (auto add = dyn_cast<onnx::AddOp>(*op->getUsers().begin())) {
          Value b = add.getA() == op.getResult() ? add.getB() : add.getA();
          if (isConstant(b) && isVectorOfLastDim(b, x) &&
              add.getType() == op.getType()) {
            bias = b;
            root = add;
          }
        }
      }
      rewriter.setInsertionPoint(root);
      SmallVector<Operation *> matched;
      collectMatched(root->getResult(0), {x, w, bias}, matched);
      auto ln = gated::LayerNormOp::create(
          rewriter, fuseLocs(getContext(), matched), op.getType(), x, w, bias,
          rewriter.getF32FloatAttr(eps));
      rewriter.replaceOp(root, ln.getResult());
      return success();
    }
    return failure();
  }
};

struct RaiseNormsPass : gated::impl::RaiseNormsBase<RaiseNormsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposedRMSNorm, RMSNormalizationOp, LayerNormalizationOp,
                 DecomposedLayerNorm, GatedRMSNorm, GateFirstRMSNorm>(
        &getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
