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
#include "passes/common/Activations.h"
#include "passes/common/Broadcast.h"
#include "passes/common/TensorBuilder.h"
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
struct Builder : common::TensorBuilder {
  using TensorBuilder::TensorBuilder;

  /// m̂: the row max, or 0 for a row that is all -inf so far (so that
  /// exp(s − m̂) is 0, never NaN).
  Value safeMax(OpBuilder &nb, Value m) {
    Value isInf = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ, m,
                                        cst(nb, -INFINITY));
    return arith::SelectOp::create(nb, loc, isInf, cst(nb, 0.0), m);
  }

  /// A slice of a rank-4 [B, H, rows, cols] tensor at (bi, hi, r0, 0) of
  /// [1, 1, rows, cols], rank-reduced to [rows, cols]; of a [B, rows, H,
  /// cols] tensor (`bthd`, the layout the projections write) at (bi, r0,
  /// hi, 0) of [1, rows, 1, cols].
  Value slice2d(Value src, bool bthd, OpFoldResult bi, OpFoldResult hi,
                OpFoldResult r0, OpFoldResult rows, OpFoldResult cols) {
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

LogicalResult tile(gated::AttentionOp op, int64_t bqTile, int64_t bkTile,
                   bool keysOnce) {
  OpBuilder b(op);
  Builder t(b, op.getLoc());
  Location loc = op.getLoc();
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  auto rt = cast<RankedTensorType>(op.getType());
  // Operands and result in [B, T, H, D] order (`bshd`, set by
  // --absorb-head-layout) are read and written in place, strided.
  bool qT = op.isBshd("query"), kT = op.isBshd("key"), vT = op.isBshd("value"),
       gT = op.isBshd("gate"), outT = op.isBshd("result");
  int64_t hq = qt.getDimSize(qT ? 2 : 1), hkv = kt.getDimSize(kT ? 2 : 1);
  if (hq == kDyn || hkv == kDyn)
    return op.emitOpError() << "needs static head counts to tile (the KV "
                               "head of a query head is h / (Hq/Hkv))";
  int64_t rep = hq / hkv;
  double scale = op.getScale().convertToDouble();
  bool causal = (bool)op.getCausal();
  std::optional<int64_t> window = op.leftWindowSize();
  std::optional<double> softcap = op.softcapValue();
  Value mask = op.getMask(), gate = op.getGate();
  Type et = rt.getElementType();

  auto dimOf = [&](Value x, int64_t i) -> OpFoldResult {
    auto ty = cast<RankedTensorType>(x.getType());
    if (ty.getDimSize(i) != kDyn)
      return b.getIndexAttr(ty.getDimSize(i));
    return tensor::DimOp::create(b, loc, x, i).getResult();
  };
  Value qSrc = q, kSrc = k, vSrc = v, gSrc = gate;
  // The dim of `src` that holds logical dim i ([B, H, T, D]).
  auto phys = [](bool bthd, int64_t i) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    return bthd ? perm[i] : i;
  };
  // Logical dim i of an operand read from `src`.
  auto ldim = [&](Value src, bool bthd, int64_t i) {
    return dimOf(src, phys(bthd, i));
  };
  OpFoldResult T = ldim(qSrc, qT, 2), S = ldim(kSrc, kT, 2),
               D = ldim(qSrc, qT, 3), Dv = ldim(vSrc, vT, 3);
  auto mt = mask ? cast<RankedTensorType>(mask.getType()) : nullptr;
  // The batch: the result's, else the broadcast of every operand's (MatMul
  // broadcasts a key/value batch of 1, Add a mask's, Mul a gate's).
  OpFoldResult B = b.getIndexAttr(rt.getDimSize(0));
  if (rt.isDynamicDim(0)) {
    SmallVector<std::pair<Value, int64_t>> batch{
        {qSrc, 0}, {kSrc, 0}, {vSrc, 0}};
    if (gate)
      batch.push_back({gSrc, 0});
    if (mask && mt.getRank() == 4)
      batch.push_back({mask, 0});
    B = getValueOrCreateConstantIndexOp(b, loc,
                                        common::broadcastSize(b, loc, batch));
  }

  // How the kernel indexes each operand dim that broadcasts: as the loop
  // does (provably the same size), at 0 (statically 1), or at an index
  // chosen at run time (a dynamic dim that is 1 or the full size: checked
  // here, once, before the loop; a stride of 0 where it is 1).
  struct Read {
    enum Kind { Same, Zero, RunTime } kind = Same;
    Value isOne;
  };
  auto classify = [&](Value src, int64_t dim, OpFoldResult size) -> Read {
    auto ty = cast<RankedTensorType>(src.getType());
    std::optional<int64_t> cs = getConstantIntValue(size);
    if (ty.getDimSize(dim) == 1)
      return {cs && *cs == 1 ? Read::Same : Read::Zero, Value()};
    if (common::provablySameSize(src, dim, size))
      return {Read::Same, Value()};
    return {Read::RunTime, common::checkBroadcastDim(b, loc, src, dim, size)};
  };
  OpFoldResult Hq = b.getIndexAttr(hq), Hkv = b.getIndexAttr(hkv);
  Read qB = classify(qSrc, 0, B), kB = classify(kSrc, 0, B),
       vB = classify(vSrc, 0, B), vH = classify(vSrc, phys(vT, 1), Hkv);
  // Contraction dims do not broadcast (ONNX MatMul): checked equal.
  common::checkEqualDim(b, loc, kSrc, phys(kT, 3), D);
  common::checkEqualDim(b, loc, vSrc, phys(vT, 2), S);
  // The mask's dims against the scores' [B, Hq, T, S].
  SmallVector<Read> maskReads;
  OpFoldResult scoreDims[4] = {B, Hq, T, S};
  if (mask)
    for (int64_t i = 0, r = mt.getRank(); i < r; ++i)
      maskReads.push_back(classify(mask, i, scoreDims[4 - r + i]));
  // The gate's dims against the result's [B, Hq, T, Dv] (Dv is 1 for a
  // headwise gate).
  Read gReads[4];
  bool headwise = false;
  if (gate) {
    headwise = cast<RankedTensorType>(gate.getType()).getDimSize(3) == 1;
    OpFoldResult gDims[4] = {B, Hq, T, headwise ? b.getIndexAttr(1) : Dv};
    for (int64_t i = 0; i < 4; ++i)
      gReads[i] = classify(gSrc, phys(gT, i), gDims[i]);
    if (headwise)
      gReads[3] = {Read::Zero, Value()};
  }
  auto runTime = [](ArrayRef<Read> reads) {
    return llvm::any_of(reads,
                        [](const Read &r) { return r.kind == Read::RunTime; });
  };
  // A tile dim (rows or keys) that broadcasts at run time cannot be said
  // by an indexing map: the operand's tile is then read in the body
  // (tensor.extract at the index chosen at run time).
  bool maskInBody = mask && runTime(ArrayRef(maskReads).take_back(
                                std::min<size_t>(2, maskReads.size())));
  bool gateInBody = gate && runTime({gReads[2], gReads[3]});

  Value Tv = getValueOrCreateConstantIndexOp(b, loc, T);
  Value Sv = getValueOrCreateConstantIndexOp(b, loc, S);
  AffineExpr d0 = t.d(0), s0 = getAffineSymbolExpr(0, t.ctx);
  OpFoldResult nq =
      affine::makeComposedFoldedAffineApply(b, loc, d0.ceilDiv(bqTile), {T});

  // With `transpose-keys-once`, the keys transposed to [B, Hkv, D, S]
  // once, before the loop: every query block and head of a group then
  // reads its key tile [D, bk] in place.
  Value keysT;
  if (keysOnce) {
    auto ks = cast<RankedTensorType>(kSrc.getType());
    SmallVector<OpFoldResult> dims{dimOf(kSrc, 0), b.getIndexAttr(hkv),
                                   ldim(kSrc, kT, 3), S};
    keysT = t.generic(t.empty(dims, ks.getElementType()), {kSrc},
                      {kT ? t.map(4, {t.d(0), t.d(3), t.d(1), t.d(2)})
                          : t.map(4, {t.d(0), t.d(1), t.d(3), t.d(2)}),
                       t.map(4, {t.d(0), t.d(1), t.d(2), t.d(3)})},
                      {par, par, par, par},
                      [&](OpBuilder &, ValueRange a) { return a[0]; });
    // Its own location (the node's, tagged), so that reports tell it from
    // the attention's loop nest.
    keysT.getDefiningOp()->setLoc(FusedLoc::get(
        b.getContext(), {loc}, b.getStringAttr("keys transposed once")));
  }

  Value out = outT ? t.empty({B, T, b.getIndexAttr(hq), Dv}, et)
                   : t.empty({B, b.getIndexAttr(hq), T, Dv}, et);
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{B, b.getIndexAttr(hq), nq},
      ValueRange{out}, std::nullopt);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1),
        qb = body->getArgument(2), outArg = body->getArgument(3);
  Value c0 = t.index(0), c1 = t.index(1);
  // The index at which an operand dim is read for loop index `iv`.
  auto at = [&](const Read &r, Value iv) -> OpFoldResult {
    if (r.kind == Read::Same)
      return iv;
    if (r.kind == Read::Zero)
      return b.getIndexAttr(0);
    return arith::SelectOp::create(b, loc, r.isOne, c0, iv).getResult();
  };
  // The extent in an operand of a tile dim of `extent` elements.
  auto extentOf = [&](const Read &r, OpFoldResult extent) -> OpFoldResult {
    if (r.kind == Read::Same || isConstantIntValue(extent, 1))
      return extent;
    if (r.kind == Read::Zero)
      return b.getIndexAttr(1);
    return arith::SelectOp::create(
               b, loc, r.isOne, c1,
               getValueOrCreateConstantIndexOp(b, loc, extent))
        .getResult();
  };
  // In a body: the index of tile dim `d` of an operand read along it.
  auto bodyIndex = [&](OpBuilder &nb, const Read &r, unsigned d) -> Value {
    if (r.kind == Read::Zero)
      return arith::ConstantIndexOp::create(nb, loc, 0);
    Value i = linalg::IndexOp::create(nb, loc, d);
    if (r.kind == Read::Same)
      return i;
    return arith::SelectOp::create(
        nb, loc, r.isOne, arith::ConstantIndexOp::create(nb, loc, 0), i);
  };
  auto exprOf = [&](const Read &r, unsigned d) -> AffineExpr {
    return r.kind == Read::Zero ? getAffineConstantExpr(0, t.ctx) : t.d(d);
  };
  Value q0 = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(1, 0, d0 * bqTile), ValueRange{qb});
  Value bq = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(1, 1, {getAffineConstantExpr(bqTile, t.ctx), s0 - d0},
                     t.ctx),
      ValueRange{q0, Tv});
  Value kvh =
      rep == 1 ? hi : (Value)arith::DivUIOp::create(b, loc, hi, t.index(rep));
  OpFoldResult kvb = at(kB, bi), vb = at(vB, bi), vh = at(vH, kvh);
  Value qs = t.slice2d(qSrc, qT, at(qB, bi), hi, q0, bq, D);
  Value acc0 = t.fill(t.empty({bq, Dv}, t.f32), 0.0);
  Value m0 = t.fill(t.empty({bq}, t.f32), -INFINITY);
  Value l0 = t.fill(t.empty({bq}, t.f32), 0.0);
  if (Value sinks = op.getSinks()) {
    // The head's sink logit starts the row: m = sink, l = exp(sink - m) = 1;
    // it takes its share of the mass and adds nothing to acc.
    Value sink = t.ext(b, tensor::ExtractOp::create(b, loc, sinks, hi));
    m0 = linalg::FillOp::create(b, loc, ValueRange{sink},
                                ValueRange{t.empty({bq}, t.f32)})
             .getResult(0);
    l0 = t.fill(t.empty({bq}, t.f32), 1.0);
  }
  // Causal (top-left): the block's last query q0 + bq - 1 sees keys < q0+bq.
  Value kEnd = Sv;
  if (causal)
    kEnd = arith::MinUIOp::create(b, loc, Sv,
                                  arith::AddIOp::create(b, loc, q0, bq));

  // Sliding window: the block's first query q0 sees keys >= q0 - L; keys
  // before that are hidden from every query of the block.
  Value kStart = t.index(0);
  if (window) {
    Value lw = t.index(*window);
    Value after =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, q0, lw);
    kStart = arith::SelectOp::create(
        b, loc, after, arith::SubIOp::create(b, loc, q0, lw), t.index(0));
    kStart = arith::MinUIOp::create(b, loc, kStart, kEnd);
  }

  auto loop = scf::ForOp::create(
      b, loc, kStart, kEnd, t.index(bkTile), ValueRange{acc0, m0, l0},
      [&](OpBuilder &lb, Location, Value k0, ValueRange iter) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value acc = iter[0], m = iter[1], l = iter[2];
        Value bk = affine::AffineMinOp::create(
            b, loc,
            AffineMap::get(
                1, 1, {getAffineConstantExpr(bkTile, t.ctx), s0 - d0}, t.ctx),
            ValueRange{k0, kEnd});
        Value vs = t.slice2d(vSrc, vT, vb, vh, k0, bk, Dv);

        // s = Q Kᵀ, f32, with the key tile transposed to [D, bk] first so
        // that the keys are the contiguous, innermost (vectorized) loop.
        // The copy iterates over the key tile's own layout (keys outer,
        // head dim inner): its reads are contiguous rows of the projection
        // and its writes go to the small L1-resident tile (a transpose
        // iterates over its output, and read the keys with gathers).
        Value kt;
        if (keysT) {
          auto kty = cast<RankedTensorType>(keysT.getType());
          OpFoldResult one = b.getIndexAttr(1);
          kt = tensor::ExtractSliceOp::create(
              b, loc,
              RankedTensorType::get({kty.getDimSize(2), kDyn},
                                    kty.getElementType()),
              keysT, SmallVector<OpFoldResult>{kvb, kvh, b.getIndexAttr(0), k0},
              SmallVector<OpFoldResult>{one, one, ldim(kSrc, kT, 3), bk},
              SmallVector<OpFoldResult>(4, one));
        } else {
          Value ks = t.slice2d(kSrc, kT, kvb, kvh, k0, bk, D);
          kt = t.generic(
              t.empty({D, bk}, cast<ShapedType>(ks.getType()).getElementType()),
              {ks}, {t.map(2, {t.d(0), t.d(1)}), t.map(2, {t.d(1), t.d(0)})},
              {par, par}, [&](OpBuilder &, ValueRange a) { return a[0]; });
        }
        Value s = t.generic(
            t.fill(t.empty({bq, bk}, t.f32), 0.0), {qs, kt},
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
        Value maskTile;
        if (mask) {
          int64_t r = mt.getRank();
          SmallVector<OpFoldResult> offs, sizes, ones(r, b.getIndexAttr(1));
          SmallVector<AffineExpr> exprs;
          Value full[4] = {bi, hi, q0, k0};
          OpFoldResult extent[4] = {b.getIndexAttr(1), b.getIndexAttr(1), bq,
                                    bk};
          for (int64_t i = 0; i < r; ++i) {
            int64_t fd = 4 - r + i;
            const Read &rd = maskReads[i];
            offs.push_back(at(rd, full[fd]));
            sizes.push_back(extentOf(rd, extent[fd]));
            exprs.push_back(fd < 2 ? getAffineConstantExpr(0, t.ctx)
                                   : exprOf(rd, fd - 2));
          }
          maskTile =
              tensor::ExtractSliceOp::create(b, loc, mask, offs, sizes, ones);
          if (!maskInBody) {
            ins.push_back(maskTile);
            maps.push_back(t.map(2, exprs));
          }
        }
        // The mask's value at the body's (row, key), read in the body.
        auto maskInBodyAt = [&](OpBuilder &nb) -> Value {
          int64_t r = mt.getRank();
          SmallVector<Value> idx;
          for (int64_t i = 0; i < r; ++i) {
            int64_t fd = 4 - r + i;
            idx.push_back(
                fd < 2 ? arith::ConstantIndexOp::create(nb, loc, 0).getResult()
                       : bodyIndex(nb, maskReads[i], fd - 2));
          }
          return tensor::ExtractOp::create(nb, loc, maskTile, idx);
        };
        maps.push_back(t.map(2, {t.d(0), t.d(1)}));
        Value masked = t.generic(
            t.empty({bq, bk}, t.f32), ins, maps, {par, par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              Value x = arith::MulFOp::create(nb, loc, a[0], t.cst(nb, scale));
              if (softcap)
                x = arith::MulFOp::create(
                    nb, loc, t.cst(nb, *softcap),
                    math::TanhOp::create(nb, loc,
                                         arith::DivFOp::create(
                                             nb, loc, x, t.cst(nb, *softcap))));
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
              if (window) {
                // Hidden: kj < qi - L, as kj + L < qi (no wrap below 0).
                Value qi = arith::AddIOp::create(
                    nb, loc, q0, linalg::IndexOp::create(nb, loc, 0));
                Value kj = arith::AddIOp::create(
                    nb, loc, k0, linalg::IndexOp::create(nb, loc, 1));
                Value kl = arith::AddIOp::create(
                    nb, loc, kj,
                    arith::ConstantIndexOp::create(nb, loc, *window));
                Value past = arith::CmpIOp::create(
                    nb, loc, arith::CmpIPredicate::ult, kl, qi);
                x = arith::SelectOp::create(nb, loc, past, ninf, x);
              }
              if (mask) {
                Value mv = maskInBody ? maskInBodyAt(nb) : a[1];
                if (mv.getType().isInteger(1))
                  x = arith::SelectOp::create(nb, loc, mv, x, ninf);
                else
                  x = arith::AddFOp::create(nb, loc, x, t.ext(nb, mv));
              }
              return x;
            });

        AffineMap ij = t.map(2, {t.d(0), t.d(1)}), i2 = t.map(2, {t.d(0)}),
                  i1 = t.map(1, {t.d(0)});
        // The state is updated in place (each loop-carried tensor is the
        // destination of its update), so it bufferizes to one buffer.
        Value rowMax = t.generic(
            t.fill(t.empty({bq}, t.f32), -INFINITY), {masked}, {ij, i2},
            {par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
              return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
            });
        // alpha = exp(m − m̂') ≤ 1 rescales the old state; m' = max(m, rowmax).
        Value alpha = t.generic(
            t.empty({bq}, t.f32), {m, rowMax}, {i1, i1, i1}, {par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              Value mn = arith::MaximumFOp::create(nb, loc, a[0], a[1]);
              return math::ExpOp::create(
                  nb, loc,
                  arith::SubFOp::create(nb, loc, a[0], t.safeMax(nb, mn)));
            });
        Value mNew =
            t.generic(m, {rowMax}, {i1, i1}, {par},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::MaximumFOp::create(nb, loc, a[1], a[0]);
                      });
        // p = exp(s − m̂').
        Value p = t.generic(
            t.empty({bq, bk}, t.f32), {masked, mNew}, {ij, i2, ij}, {par, par},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              return math::ExpOp::create(
                  nb, loc,
                  arith::SubFOp::create(nb, loc, a[0], t.safeMax(nb, a[1])));
            });
        // l = l·alpha + rowsum p.
        Value lScaled =
            t.generic(l, {alpha}, {i1, i1}, {par},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::MulFOp::create(nb, loc, a[1], a[0]);
                      });
        // The row sum may be reassociated (fastmath reassoc): the CPU's
        // loop vectorizer then sums each row in vector lanes instead of
        // one scalar add after another.
        Value lNew =
            t.generic(lScaled, {p}, {ij, i2}, {par, red},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::AddFOp::create(
                            nb, loc, a[1], a[0], arith::FastMathFlags::reassoc);
                      });
        Value accScaled = t.generic(
            acc, {alpha}, {t.map(2, {t.d(0)}), t.map(2, {t.d(0), t.d(1)})},
            {par, par}, [&](OpBuilder &nb, ValueRange a) -> Value {
              return arith::MulFOp::create(nb, loc, a[1], a[0]);
            });
        // acc += p V.
        Value accNew = t.generic(
            accScaled, {p, vs},
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
  Value gateTile;
  if (gate) {
    // Rows at the tile's (or row 0, where the gate's rows broadcast); all
    // of the gate's own columns (1 or Dv).
    gateTile = t.slice2d(gSrc, gT, at(gReads[0], bi), at(gReads[1], hi),
                         at(gReads[2], q0), extentOf(gReads[2], bq),
                         ldim(gSrc, gT, 3));
    if (!gateInBody) {
      ins.push_back(gateTile);
      maps.push_back(t.map(
          2, {exprOf(gReads[2], 0), headwise ? getAffineConstantExpr(0, t.ctx)
                                             : exprOf(gReads[3], 1)}));
    }
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
  Value y = t.generic(
      outTile, ins, maps, {par, par},
      [&](OpBuilder &nb, ValueRange a) -> Value {
        // l = 0 only for a fully masked row: zeros. A NaN l (a NaN score)
        // gives a NaN row.
        Value none = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ,
                                           a[1], t.cst(nb, 0.0));
        Value r =
            arith::SelectOp::create(nb, loc, none, t.cst(nb, 0.0),
                                    arith::DivFOp::create(nb, loc, a[0], a[1]));
        if (gate) {
          Value gv = gateInBody ? (Value)tensor::ExtractOp::create(
                                      nb, loc, gateTile,
                                      ValueRange{bodyIndex(nb, gReads[2], 0),
                                                 bodyIndex(nb, gReads[3], 1)})
                                : a[2];
          Value g = common::gateActivation(nb, loc, *op.getGateActivation(),
                                           t.ext(nb, gv));
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
  // The kernel's result, cast to the type of the value it replaces where
  // that knows less (a head_dim that a dynamic Reshape hid from the op's
  // result type but not from its operands').
  auto castTo = [&](Value old) -> Value {
    Value r = forall.getResult(0);
    if (r.getType() == old.getType())
      return r;
    OpBuilder cb(forall->getBlock(), std::next(forall->getIterator()));
    return tensor::CastOp::create(cb, loc, old.getType(), r);
  };
  op.getResult().replaceAllUsesWith(castTo(op.getResult()));
  op.erase();
  return success();
}

struct TileAttentionPass
    : gatec::tiling::impl::TileAttentionBase<TileAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gated::AttentionOp> ops;
    getOperation().walk([&](gated::AttentionOp op) { ops.push_back(op); });
    for (gated::AttentionOp op : ops)
      if (failed(tile(op, qTile, kTile, transposeKeysOnce)))
        return signalPassFailure();
  }
};
} // namespace
