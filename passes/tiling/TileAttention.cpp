//===- TileAttention.cpp - --tile-attention -------------------------------===//
//
// gated.attention as a flash-attention loop nest on tensors: an scf.forall
// over (batch, head, query block), an scf.for over key blocks carrying the
// online-softmax state, and the G1 gate applied in the epilogue.
//
//===----------------------------------------------------------------------===//
#include "passes/tiling/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "passes/conversion/GateMath.h"
#include <cmath>

namespace gatec::tiling {
#define GEN_PASS_DEF_TILEATTENTION
#include "passes/tiling/Passes.h.inc"
} // namespace gatec::tiling

using namespace mlir;
using namespace gatec;

namespace {
using utils::IteratorType;
constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr IteratorType par = IteratorType::parallel,
                       red = IteratorType::reduction;

/// Builds the loop nest of one attention op.
struct Builder {
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  Type f32;

  Builder(OpBuilder &b, Location loc)
      : b(b), loc(loc), ctx(b.getContext()), f32(b.getF32Type()) {}

  AffineExpr d(unsigned i) { return getAffineDimExpr(i, ctx); }
  AffineMap map(unsigned n, ArrayRef<AffineExpr> e) {
    return AffineMap::get(n, 0, e, ctx);
  }
  Value cst(OpBuilder &nb, double v) {
    return arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value ext(OpBuilder &nb, Value v) {
    return v.getType() == f32 ? v : arith::ExtFOp::create(nb, loc, f32, v);
  }
  /// m̂: the row max, or 0 for a row that is all -inf so far (so that
  /// exp(s − m̂) is 0, never NaN).
  Value safeMax(OpBuilder &nb, Value m) {
    Value isInf = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ, m,
                                        cst(nb, -INFINITY));
    return arith::SelectOp::create(nb, loc, isInf, cst(nb, 0.0), m);
  }

  /// tensor.empty of the given sizes, then filled with v if v is given.
  Value tensor(ArrayRef<OpFoldResult> sizes, Type e,
               std::optional<double> v = std::nullopt) {
    Value t = tensor::EmptyOp::create(b, loc, sizes, e);
    if (!v)
      return t;
    return linalg::FillOp::create(b, loc, ValueRange{cst(b, *v)}, ValueRange{t})
        .getResult(0);
  }

  Value generic(ValueRange ins, Value out, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> its,
                function_ref<Value(OpBuilder &, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{out.getType()}, ins, ValueRange{out}, maps,
               its,
               [&](OpBuilder &nb, Location, ValueRange a) {
                 linalg::YieldOp::create(nb, loc, ValueRange{body(nb, a)});
               })
        .getResult(0);
  }

