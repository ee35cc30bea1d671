//===- RaiseGlu.cpp - --raise-glu -----------------------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include <cmath>

namespace gatec::gated {
#define GEN_PASS_DEF_RAISEGLU
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {
bool near(std::optional<double> v, double want, double tol = 1e-5) {
  return v && std::fabs(*v - want) <= tol * std::max(1.0, std::fabs(want));
}

/// x·W with W a constant 2-D matrix (MatMul, or Gemm with alpha 1, no C
/// and W written transposed when transB = 1, as the exporters write
/// nn.Linear over 2-D rows), or columns [start, end) of such a product (the
/// fused [W|V] projection that torch.chunk splits: a Slice or an output of
/// Split along the last axis).
struct Proj {
  Operation *op = nullptr;
  Value xv, w;             // x and the weight operand as written
  bool transposed = false; // w is Wᵀ ([N, K])
  int64_t start = -1, end = -1;
  // A routed expert's projection: w is the experts' constant [E, N, K]
  // (nn.Linear's layout per expert) and `expert` the expert index, a
  // scalar (the eager loop) or [R, 1] (batched_mm's GatherND indices).
  Value expert;
  Operation *gather = nullptr; // the Gather/GatherND that reads `expert`
  explicit operator bool() const { return op; }
  Value x() const { return xv; }
  int64_t width() const {
    return expert ? shapeOf(w)[1] : shapeOf(w)[transposed ? 0 : 1];
  }
  int64_t inner() const {
    return expert ? shapeOf(w)[2] : shapeOf(w)[transposed ? 1 : 0];
  }
  int64_t cols() const { return start >= 0 ? end - start : width(); }
  /// The [K, N] weight, transposed and sliced at compile time as needed;
  /// for an expert's projection the experts' [E, N', K] rows [start, end).
  Value weight(PatternRewriter &rewriter, Location loc) const {
    Value m = transposed && !expert ? transpose(rewriter, loc, w, {1, 0}) : w;
    if (start < 0)
      return m;
    auto i64 = [&](int64_t v) -> Value {
      auto t = RankedTensorType::get({1}, rewriter.getI64Type());
      return onnx::ConstantOp::create(rewriter, loc,
                                      DenseIntElementsAttr::get(t, {v}));
    };
    Value none = onnx::NoValueOp::create(rewriter, loc);
    return createOnnx(rewriter, loc, "Slice",
                      {m, i64(start), i64(end), i64(1), none});
  }
};

/// Whether `axes` is the constant [a] with a = `axis` or a - rank = `axis`
/// (one axis, either sign).
bool isOneAxis(Value axes, int64_t axis, int64_t rank) {
  auto a = onnx::getConstantInts(axes);
  return a && a->size() == 1 && ((*a)[0] == axis || (*a)[0] + rank == axis);
}

/// A routed expert's projection, as the exporters write transformers'
/// experts (W the experts' constant [E, N, K]):
///   the eager loop: MatMul(x, Transpose(Gather(W, e, axis 0))), e a scalar;
///   batched_mm: Squeeze(MatMul(GatherND(W, idx), Unsqueeze(x, -1)), -1),
///     idx [R, 1] (batch_dims 0): row r with expert idx[r].
Proj expertProjection(Value v) {
  Proj p;
  if (auto mm = def<onnx::MatMulOp>(v)) {
    auto tr = def<onnx::TransposeOp>(mm.getB());
    auto g = tr ? def<onnx::GatherOp>(tr.getData()) : onnx::GatherOp();
    if (!g || permutationOf(tr) != SmallVector<int64_t>{1, 0} ||
        g.getAxis() != 0 || !isConstant(g.getData()) ||
        shapeOf(g.getData()).size() != 3 ||
        shapeOf(g.getIndices()).size() != 0 || shapeOf(mm.getA()).size() != 2)
      return p;
    p.op = mm, p.xv = mm.getA(), p.w = g.getData(), p.expert = g.getIndices();
    p.gather = g;
    return p;
  }
  auto sq = def<onnx::SqueezeOp>(v);
  auto mm = sq ? def<onnx::MatMulOp>(sq.getData()) : onnx::MatMulOp();
  if (!mm || !isOneAxis(sq.getAxes(), 2, 3))
    return p;
  auto g = def<onnx::GatherNDOp>(mm.getA());
  auto un = def<onnx::UnsqueezeOp>(mm.getB());
  if (!g || !un || g.getBatchDims() != 0 || !isConstant(g.getData()) ||
      shapeOf(g.getData()).size() != 3 || shapeOf(g.getIndices()).size() != 2 ||
      shapeOf(g.getIndices())[1] != 1 || shapeOf(un.getData()).size() != 2 ||
      !isOneAxis(un.getAxes(), 2, 3))
    return p;
  p.op = mm, p.xv = un.getData(), p.w = g.getData(), p.expert = g.getIndices();
  p.gather = g;
  return p;
}

Proj projection(Value v) {
  Proj p;
  if (auto sl = def<onnx::SliceOp>(v)) {
    auto starts = onnx::getConstantInts(sl.getStarts());
    auto ends = onnx::getConstantInts(sl.getEnds());
    auto axes = onnx::getConstantInts(sl.getAxes());
    int64_t rank = shapeOf(v).size();
    bool unitSteps = isa<NoneType>(sl.getSteps().getType());
    if (!unitSteps)
      if (auto st = onnx::getConstantInts(sl.getSteps()))
        unitSteps = st->size() == 1 && (*st)[0] == 1;
    if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 ||
        axes->size() != 1 || !unitSteps ||
        ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
      return p;
    Proj inner = projection(sl.getData());
    if (!inner || inner.start >= 0)
      return p;
    int64_t n = inner.width();
    int64_t a = (*starts)[0], b = std::min((*ends)[0], n);
    if (a < 0 || a >= b || n == ShapedType::kDynamic)
      return p;
    inner.start = a, inner.end = b;
    return inner;
  }
  if (auto sp = def<onnx::SplitOp>(v)) {
    // Split along the last axis (Phi3's gate_up): output r is the columns
    // after the outputs before it, sizes from their static result types.
    int64_t rank = shapeOf(v).size();
    int64_t axis = (int64_t)sp.getAxis();
    axis = axis < 0 ? axis + rank : axis;
    if (axis != rank - 1)
      return p;
    Proj inner = projection(sp.getInput());
    if (!inner || inner.start >= 0)
      return p;
    int64_t start = 0, r = cast<OpResult>(v).getResultNumber();
    for (int64_t i = 0; i <= r; ++i) {
      auto s = shapeOf(sp->getResult(i));
      if (s.empty() || s.back() == ShapedType::kDynamic)
        return p;
      if (i < r)
        start += s.back();
    }
    int64_t n = inner.width();
    int64_t end = start + shapeOf(v).back();
    if (n == ShapedType::kDynamic || end > n || start >= end)
      return p;
    inner.start = start, inner.end = end;
    return inner;
  }
  if (auto mm = def<onnx::MatMulOp>(v)) {
    if (!isConstant(mm.getB()) || shapeOf(mm.getB()).size() != 2)
      return expertProjection(v);
    p.op = mm, p.xv = mm.getA(), p.w = mm.getB();
    return p;
  }
  if (auto g = def<onnx::GemmOp>(v)) {
    if (!isConstant(g.getB()) || shapeOf(g.getB()).size() != 2 ||
        !isa<NoneType>(g.getC().getType()) || g.getTransA() != 0 ||
        g.getAlpha().convertToDouble() != 1.0)
      return p;
    p.op = g, p.xv = g.getA(), p.w = g.getB();
    p.transposed = g.getTransB() != 0;
    return p;
  }
  return expertProjection(v);
}

/// 1 + erf(p/√2) (Div by √2 or Mul by 1/√2): returns p.
Value erfTerm(Value v) {
  auto add = def<onnx::AddOp>(v);
  if (!add)
    return {};
  for (auto [one, e] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto erf = def<onnx::ErfOp>(e);
    if (!near(scalarConstant(one), 1.0) || !erf)
      continue;
    if (auto d = def<onnx::DivOp>(erf.getInput());
        d && near(scalarConstant(d.getB()), std::sqrt(2.0)))
      return d.getA();
    if (auto m = def<onnx::MulOp>(erf.getInput())) {
      if (near(scalarConstant(m.getB()), 1.0 / std::sqrt(2.0)))
        return m.getA();
      if (near(scalarConstant(m.getA()), 1.0 / std::sqrt(2.0)))
        return m.getB();
    }
  }
  return {};
}

/// p³ as Pow(p, 3) or a product of three p.
bool isCube(Value v, Value p) {
  if (auto pow = def<onnx::PowOp>(v))
    return pow.getX() == p && near(scalarConstant(pow.getY()), 3.0);
  SmallVector<Value> f;
  collectFactors(v, f);
  return f.size() == 3 && llvm::all_of(f, [&](Value x) { return x == p; });
}

/// 1 + tanh(√(2/π)·(p + 0.044715·p³)): returns p.
Value tanhTerm(Value v) {
  auto add = def<onnx::AddOp>(v);
  if (!add)
    return {};
  for (auto [one, t] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto tanh = def<onnx::TanhOp>(t);
    if (!near(scalarConstant(one), 1.0) || !tanh)
      continue;
    SmallVector<Value> f;
    collectFactors(tanh.getInput(), f);
    if (f.size() != 2)
      continue;
    for (auto [c, inner] : {std::pair(f[0], f[1]), std::pair(f[1], f[0])}) {
      auto sum = def<onnx::AddOp>(inner);
      if (!near(scalarConstant(c), std::sqrt(2.0 / M_PI), 1e-4) || !sum)
        continue;
      for (auto pc : {std::pair(sum.getA(), sum.getB()),
                      std::pair(sum.getB(), sum.getA())}) {
        Value p = pc.first, cube = pc.second;
        SmallVector<Value> g;
        collectFactors(cube, g);
        if (g.size() < 2)
          continue;
        // 0.044715 · p³, the constant anywhere in the product.
        SmallVector<Value> rest;
        bool haveC = false;
        for (Value x : g) {
          if (!haveC && near(scalarConstant(x), 0.044715, 1e-4))
            haveC = true;
          else
            rest.push_back(x);
        }
        if (!haveC)
          continue;
        bool cubeOk =
            (rest.size() == 1 && isCube(rest[0], p)) ||
            (rest.size() == 3 &&
             llvm::all_of(rest, [&](Value x) { return x == p; })) ||
            (rest.size() == 2 && ((rest[0] == p && isCube(rest[1], p)) ||
                                  (rest[1] == p && isCube(rest[0], p))));
        // p·p·p may appear as Mul(p, Mul(p, p)) with a shared square.
        if (!cubeOk && rest.size() == 2) {
          for (auto [a, b] :
               {std::pair(rest[0], rest[1]), std::pair(rest[1], rest[0])}) {
            auto sq = def<onnx::MulOp>(b);
            cubeOk |= a == p && sq && sq.getA() == p && sq.getB() == p;
          }
        }
        if (cubeOk)
          return p;
      }
    }
  }
  return {};
}

/// Replaces `op` (the product) by gated.glu act(x·W) ⊙ (x·V), when both
/// projections read one x and have one width.
LogicalResult replaceByGlu(PatternRewriter &rewriter, Operation *op, Proj &w,
                           Proj &v, gated::GluActivation act) {
  if (w.x() != v.x() || w.cols() != v.cols() || w.inner() != v.inner() ||
      w.expert != v.expert)
    return failure();
  SmallVector<Operation *> matched;
  collectMatched(op->getResult(0), {w.x(), w.w, v.w, w.expert ? w.expert : w.w},
                 matched);
  Location loc = fuseLocs(rewriter.getContext(), matched);
  if (w.expert) {
    // Routed experts: gated.expert_glu, the expert per row ([R]) or one
    // for all rows (a scalar). Its location names first the node that
    // read the expert index: the one an index out of range is an error of.
    loc = FusedLoc::get(rewriter.getContext(), {w.gather->getLoc(), loc});
    Value e = w.expert;
    if (shapeOf(e).size() == 2) {
      auto t = RankedTensorType::get({1}, rewriter.getI64Type());
      Value axes = onnx::ConstantOp::create(
          rewriter, loc, DenseIntElementsAttr::get(t, {int64_t(1)}));
      e = createOnnx(rewriter, loc, "Squeeze", {e, axes});
    }
    Value ww = w.weight(rewriter, loc), vw = v.weight(rewriter, loc);
    auto glu = gated::ExpertGluOp::create(
        rewriter, loc, op->getResult(0).getType(), w.x(), ww, vw, e, act);
    if (!verifiesQuietly(glu)) {
      // Leave the IR as found (or the greedy driver never converges).
      rewriter.eraseOp(glu);
      for (Value made : {vw, ww, e})
        if (Operation *d = made.getDefiningOp();
            d && made != w.expert && made != w.w && d->use_empty())
          rewriter.eraseOp(d);
      return failure();
    }
    rewriter.replaceOp(op, glu.getResult());
    return success();
  }
  auto glu = gated::GluOp::create(rewriter, loc, op->getResult(0).getType(),
                                  w.x(), w.weight(rewriter, loc),
                                  v.weight(rewriter, loc), act);
  if (!verifiesQuietly(glu)) {
    rewriter.eraseOp(glu);
    return failure();
  }
  rewriter.replaceOp(op, glu.getResult());
  return success();
}

struct GluPattern : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> factors;
    collectFactors(op.getResult(), factors);
    std::optional<gated::GluActivation> act;
    Proj w, v;

    auto others = [&](ArrayRef<Value> used) {
      SmallVector<Value> rest;
      SmallVector<Value> pool(used);
      for (Value f : factors) {
        auto it = llvm::find(pool, f);
        if (it != pool.end())
          pool.erase(it);
        else
          rest.push_back(f);
      }
      return rest;
    };

    for (Value f : factors) {
      // act(x·W) as one factor.
      Operation *d = f.getDefiningOp();
      Value inner;
      std::optional<gated::GluActivation> a;
      if (auto s = dyn_cast_or_null<onnx::SigmoidOp>(d))
        inner = s.getX(), a = gated::GluActivation::sigmoid;
      else if (auto r = dyn_cast_or_null<onnx::ReluOp>(d))
        inner = r.getX(), a = gated::GluActivation::relu;
      else if (auto g = dyn_cast_or_null<onnx::GeluOp>(d))
        inner = g.getX(), a = g.getApproximate() == "tanh"
                                  ? gated::GluActivation::gelu_tanh
                                  : gated::GluActivation::gelu;
      auto pw = projection(inner);
      if (!pw)
        continue;
      // SiLU: x·W is a factor too.
      if (a == gated::GluActivation::sigmoid &&
          llvm::is_contained(factors, inner)) {
        auto rest = others({f, inner});
        if (rest.size() == 1 && (v = projection(rest[0]))) {
          w = pw, act = gated::GluActivation::silu;
          break;
        }
      }
      auto rest = others({f});
      if (rest.size() == 1 && (v = projection(rest[0]))) {
        w = pw, act = a;
        break;
      }
    }
    if (!act) {
      // GELU decompositions: {p, 0.5, 1 + erf(p/√2) | 1 + tanh(...), x·V}.
      for (Value f : factors) {
        Value p = erfTerm(f);
        auto a = gated::GluActivation::gelu;
        if (!p)
          p = tanhTerm(f), a = gated::GluActivation::gelu_tanh;
        auto pw = projection(p);
        if (!pw || !llvm::is_contained(factors, p))
          continue;
        Value half;
        for (Value h : factors)
          if (near(scalarConstant(h), 0.5))
            half = h;
        if (!half)
          continue;
        auto rest = others({f, p, half});
        if (rest.size() == 1 && (v = projection(rest[0]))) {
          w = pw, act = a;
          break;
        }
      }
    }
    if (!act && factors.size() == 2 && projection(factors[0]) &&
        projection(factors[1])) {
      w = projection(factors[0]), v = projection(factors[1]);
      act = gated::GluActivation::identity;
    }
    if (!act)
      return failure();
    return replaceByGlu(rewriter, op, w, v, *act);
  }
};

/// ONNX SwiGLU-28 of two projections of one x, alpha = 1: A = x·W is the
/// gate, B = x·V the value.
struct SwiGluPattern : OpRewritePattern<onnx::SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnx::SwiGLUOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getAlpha().convertToDouble() != 1.0)
      return failure();
    Proj w = projection(op.getA()), v = projection(op.getB());
    if (!w || !v)
      return failure();
    return replaceByGlu(rewriter, op, w, v, gated::GluActivation::silu);
  }
};

struct RaiseGluPass : gated::impl::RaiseGluBase<RaiseGluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GluPattern, SwiGluPattern>(&getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
