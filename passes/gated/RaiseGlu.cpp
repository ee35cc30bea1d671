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
  int64_t start = -1, end = -1, step = 1;
  // A routed expert's projection: w is the experts' constant [E, N, K]
  // (nn.Linear's layout per expert; [E, K, N] when `inOut`, GPT-OSS's),
  // `expert` the expert index, a scalar (the eager loop) or [R, 1]
  // (batched_mm's GatherND indices), `bias` the experts' constant [E, N]
  // read by the same index (or null).
  Value expert, bias;
  // A dense projection's constant bias [N] (nn.Linear with bias: an Add
  // after the MatMul, or Gemm's C), or null.
  Value linBias;
  bool inOut = false;
  Operation *gather = nullptr; // the Gather/GatherND that reads `expert`
  explicit operator bool() const { return op; }
  Value x() const { return xv; }
  int64_t width() const {
    if (expert)
      return shapeOf(w)[inOut ? 2 : 1];
    return shapeOf(w)[transposed ? 0 : 1];
  }
  int64_t inner() const {
    if (expert)
      return shapeOf(w)[inOut ? 1 : 2];
    return shapeOf(w)[transposed ? 1 : 0];
  }
  int64_t cols() const {
    return start >= 0 ? (end - start + step - 1) / step : width();
  }
  static Value i64(PatternRewriter &rewriter, Location loc, int64_t v) {
    auto t = RankedTensorType::get({1}, rewriter.getI64Type());
    return onnx::ConstantOp::create(rewriter, loc,
                                    DenseIntElementsAttr::get(t, {v}));
  }
  /// Columns [start, end) by `step` of a constant along `axis`.
  Value columns(PatternRewriter &rewriter, Location loc, Value m,
                int64_t axis) const {
    if (start < 0)
      return m;
    return createOnnx(rewriter, loc, "Slice",
                      {m, i64(rewriter, loc, start), i64(rewriter, loc, end),
                       i64(rewriter, loc, axis), i64(rewriter, loc, step)});
  }
  /// The [K, N] weight, transposed and sliced at compile time as needed;
  /// for an expert's projection the experts' [E, N', K].
  Value weight(PatternRewriter &rewriter, Location loc) const {
    if (expert) {
      Value m = columns(rewriter, loc, w, inOut ? 2 : 1);
      return inOut ? transpose(rewriter, loc, m, {0, 2, 1}) : m;
    }
    Value m = transposed ? transpose(rewriter, loc, w, {1, 0}) : w;
    return columns(rewriter, loc, m, 1);
  }
  /// A dense projection's bias columns [N'], or null.
  Value linBiasColumns(PatternRewriter &rewriter, Location loc) const {
    if (!linBias)
      return Value();
    // The slice (folded to a constant) keeps the bias initializer's
    // location, so the weight check still finds it.
    Location bl = FusedLoc::get(rewriter.getContext(), {linBias.getLoc(), loc});
    return columns(rewriter, bl, linBias, 0);
  }
  /// An expert's bias columns [E, N'], or null.
  Value biasColumns(PatternRewriter &rewriter, Location loc) const {
    return bias ? columns(rewriter, loc, bias, 1) : Value();
  }
};

/// Whether `axes` is the constant [a] with a = `axis` or a - rank = `axis`
/// (one axis, either sign).
bool isOneAxis(Value axes, int64_t axis, int64_t rank) {
  auto a = onnx::getConstantInts(axes);
  return a && a->size() == 1 && ((*a)[0] == axis || (*a)[0] + rank == axis);
}

/// v without Squeeze(Unsqueeze(z, [a]), [a]) pairs (no-ops the dynamo
/// exporter leaves around batched matmuls).
Value stripUnsqueezeSqueeze(Value v) {
  while (auto sq = def<onnx::SqueezeOp>(v)) {
    auto un = def<onnx::UnsqueezeOp>(sq.getData());
    auto a = un ? onnx::getConstantInts(un.getAxes()) : std::nullopt;
    auto b = onnx::getConstantInts(sq.getAxes());
    int64_t r = shapeOf(sq.getData()).size();
    if (!a || !b || a->size() != 1 || b->size() != 1 ||
        ((*a)[0] + r) % r != ((*b)[0] + r) % r)
      return v;
    v = un.getData();
  }
  return v;
}

/// GatherND(C, idx) of a constant C of rank `rank` by idx [R, 1]
/// (batch_dims 0): the op, or null.
onnx::GatherNDOp expertGatherND(Value v, int64_t rank) {
  auto g = def<onnx::GatherNDOp>(v);
  if (!g || g.getBatchDims() != 0 || !isConstant(g.getData()) ||
      (int64_t)shapeOf(g.getData()).size() != rank ||
      shapeOf(g.getIndices()).size() != 2 || shapeOf(g.getIndices())[1] != 1)
    return {};
  return g;
}