  /// A slice of a rank-4 [B, H, rows, cols] tensor at (bi, hi, r0, 0) of
  /// [1, 1, rows, cols], rank-reduced to [rows, cols]; of a [B, rows, H,
  /// cols] tensor (`bthd`, the layout the projections write) at (bi, r0,
  /// hi, 0) of [1, rows, 1, cols].
  Value slice2d(Value src, bool bthd, Value bi, Value hi, Value r0,
                OpFoldResult rows, OpFoldResult cols) {
    auto t = cast<RankedTensorType>(src.getType());
    int64_t c = t.getDimSize(3);
    auto type = RankedTensorType::get({kDyn, c}, t.getElementType());
    OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
    SmallVector<OpFoldResult> offs{bi, hi, r0, zero},
        sizes{one, one, rows, cols};
    if (bthd) {
      std::swap(offs[1], offs[2]);
      std::swap(sizes[1], sizes[2]);
    }
    SmallVector<OpFoldResult> ones(4, one);
    return tensor::ExtractSliceOp::create(b, loc, type, src, offs, sizes, ones);
  }
};

/// [B, T, H, D] -> [B, H, T, D], the head transpose of an attention layer.
bool isHeadTranspose(Operation *op) {
  auto t = dyn_cast_or_null<linalg::TransposeOp>(op);
  return t && t.hasPureTensorSemantics() &&
         t.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// The tensor the kernel reads for an operand: the source of a head
/// transpose (read in place, strided: no transposed copy), else itself.
Value readSource(Value x, bool &bthd) {
  bthd = isHeadTranspose(x.getDefiningOp());
  return bthd ? x.getDefiningOp<linalg::TransposeOp>().getInput() : x;
}

LogicalResult tile(gated::AttentionOp op, int64_t bqTile, int64_t bkTile) {
  OpBuilder b(op);
  Builder t(b, op.getLoc());
  Location loc = op.getLoc();
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  auto rt = cast<RankedTensorType>(op.getType());
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (hq == kDyn || hkv == kDyn)
    return op.emitOpError() << "needs static head counts to tile (the KV "
                               "head of a query head is h / (Hq/Hkv))";
  int64_t rep = hq / hkv;
  double scale = op.getScale().convertToDouble();
  bool causal = (bool)op.getCausal();
  Value mask = op.getMask(), gate = op.getGate();
  Type et = rt.getElementType();

  auto dimOf = [&](Value x, int64_t i) -> OpFoldResult {
    auto ty = cast<RankedTensorType>(x.getType());
    if (ty.getDimSize(i) != kDyn)
      return b.getIndexAttr(ty.getDimSize(i));
    return tensor::DimOp::create(b, loc, x, i).getResult();
  };
  bool qT, kT, vT, gT = false;
  Value qSrc = readSource(q, qT), kSrc = readSource(k, kT),
        vSrc = readSource(v, vT);
  Value gSrc = gate ? readSource(gate, gT) : Value();
  // Logical dim i ([B, H, T, D]) of an operand read from `src`.
  auto ldim = [&](Value src, bool bthd, int64_t i) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    return dimOf(src, bthd ? perm[i] : i);
  };
  OpFoldResult B = ldim(qSrc, qT, 0), T = ldim(qSrc, qT, 2),
               S = ldim(kSrc, kT, 2), D = ldim(qSrc, qT, 3),
               Dv = ldim(vSrc, vT, 3);
  // A result transposed back to [B, T, H, Dv] is written in that layout.
  linalg::TransposeOp outT;
  if (op->hasOneUse() && isHeadTranspose(*op->user_begin()))
    outT = cast<linalg::TransposeOp>(*op->user_begin());
  Value Tv = getValueOrCreateConstantIndexOp(b, loc, T);
  Value Sv = getValueOrCreateConstantIndexOp(b, loc, S);
  AffineExpr d0 = t.d(0), s0 = getAffineSymbolExpr(0, t.ctx);
  OpFoldResult nq =
      affine::makeComposedFoldedAffineApply(b, loc, d0.ceilDiv(bqTile), {T});

  Value out = outT ? t.tensor({B, T, b.getIndexAttr(hq), Dv}, et)
                   : t.tensor({B, b.getIndexAttr(hq), T, Dv}, et);
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{B, b.getIndexAttr(hq), nq},
      ValueRange{out}, std::nullopt);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1),
        qb = body->getArgument(2), outArg = body->getArgument(3);
  Value q0 = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(1, 0, d0 * bqTile), ValueRange{qb});
  Value bq = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(1, 1, {getAffineConstantExpr(bqTile, t.ctx), s0 - d0},
                     t.ctx),
      ValueRange{q0, Tv});
  Value kvh =
      rep == 1 ? hi : (Value)arith::DivUIOp::create(b, loc, hi, t.index(rep));
  Value qs = t.slice2d(qSrc, qT, bi, hi, q0, bq, D);
  Value acc0 = t.tensor({bq, Dv}, t.f32, 0.0);
  Value m0 = t.tensor({bq}, t.f32, -INFINITY);
  Value l0 = t.tensor({bq}, t.f32, 0.0);
  // Causal (top-left): the block's last query q0 + bq - 1 sees keys < q0+bq.
  Value kEnd = Sv;
  if (causal)
    kEnd = arith::MinUIOp::create(b, loc, Sv,
                                  arith::AddIOp::create(b, loc, q0, bq));

  auto loop = scf::ForOp::create(
      b, loc, t.index(0), kEnd, t.index(bkTile), ValueRange{acc0, m0, l0},
      [&](OpBuilder &lb, Location, Value k0, ValueRange iter) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value acc = iter[0], m = iter[1], l = iter[2];
        Value bk = affine::AffineMinOp::create(
            b, loc,
            AffineMap::get(
                1, 1, {getAffineConstantExpr(bkTile, t.ctx), s0 - d0}, t.ctx),
            ValueRange{k0, kEnd});
        Value ks = t.slice2d(kSrc, kT, bi, kvh, k0, bk, D);
        Value vs = t.slice2d(vSrc, vT, bi, kvh, k0, bk, Dv);

        // s = Q Kᵀ, f32, with the key tile transposed to [D, bk] first so
        // that the keys are the contiguous, innermost (vectorized) loop.
        Value kt =
            linalg::TransposeOp::create(
                b, loc, ks,
                t.tensor({D, bk},
                         cast<ShapedType>(ks.getType()).getElementType()),
                ArrayRef<int64_t>{1, 0})
                ->getResult(0);
        Value s = t.generic(
            {qs, kt}, t.tensor({bq, bk}, t.f32, 0.0),
            {t.map(3, {t.d(0), t.d(2)}), t.map(3, {t.d(2), t.d(1)}),
             t.map(3, {t.d(0), t.d(1)})},
            {par, par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
              Value p = arith::MulFOp::create(nb, loc, t.ext(nb, a[0]),
                                              t.ext(nb, a[1]));
              return arith::AddFOp::create(nb, loc, a[2], p);
            });

        // Scale, causal mask, attention mask.
        SmallVector<Value> ins{s};
        SmallVector<AffineMap> maps{t.map(2, {t.d(0), t.d(1)})};
        if (mask) {
          auto mt = cast<RankedTensorType>(mask.getType());
          int64_t r = mt.getRank();
          SmallVector<OpFoldResult> offs, sizes, ones(r, b.getIndexAttr(1));
          SmallVector<AffineExpr> exprs;
          Value full[4] = {bi, hi, q0, k0};
          Value extent[4] = {nullptr, nullptr, bq, bk};
          for (int64_t i = 0; i < r; ++i) {
            int64_t fd = 4 - r + i;
            if (mt.getDimSize(i) == 1) {
              offs.push_back(b.getIndexAttr(0));
              sizes.push_back(b.getIndexAttr(1));
              exprs.push_back(getAffineConstantExpr(0, t.ctx));
              continue;
            }
            offs.push_back(full[fd]);
            sizes.push_back(fd < 2 ? b.getIndexAttr(1)
                                   : (OpFoldResult)extent[fd]);
            exprs.push_back(fd < 2 ? getAffineConstantExpr(0, t.ctx)
                                   : t.d(fd - 2));
          }
          ins.push_back(
              tensor::ExtractSliceOp::create(b, loc, mask, offs, sizes, ones));
          maps.push_back(t.map(2, exprs));
        }
        maps.push_back(t.map(2, {t.d(0), t.d(1)}));
        Value masked = t.generic(
            ins, t.tensor({bq, bk}, t.f32), maps, {par, par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              Value x = arith::MulFOp::create(nb, loc, a[0], t.cst(nb, scale));
              Value ninf = t.cst(nb, -INFINITY);
              if (causal) {
                Value qi = arith::AddIOp::create(
                    nb, loc, q0, linalg::IndexOp::create(nb, loc, 0));
                Value kj = arith::AddIOp::create(
                    nb, loc, k0, linalg::IndexOp::create(nb, loc, 1));
                Value future = arith::CmpIOp::create(
                    nb, loc, arith::CmpIPredicate::ugt, kj, qi);
                x = arith::SelectOp::create(nb, loc, future, ninf, x);
              }
              if (a.size() > 2) {
                if (a[1].getType().isInteger(1))
                  x = arith::SelectOp::create(nb, loc, a[1], x, ninf);
                else
                  x = arith::AddFOp::create(nb, loc, x, t.ext(nb, a[1]));
              }
              return x;
            });

        AffineMap ij = t.map(2, {t.d(0), t.d(1)}), i2 = t.map(2, {t.d(0)}),
                  i1 = t.map(1, {t.d(0)});
        // The state is updated in place (each loop-carried tensor is the
        // destination of its update), so it bufferizes to one buffer.
        Value rowMax =
            t.generic({masked}, t.tensor({bq}, t.f32, -INFINITY), {ij, i2},
                      {par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
                      });
        // alpha = exp(m − m̂') ≤ 1 rescales the old state; m' = max(m, rowmax).
        Value alpha = t.generic(
            {m, rowMax}, t.tensor({bq}, t.f32), {i1, i1, i1}, {par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              Value mn = arith::MaximumFOp::create(nb, loc, a[0], a[1]);
              return math::ExpOp::create(
                  nb, loc,
                  arith::SubFOp::create(nb, loc, a[0], t.safeMax(nb, mn)));
            });
        Value mNew =
            t.generic({rowMax}, m, {i1, i1}, {par},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::MaximumFOp::create(nb, loc, a[1], a[0]);
                      });
        // p = exp(s − m̂').
        Value p = t.generic(
            {masked, mNew}, t.tensor({bq, bk}, t.f32), {ij, i2, ij}, {par, par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              return math::ExpOp::create(
                  nb, loc,
                  arith::SubFOp::create(nb, loc, a[0], t.safeMax(nb, a[1])));
            });
        // l = l·alpha + rowsum p.
        Value lScaled =
            t.generic({alpha}, l, {i1, i1}, {par},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::MulFOp::create(nb, loc, a[1], a[0]);
                      });
        Value lNew =
            t.generic({p}, lScaled, {ij, i2}, {par, red},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::AddFOp::create(nb, loc, a[1], a[0]);
                      });
        Value accScaled = t.generic(
            {alpha}, acc, {t.map(2, {t.d(0)}), t.map(2, {t.d(0), t.d(1)})},
            {par, par}, [&](OpBuilder &nb, ValueRange a) -> Value {
              return arith::MulFOp::create(nb, loc, a[1], a[0]);
            });
        // acc += p V.
        Value accNew = t.generic(
            {p, vs}, accScaled,
            {t.map(3, {t.d(0), t.d(2)}), t.map(3, {t.d(2), t.d(1)}),
             t.map(3, {t.d(0), t.d(1)})},
            {par, par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
              Value pv = arith::MulFOp::create(nb, loc, a[0], t.ext(nb, a[1]));
              return arith::AddFOp::create(nb, loc, a[2], pv);
            });
        scf::YieldOp::create(b, loc, ValueRange{accNew, mNew, lNew});
      });

  // Epilogue: normalise, gate, truncate; one write of the output tile.
  Value acc = loop.getResult(0), l = loop.getResult(2);
  SmallVector<Value> ins{acc, l};
  SmallVector<AffineMap> maps{t.map(2, {t.d(0), t.d(1)}), t.map(2, {t.d(0)})};
  if (gate) {
    auto gt = cast<RankedTensorType>(gate.getType());
    bool headwise = gt.getDimSize(3) == 1;
    ins.push_back(t.slice2d(gSrc, gT, bi, hi, q0, bq, ldim(gSrc, gT, 3)));
    maps.push_back(t.map(
        2, {t.d(0), headwise ? getAffineConstantExpr(0, t.ctx) : t.d(1)}));
  }
  maps.push_back(t.map(2, {t.d(0), t.d(1)}));
  // The epilogue writes into its tile of the output (in place).
  SmallVector<OpFoldResult> offs{bi, hi, q0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(1), bq, Dv};
  if (outT) {
    std::swap(offs[1], offs[2]);
    std::swap(sizes[1], sizes[2]);
  }
  SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
  Value outTile = tensor::ExtractSliceOp::create(
      b, loc,
      RankedTensorType::get(
          {kDyn, cast<RankedTensorType>(outArg.getType()).getDimSize(3)}, et),
      outArg, offs, sizes, ones);
  Value y =
      t.generic(ins, outTile, maps, {par, par},
                [&](OpBuilder &nb, ValueRange a) -> Value {
                  Value pos = arith::CmpFOp::create(
                      nb, loc, arith::CmpFPredicate::OGT, a[1], t.cst(nb, 0.0));
                  Value r = arith::SelectOp::create(
                      nb, loc, pos, arith::DivFOp::create(nb, loc, a[0], a[1]),
                      t.cst(nb, 0.0));
                  if (gate) {
                    Value g = conversion::gateActivation(
                        nb, loc, *op.getGateActivation(), t.ext(nb, a[2]));
                    r = *op.getGateMode() == gated::GateMode::multiply
                            ? (Value)arith::MulFOp::create(nb, loc, r, g)
                            : (Value)arith::AddFOp::create(nb, loc, r, g);
                  }
                  return r.getType() == et
                             ? r
                             : (Value)arith::TruncFOp::create(nb, loc, et, r);
                });
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, y, outArg, offs, sizes, ones);
  if (outT) {
    outT->getResult(0).replaceAllUsesWith(forall.getResult(0));
    outT->erase();
  } else {
    op.getResult().replaceAllUsesWith(forall.getResult(0));
  }
  SmallVector<Value> operands(op->getOperands());
  op.erase();
  // Head transposes read in place by the kernel and by nothing else.
  for (Value x : operands)
    if (Operation *d = x.getDefiningOp())
      if (isHeadTranspose(d) && d->use_empty())
        d->erase();
  return success();
}

struct TileAttentionPass
    : gatec::tiling::impl::TileAttentionBase<TileAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gated::AttentionOp> ops;
    getOperation().walk([&](gated::AttentionOp op) { ops.push_back(op); });
    for (gated::AttentionOp op : ops)
      if (failed(tile(op, qTile, kTile)))
        return signalPassFailure();
  }
};
} // namespace