/// Gather(C, e, axis 0) of a constant C of rank `rank` by a scalar e: the
/// op, or null.
onnx::GatherOp expertGather(Value v, int64_t rank) {
  auto g = def<onnx::GatherOp>(v);
  if (!g || g.getAxis() != 0 || !isConstant(g.getData()) ||
      (int64_t)shapeOf(g.getData()).size() != rank ||
      shapeOf(g.getIndices()).size() != 0)
    return {};
  return g;
}

/// A routed expert's projection, as the exporters write transformers'
/// experts (W the experts' constant [E, N, K]):
///   the eager loop: MatMul(x, Transpose(Gather(W, e, axis 0))), e a scalar
///     (GPT-OSS: MatMul(x, Gather(W, e)) with W [E, K, N], + Gather(B, e));
///   batched_mm: Squeeze(MatMul(GatherND(W, idx), Unsqueeze(x, -1)), -1),
///     idx [R, 1] (batch_dims 0): row r with expert idx[r];
///   GPT-OSS (W [E, K, N], bias B [E, N]):
///     Squeeze(MatMul(Unsqueeze(x, 1), GatherND(W, idx)), 1) + GatherND(B,
///     idx).
Proj expertProjection(Value v) {
  Proj p;
  v = stripUnsqueezeSqueeze(v);
  // The experts' bias, read by the same index: Gather (eager) or GatherND.
  Operation *bias = nullptr;
  if (auto add = def<onnx::AddOp>(v)) {
    for (auto [b, rest] : {std::pair(add.getB(), add.getA()),
                           std::pair(add.getA(), add.getB())}) {
      if (auto g = expertGatherND(b, 2))
        bias = g;
      else if (auto g = expertGather(b, 2))
        bias = g;
      if (bias) {
        v = stripUnsqueezeSqueeze(rest);
        break;
      }
    }
    if (!bias)
      return p;
  }
  if (auto em = def<onnx::MatMulOp>(v)) {
    // The eager loop: x · W[e]ᵀ (Transpose of W [E, N, K]) or x · W[e]
    // (W [E, K, N], GPT-OSS).
    Value b = em.getB();
    auto tr = def<onnx::TransposeOp>(b);
    if (tr && permutationOf(tr) != SmallVector<int64_t>{1, 0})
      return p;
    auto g = expertGather(tr ? tr.getData() : b, 3);
    if (!g || shapeOf(em.getA()).size() != 2)
      return p;
    p.op = em, p.xv = em.getA(), p.w = g.getData(), p.gather = g;
    p.expert = g.getIndices(), p.inOut = !tr;
  } else {
    auto sq = def<onnx::SqueezeOp>(v);
    auto mm = sq ? def<onnx::MatMulOp>(sq.getData()) : onnx::MatMulOp();
    if (!mm)
      return p;
    if (isOneAxis(sq.getAxes(), 2, 3)) { // W rows · x column
      auto g = expertGatherND(mm.getA(), 3);
      auto un = def<onnx::UnsqueezeOp>(mm.getB());
      if (!g || !un || shapeOf(un.getData()).size() != 2 ||
          !isOneAxis(un.getAxes(), 2, 3))
        return p;
      p.op = mm, p.xv = un.getData(), p.w = g.getData(), p.gather = g;
      p.expert = g.getIndices();
    } else if (isOneAxis(sq.getAxes(), 1, 3)) { // x row · W [K, N]
      auto g = expertGatherND(mm.getB(), 3);
      auto un = def<onnx::UnsqueezeOp>(mm.getA());
      if (!g || !un || shapeOf(un.getData()).size() != 2 ||
          !isOneAxis(un.getAxes(), 1, 3))
        return p;
      p.op = mm, p.xv = un.getData(), p.w = g.getData(), p.gather = g;
      p.expert = g.getIndices(), p.inOut = true;
    } else {
      return p;
    }
  }
  if (bias) {
    if (bias->getOperand(1) != p.expert ||
        shapeOf(bias->getOperand(0))[1] != p.width())
      return Proj();
    p.bias = bias->getOperand(0);
  }
  return p;
}

Proj projection(Value v) {
  Proj p;
  if (auto sl = def<onnx::SliceOp>(v)) {
    auto starts = onnx::getConstantInts(sl.getStarts());
    auto ends = onnx::getConstantInts(sl.getEnds());
    auto axes = onnx::getConstantInts(sl.getAxes());
    int64_t rank = shapeOf(v).size();
    int64_t step = 1;
    if (!isa<NoneType>(sl.getSteps().getType())) {
      auto st = onnx::getConstantInts(sl.getSteps());
      if (!st || st->size() != 1 || (*st)[0] < 1)
        return p;
      step = (*st)[0];
    }
    if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 ||
        axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
      return p;
    Proj inner = projection(sl.getData());
    // Strided columns (GPT-OSS's interleaved gate and up) only of an
    // expert's projection.
    if (!inner || inner.start >= 0 || (step != 1 && !inner.expert))
      return p;
    int64_t n = inner.width();
    int64_t a = (*starts)[0], b = std::min((*ends)[0], n);
    if (a < 0 || a >= b || n == ShapedType::kDynamic)
      return p;
    inner.start = a, inner.end = b, inner.step = step;
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
  if (auto add = def<onnx::AddOp>(v)) {
    // x·W + b with a constant b [N] (nn.Linear with a bias).
    for (auto [m, c] : {std::pair(add.getA(), add.getB()),
                        std::pair(add.getB(), add.getA())}) {
      if (!isConstant(c) || shapeOf(c).size() != 1 ||
          add.getType() != m.getType())
        continue;
      Proj inner = projection(m);
      if (!inner || inner.expert || inner.start >= 0 || inner.linBias ||
          inner.width() == ShapedType::kDynamic ||
          shapeOf(c)[0] != inner.width())
        continue;
      inner.linBias = c;
      return inner;
    }
    // Else an expert's projection with its bias (GPT-OSS), below.
  }
  if (auto mm = def<onnx::MatMulOp>(v)) {
    if (!isConstant(mm.getB()) || shapeOf(mm.getB()).size() != 2)
      return expertProjection(v);
    p.op = mm, p.xv = mm.getA(), p.w = mm.getB();
    return p;
  }
  if (auto g = def<onnx::GemmOp>(v)) {
    if (!isConstant(g.getB()) || shapeOf(g.getB()).size() != 2 ||
        g.getTransA() != 0 || g.getAlpha().convertToDouble() != 1.0)
      return p;
    p.op = g, p.xv = g.getA(), p.w = g.getB();
    p.transposed = g.getTransB() != 0;
    // C: a constant bias [N] with beta 1 (nn.Linear's bias).
    if (!isa<NoneType>(g.getC().getType())) {
      if (!isConstant(g.getC()) || g.getBeta().convertToDouble() != 1.0 ||
          shapeOf(g.getC()).size() != 1 || p.width() == ShapedType::kDynamic ||
          shapeOf(g.getC())[0] != p.width())
        return Proj();
      p.linBias = g.getC();
    }
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
/// GPT-OSS's variant of the experts' SwiGLU (see gated.expert_glu).
struct ClampedSwiGlu {
  double alpha = 1.0;
  std::optional<double> limit;
  double upOffset = 0.0;
};

LogicalResult replaceByGlu(PatternRewriter &rewriter, Operation *op, Proj &w,
                           Proj &v, gated::GluActivation act,
                           const ClampedSwiGlu &clamp = {}) {
  if (w.x() != v.x() || w.cols() != v.cols() || w.inner() != v.inner() ||
      w.expert != v.expert || w.inOut != v.inOut || !w.bias != !v.bias)
    return failure();
  SmallVector<Operation *> matched;
  SmallVector<Value> stops = {w.x(), w.w, v.w};
  for (Value s : {w.expert, w.bias, v.bias, w.linBias, v.linBias})
    if (s)
      stops.push_back(s);
  collectMatched(op->getResult(0), stops, matched);
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
    Value wb = w.biasColumns(rewriter, loc), vb = v.biasColumns(rewriter, loc);
    auto glu = gated::ExpertGluOp::create(
        rewriter, loc, op->getResult(0).getType(), w.x(), ww, vw, e, wb, vb,
        gated::GluActivationAttr::get(rewriter.getContext(), act),
        rewriter.getF32FloatAttr(clamp.alpha),
        clamp.limit ? rewriter.getF32FloatAttr(*clamp.limit) : FloatAttr(),
        rewriter.getF32FloatAttr(clamp.upOffset));
    if (!verifiesQuietly(glu)) {
      // Leave the IR as found (or the greedy driver never converges).
      rewriter.eraseOp(glu);
      for (Value made : {vb, wb, vw, ww, e})
        if (Operation *d = made ? made.getDefiningOp() : nullptr;
            d && made != w.expert && made != w.w && d->use_empty())
          rewriter.eraseOp(d);
      return failure();
    }
    rewriter.replaceOp(op, glu.getResult());
    return success();
  }
  if (w.bias || v.bias || w.step != 1 || v.step != 1)
    return failure();
  Value wb = w.linBiasColumns(rewriter, loc),
        vb = v.linBiasColumns(rewriter, loc);
  auto glu = gated::GluOp::create(rewriter, loc, op->getResult(0).getType(),
                                  w.x(), w.weight(rewriter, loc),
                                  v.weight(rewriter, loc), wb, vb, act);
  if (!verifiesQuietly(glu)) {
    rewriter.eraseOp(glu);
    for (Value made : {vb, wb})
      if (Operation *d = made ? made.getDefiningOp() : nullptr;
          d && made != w.linBias && made != v.linBias && d->use_empty())
        rewriter.eraseOp(d);
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
      // act(x·W)·(x·V); x·W·σ(x·W) alone is SiLU, no gate (Mamba2's
      // y·silu(z) multiplies the SiLU inside by y).
      auto rest = others({f});
      if (rest.size() == 1 && rest[0] != inner && (v = projection(rest[0]))) {
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
    // Bilinear: two projections (p·p, the square inside a GELU's cube, is
    // no gate).
    if (!act && factors.size() == 2 && factors[0] != factors[1] &&
        projection(factors[0]) && projection(factors[1])) {
      w = projection(factors[0]), v = projection(factors[1]);
      act = gated::GluActivation::identity;
    }
    if (!act)
      return failure();
    return replaceByGlu(rewriter, op, w, v, *act);
  }
};

/// v = Clip(z, min, max) with constant (or absent) bounds: z and the
/// bounds (nullopt where absent); else v itself, unbounded.
Value peelClip(Value v, std::optional<double> &lo, std::optional<double> &hi) {
  lo.reset(), hi.reset();
  auto c = def<onnx::ClipOp>(v);
  if (!c)
    return v;
  bool noMin = isa<NoneType>(c.getMin().getType());
  bool noMax = isa<NoneType>(c.getMax().getType());
  if (!noMin && !(lo = scalarConstant(c.getMin())))
    return {};
  if (!noMax && !(hi = scalarConstant(c.getMax())))
    return {};
  return c.getInput();
}

/// GPT-OSS's experts' SwiGLU, as transformers writes it:
///   a = min(gate, L); b = clamp(up, -L, L)
///   (b + 1) · a·σ(α·a)          (α = 1.702, L = 7)
/// over an expert's projections (gate and up interleaved: columns 0::2 and
/// 1::2, with the experts' biases) to gated.expert_glu silu with alpha,
/// limit and up_offset. The clamps are both present or both absent and
/// must agree (one L).
struct ClampedExpertSwiGlu : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      auto add = def<onnx::AddOp>(op->getOperand(side));
      auto g = def<onnx::MulOp>(op->getOperand(1 - side));
      if (!add || !g)
        continue;
      // (b + c)
      std::optional<double> offset = scalarConstant(add.getB());
      Value bc = add.getA();
      if (!offset)
        offset = scalarConstant(add.getA()), bc = add.getB();
      if (!offset)
        continue;
      // a · σ(α·a)
      Value ac;
      std::optional<double> alpha;
      for (int gs = 0; gs < 2 && !alpha; ++gs) {
        auto sig = def<onnx::SigmoidOp>(g->getOperand(1 - gs));
        Value a = g->getOperand(gs);
        if (!sig)
          continue;
        if (auto m = def<onnx::MulOp>(sig.getX())) {
          if (m.getA() == a)
            alpha = scalarConstant(m.getB());
          else if (m.getB() == a)
            alpha = scalarConstant(m.getA());
        } else if (sig.getX() == a) {
          alpha = 1.0;
        }
        if (alpha)
          ac = a;
      }
      if (!alpha)
        continue;
      std::optional<double> alo, ahi, blo, bhi;
      Value a = peelClip(ac, alo, ahi), b = peelClip(bc, blo, bhi);
      if (!a || !b || alo)
        continue;
      std::optional<double> limit = ahi;
      if (limit ? (!blo || !bhi || *bhi != *limit || *blo != -*limit)
                : (blo || bhi))
        continue;
      Proj w = projection(a), v = projection(b);
      if (!w || !v || !w.expert)
        continue;
      ClampedSwiGlu clamp{*alpha, limit, *offset};
      if (succeeded(replaceByGlu(rewriter, op, w, v, gated::GluActivation::silu,
                                 clamp)))
        return success();
    }
    return failure();
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
    patterns.add<GluPattern, SwiGluPattern, ClampedExpertSwiGlu>(&getContext());
    // Not converging within the driver's iterations is no error (as in
    // upstream canonicalize): every rewrite left valid IR. Failing here
    // failed the compile without a message.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
