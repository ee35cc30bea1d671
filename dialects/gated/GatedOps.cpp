//===- GatedOps.cpp - verifiers of the gated ops --------------------------===//
#include "dialects/gated/GatedDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include <cmath>

using namespace mlir;
using namespace gatec::gated;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Sizes a and b may be equal (either dynamic, or the same).
bool mayEqual(int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; }

std::string dim(int64_t d) { return d == kDyn ? "?" : std::to_string(d); }

/// "[d0, d1, d2, d3]" of logical [B, H, T, D] dims, in the order a tensor
/// holds them (H and T swapped when it is `bshd`).
std::string dims4(ArrayRef<int64_t> logical, bool bshd) {
  SmallVector<int64_t> d(logical);
  if (bshd)
    std::swap(d[1], d[2]);
  return "[" + dim(d[0]) + ", " + dim(d[1]) + ", " + dim(d[2]) + ", " +
         dim(d[3]) + "]";
}

/// `from` broadcasts (numpy rules) to `to`, where both are ranked.
bool broadcastsTo(ShapedType from, ArrayRef<int64_t> to) {
  if (!from.hasRank())
    return true;
  if (from.getRank() > (int64_t)to.size())
    return false;
  int64_t off = to.size() - from.getRank();
  for (int64_t i = 0; i < from.getRank(); ++i) {
    int64_t f = from.getDimSize(i), t = to[off + i];
    if (f != 1 && !mayEqual(f, t))
      return false;
  }
  return true;
}

/// Whether `bshd` (the ops' layout attribute) names `name`.
bool namesBshd(std::optional<ArrayAttr> bshd, StringRef name) {
  return bshd && llvm::any_of(*bshd, [&](Attribute a) {
           return cast<StringAttr>(a).getValue() == name;
         });
}

/// `bshd` names only operands and results in `allowed`, each once.
LogicalResult verifyBshd(Operation *op, std::optional<ArrayAttr> bshd,
                         ArrayRef<StringRef> allowed) {
  if (!bshd)
    return success();
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute a : *bshd) {
    StringRef n = cast<StringAttr>(a).getValue();
    if (!llvm::is_contained(allowed, n))
      return op->emitOpError() << "bshd names '" << n
                               << "', which is not a sequence operand or "
                                  "result of this op (one in [B, H, T, D] "
                                  "order that is present)";
    if (!seen.insert(n).second)
      return op->emitOpError() << "bshd names '" << n << "' twice";
  }
  return success();
}

/// The dims of a rank-4 type in the op's [B, H, T, D] order: its own, or
/// with the middle two swapped when it is held in [B, T, H, D] order.
SmallVector<int64_t> logicalDims(ShapedType t, bool bshd) {
  SmallVector<int64_t> d(t.getShape());
  if (bshd && d.size() == 4)
    std::swap(d[1], d[2]);
  return d;
}

LogicalResult sameElementType(Operation *op, ValueRange values) {
  Type e = getElementTypeOrSelf(op->getResult(0).getType());
  for (Value v : values)
    if (v && getElementTypeOrSelf(v.getType()) != e)
      return op->emitOpError()
             << "operand element type " << getElementTypeOrSelf(v.getType())
             << " differs from the result's " << e;
  return success();
}
} // namespace

std::optional<int64_t> AttentionOp::leftWindowSize() {
  if (auto w = getLeftWindow())
    return (int64_t)*w;
  return std::nullopt;
}

std::optional<double> AttentionOp::softcapValue() {
  if (auto c = getSoftcap())
    return c->convertToDouble();
  return std::nullopt;
}

LogicalResult AttentionOp::verify() {
  auto q = cast<ShapedType>(getQuery().getType());
  auto k = cast<ShapedType>(getKey().getType());
  auto v = cast<ShapedType>(getValue().getType());
  auto r = cast<ShapedType>(getResult().getType());
  if (failed(sameElementType(*this,
                             {getQuery(), getKey(), getValue(), getGate()})))
    return failure();
  if (Value sk = getSinks()) {
    auto st = dyn_cast<RankedTensorType>(sk.getType());
    int64_t hq = q.hasRank() && q.getRank() == 4
                     ? q.getDimSize(isBshd("query") ? 2 : 1)
                     : ShapedType::kDynamic;
    if (st && (st.getRank() != 1 || !mayEqual(st.getDimSize(0), hq)))
      return emitOpError() << "sinks must be [query heads]";
  }
  if (getSoftcap() && !(getSoftcap()->convertToDouble() > 0))
    return emitOpError() << "softcap must be > 0";
  if (getLeftWindow() && (int64_t)*getLeftWindow() < 0)
    return emitOpError() << "left_window must be >= 0 (got "
                         << (int64_t)*getLeftWindow() << ")";
  if (!q.hasRank() || !k.hasRank() || !v.hasRank() || !r.hasRank())
    return success();
  SmallVector<StringRef> attnNames{"query", "key", "value", "result"};
  if (getGate())
    attnNames.push_back("gate");
  if (failed(verifyBshd(*this, getBshd(), attnNames)))
    return failure();
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4 ||
      r.getRank() != 4)
    return emitOpError() << "query, key, value and result must be 4-D "
                            "[batch, heads, sequence, head_dim]";
  SmallVector<int64_t> qd = logicalDims(q, isBshd("query")),
                       kd = logicalDims(k, isBshd("key")),
                       vd = logicalDims(v, isBshd("value")),
                       rd = logicalDims(r, isBshd("result"));
  int64_t b = qd[0], hq = qd[1], t = qd[2], d = qd[3], hkv = kd[1], s = kd[2],
          dv = vd[3];
  if (!mayEqual(b, kd[0]) || !mayEqual(b, vd[0]))
    return emitOpError() << "batch sizes differ";
  if (!mayEqual(d, kd[3]))
    return emitOpError() << "query head_dim " << dim(d)
                         << " differs from key head_dim " << dim(kd[3]);
  if (!mayEqual(hkv, vd[1]) || !mayEqual(s, vd[2]))
    return emitOpError() << "key and value differ in heads or sequence";
  if (hq != kDyn && hkv != kDyn && (hkv == 0 || hq % hkv))
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";
  SmallVector<int64_t> out{b, hq, t, dv};
  for (int i = 0; i < 4; ++i)
    if (!mayEqual(out[i], rd[i]))
      return emitOpError() << "result must be " << dims4(out, isBshd("result"));
  if (getMask()) {
    auto m = cast<ShapedType>(getMask().getType());
    Type me = m.getElementType();
    if (!me.isInteger(1) && !isa<FloatType>(me))
      return emitOpError() << "mask must be boolean (i1) or floating-point";
    if (!broadcastsTo(m, {b, hq, t, s}))
      return emitOpError() << "mask does not broadcast to the scores ["
                           << dim(b) << ", " << dim(hq) << ", " << dim(t)
                           << ", " << dim(s) << "]";
  }
  bool gateAttrs = getGateActivation() || getGateGranularity() || getGateMode();
  if (!getGate()) {
    if (gateAttrs)
      return emitOpError() << "gate attributes without a gate operand";
    return success();
  }
  if (!getGateActivation() || !getGateGranularity() || !getGateMode())
    return emitOpError() << "a gate needs gate_activation, gate_granularity "
                            "and gate_mode";
  auto g = cast<ShapedType>(getGate().getType());
  if (!g.hasRank())
    return success();
  bool headwise = *getGateGranularity() == GateGranularity::headwise;
  SmallVector<int64_t> want{b, hq, t, headwise ? 1 : dv};
  bool ok = g.getRank() == 4;
  SmallVector<int64_t> gd = logicalDims(g, isBshd("gate"));
  for (int i = 0; ok && i < 4; ++i)
    ok = mayEqual(want[i], gd[i]);
  if (!ok)
    return emitOpError() << (headwise ? "headwise" : "elementwise")
                         << " gate must be " << dims4(want, isBshd("gate"))
                         << ", got " << g;
  return success();
}

LogicalResult GateOp::verify() {
  if (failed(sameElementType(*this, {getX(), getGate()})))
    return failure();
  auto x = cast<ShapedType>(getX().getType());
  if (x.hasRank() &&
      !broadcastsTo(cast<ShapedType>(getGate().getType()), x.getShape()))
    return emitOpError() << "gate " << getGate().getType()
                         << " does not broadcast to the gated value " << x;
  return success();
}

LogicalResult GluOp::verify() {
  if (failed(sameElementType(*this, {getX(), getW(), getV()})))
    return failure();
  auto x = cast<ShapedType>(getX().getType());
  auto w = cast<ShapedType>(getW().getType());
  auto v = cast<ShapedType>(getV().getType());
  auto r = cast<ShapedType>(getResult().getType());
  if (!x.hasRank() || !w.hasRank() || !v.hasRank() || !r.hasRank())
    return success();
  if (w.getRank() != 2 || v.getRank() != 2)
    return emitOpError() << "w and v must be 2-D [D, F]";
  if (w.getShape() != v.getShape() &&
      !(mayEqual(w.getDimSize(0), v.getDimSize(0)) &&
        mayEqual(w.getDimSize(1), v.getDimSize(1))))
    return emitOpError() << "w " << w << " and v " << v << " differ";
  if (x.getRank() < 1 ||
      !mayEqual(x.getDimSize(x.getRank() - 1), w.getDimSize(0)))
    return emitOpError() << "x's last dimension must be w's first ("
                         << dim(w.getDimSize(0)) << ")";
  if (r.getRank() != x.getRank() ||
      !mayEqual(r.getDimSize(r.getRank() - 1), w.getDimSize(1)))
    return emitOpError() << "result must be x's shape with the last "
                            "dimension "
                         << dim(w.getDimSize(1));
  for (int64_t i = 0; i + 1 < x.getRank(); ++i)
    if (!mayEqual(x.getDimSize(i), r.getDimSize(i)))
      return emitOpError() << "result must be x's shape with the last "
                              "dimension "
                           << dim(w.getDimSize(1));
  for (Value bias : {getWBias(), getVBias()}) {
    if (!bias)
      continue;
    if (failed(sameElementType(*this, {getX(), bias})))
      return failure();
    auto bt = cast<ShapedType>(bias.getType());
    if (bt.hasRank() &&
        (bt.getRank() != 1 || !mayEqual(bt.getDimSize(0), w.getDimSize(1))))
      return emitOpError() << "biases must be [F] = [" << dim(w.getDimSize(1))
                           << "], got " << bt;
  }
  return success();
}

LogicalResult ExpertGluOp::verify() {
  SmallVector<Value> floats = {getX(), getW(), getV()};
  for (Value bias : {getWBias(), getVBias()})
    if (bias)
      floats.push_back(bias);
  if (failed(sameElementType(*this, floats)))
    return failure();
  auto x = dyn_cast<RankedTensorType>(getX().getType());
  auto w = dyn_cast<RankedTensorType>(getW().getType());
  auto v = dyn_cast<RankedTensorType>(getV().getType());
  auto e = dyn_cast<RankedTensorType>(getExpert().getType());
  auto r = dyn_cast<RankedTensorType>(getResult().getType());
  if (!x || !w || !v || !e || !r)
    return success();
  if (x.getRank() != 2 || w.getRank() != 3 || v.getRank() != 3 ||
      r.getRank() != 2)
    return emitOpError() << "x and the result must be 2-D [R, D] / [R, F], "
                            "w and v 3-D [E, F, D]";
  for (int64_t i = 0; i < 3; ++i)
    if (!mayEqual(w.getDimSize(i), v.getDimSize(i)))
      return emitOpError() << "w " << w << " and v " << v << " differ";
  if (!mayEqual(x.getDimSize(1), w.getDimSize(2)))
    return emitOpError() << "x's last dimension must be w's last ("
                         << dim(w.getDimSize(2)) << ")";
  if (!mayEqual(r.getDimSize(0), x.getDimSize(0)) ||
      !mayEqual(r.getDimSize(1), w.getDimSize(1)))
    return emitOpError() << "result must be [R, F] = [" << dim(x.getDimSize(0))
                         << ", " << dim(w.getDimSize(1)) << "]";
  if (e.getRank() > 1 ||
      (e.getRank() == 1 && !mayEqual(e.getDimSize(0), x.getDimSize(0))))
    return emitOpError() << "expert must be a scalar or one index per row of x";
  if (!getWBias() != !getVBias())
    return emitOpError() << "needs both biases or neither";
  for (Value bias : {getWBias(), getVBias()}) {
    auto bt = bias ? dyn_cast<RankedTensorType>(bias.getType()) : nullptr;
    if (bt &&
        (bt.getRank() != 2 || !mayEqual(bt.getDimSize(0), w.getDimSize(0)) ||
         !mayEqual(bt.getDimSize(1), w.getDimSize(1))))
      return emitOpError() << "biases must be [E, F] = ["
                           << dim(w.getDimSize(0)) << ", "
                           << dim(w.getDimSize(1)) << "]";
  }
  if (getActivation() != GluActivation::silu &&
      getAlpha().convertToFloat() != 1.0f)
    return emitOpError() << "alpha scales only silu's sigmoid";
  if (getLimit() && !(getLimit()->convertToFloat() >= 0.0f))
    return emitOpError() << "limit must be >= 0";
  return success();
}

LogicalResult RouterOp::verify() {
  int64_t k = getK();
  if (k < 1)
    return emitOpError() << "k must be at least 1, got " << k;
  if (getOrder() == RouterOrder::topk_then_softmax &&
      getNormalisation() == RouterNormalisation::renormalise)
    return emitOpError() << "renormalise after topk_then_softmax: its "
                            "weights already sum to 1 (use none)";
  auto l = cast<ShapedType>(getLogits().getType());
  auto w = cast<ShapedType>(getWeights().getType());
  auto i = cast<ShapedType>(getIndices().getType());
  Type we = w.getElementType();
  if (we != l.getElementType() && !we.isF32())
    return emitOpError() << "weights must be f32 or the logits' element type "
                         << l.getElementType() << ", got " << we;
  if (!l.hasRank() || !w.hasRank() || !i.hasRank())
    return success();
  int64_t r = l.getRank();
  if (r < 1)
    return emitOpError() << "logits must be [..., E] (rank 1 or more), got "
                         << l;
  int64_t e = l.getDimSize(r - 1);
  if (e != kDyn && k > e)
    return emitOpError() << "k = " << k << " exceeds the " << e
                         << " experts of the logits";
  SmallVector<int64_t> want(l.getShape());
  want.back() = k;
  std::string shape = "[";
  for (int64_t d = 0; d < r; ++d)
    shape += (d ? ", " : "") + dim(want[d]);
  shape += "]";
  for (auto [name, t] : {std::pair<StringRef, ShapedType>("weights", w),
                         std::pair<StringRef, ShapedType>("indices", i)}) {
    bool ok = t.getRank() == r;
    for (int64_t d = 0; ok && d < r; ++d)
      ok = mayEqual(t.getDimSize(d), want[d]);
    if (!ok)
      return emitOpError() << name << " must be " << shape
                           << " (the logits' shape with k last), got " << t;
  }
  return success();
}

LogicalResult ResidualOp::verify() {
  if (failed(sameElementType(*this, {getX(), getY(), getGate()})))
    return failure();
  auto x = cast<ShapedType>(getX().getType());
  auto y = cast<ShapedType>(getY().getType());
  if (x.hasRank() && y.hasRank() &&
      failed(verifyCompatibleShape(x.getShape(), y.getShape())))
    return emitOpError() << "x " << x << " and y " << y << " differ in shape";
  ResidualKind kind = getKind();
  if (kind == ResidualKind::add) {
    if (getGate())
      return emitOpError() << "'add' takes no gate";
    return success();
  }
  if (!getGate())
    return emitOpError() << "'" << stringifyResidualKind(kind)
                         << "' needs a gate operand";
  auto g = cast<ShapedType>(getGate().getType());
  if (!g.hasRank() || !x.hasRank())
    return success();
  if (kind == ResidualKind::tanh_scalar || kind == ResidualKind::rezero) {
    if (g.getNumElements() != 1 || !g.hasStaticShape())
      return emitOpError() << "'" << stringifyResidualKind(kind)
                           << "' gate must be one scalar, got " << g;
    return success();
  }
  if (kind == ResidualKind::layerscale) {
    if (g.getRank() != 1 ||
        !mayEqual(g.getDimSize(0), x.getDimSize(x.getRank() - 1)))
      return emitOpError() << "'layerscale' gate must be a ["
                           << dim(x.getDimSize(x.getRank() - 1))
                           << "] vector, got " << g;
    return success();
  }
  if (!broadcastsTo(g, x.getShape()))
    return emitOpError() << "gate " << g << " does not broadcast to " << x;
  return success();
}

static LogicalResult verifyNorm(Operation *op, Value x, Value weight,
                                Value bias, float epsilon) {
  if (failed(sameElementType(op, {x, weight, bias})))
    return failure();
  if (!(epsilon >= 0.0f))
    return op->emitOpError() << "epsilon must be >= 0";
  auto xt = cast<ShapedType>(x.getType());
  for (Value p : {weight, bias}) {
    if (!p)
      continue;
    auto pt = cast<ShapedType>(p.getType());
    if (xt.hasRank() && pt.hasRank() &&
        (pt.getRank() != 1 || xt.getRank() < 1 ||
         !mayEqual(pt.getDimSize(0), xt.getDimSize(xt.getRank() - 1))))
      return op->emitOpError() << "weight and bias must be [D] with D = x's "
                                  "last dimension, got "
                               << pt;
  }
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyNorm(*this, getX(), getWeight(), {},
                        getEpsilon().convertToFloat())))
    return failure();
  if ((bool)getGate() != (bool)getGateActivation())
    return emitOpError() << "a gate needs its gate_activation and a "
                            "gate_activation its gate";
  if (getGateFirst() && !getGate())
    return emitOpError() << "gate_first needs a gate";
  if (!getGate())
    return success();
  if (failed(sameElementType(*this, {getX(), getGate()})))
    return failure();
  auto xt = cast<ShapedType>(getX().getType());
  auto gt = cast<ShapedType>(getGate().getType());
  if (xt.hasRank() && gt.hasRank()) {
    bool same = xt.getRank() == gt.getRank();
    for (int64_t i = 0; same && i < xt.getRank(); ++i)
      same = mayEqual(xt.getDimSize(i), gt.getDimSize(i));
    if (!same)
      return emitOpError() << "gate must have x's shape " << xt << ", got "
                           << gt;
  }
  return success();
}

LogicalResult ShortConvOp::verify() {
  if (failed(sameElementType(*this, {getX(), getWeight(), getBias()})))
    return failure();
  auto xt = dyn_cast<RankedTensorType>(getX().getType());
  auto wt = dyn_cast<RankedTensorType>(getWeight().getType());
  if (!xt || !wt)
    return success();
  if (xt.getRank() != 3)
    return emitOpError() << "x, b, c must be [N, C, T], got " << xt;
  int64_t ch = xt.getDimSize(1);
  if (wt.getRank() != 3 || !mayEqual(wt.getDimSize(0), ch) ||
      wt.getDimSize(1) != 1 || wt.isDynamicDim(2) || wt.getDimSize(2) < 1)
    return emitOpError() << "weight must be [C, 1, K] with C = " << ch
                         << " and a static K >= 1, got " << wt;
  if (getBias()) {
    auto bt = dyn_cast<RankedTensorType>(getBias().getType());
    if (bt && (bt.getRank() != 1 || !mayEqual(bt.getDimSize(0), ch)))
      return emitOpError() << "bias must be [C], got " << bt;
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getX(), getWeight(), getBias(),
                    getEpsilon().convertToFloat());
}

LogicalResult LinearAttentionOp::verify() {
  if (failed(sameElementType(
          *this, {getQuery(), getKey(), getValue(), getDecay(), getBeta()})))
    return failure();
  Type se = getElementTypeOrSelf(getFinalState().getType());
  if (getInitialState() &&
      getElementTypeOrSelf(getInitialState().getType()) != se)
    return emitOpError() << "initial_state and final_state differ in "
                            "element type";
  if (!getInitialState() && se != getElementTypeOrSelf(getQuery().getType()))
    return emitOpError() << "without an initial state, the final state has "
                            "the query's element type";
  if (failed(verifyNormEpilogue()))
    return failure();
  if (getChunkSize() <= 0)
    return emitOpError() << "chunk_size must be positive, got "
                         << getChunkSize();
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite";
  LinearAttentionRule rule = getUpdateRule();
  bool gatedRule = rule == LinearAttentionRule::gated ||
                   rule == LinearAttentionRule::gated_delta;
  bool deltaRule = rule == LinearAttentionRule::delta ||
                   rule == LinearAttentionRule::gated_delta;
  StringRef name = stringifyLinearAttentionRule(rule);
  if (gatedRule != (bool)getDecay())
    return emitOpError() << "update rule '" << name << "' "
                         << (gatedRule ? "needs" : "takes no")
                         << " decay operand";
  if (deltaRule != (bool)getBeta())
    return emitOpError() << "update rule '" << name << "' "
                         << (deltaRule ? "needs" : "takes no")
                         << " beta operand";
  // The sequence operands, states and results (not the epilogue's).
  SmallVector<ShapedType> all;
  for (Value v : {getQuery(), getKey(), getValue(), getDecay(), getBeta(),
                  getInitialState(), getOutput(), getFinalState()})
    if (v)
      all.push_back(cast<ShapedType>(v.getType()));
  for (ShapedType t : all)
    if (!t.hasRank())
      return success();
  SmallVector<StringRef> laNames{"query", "key", "value", "output"};
  if (getDecay())
    laNames.push_back("decay");
  if (getBeta())
    laNames.push_back("beta");
  if (failed(verifyBshd(*this, getBshd(), laNames)))
    return failure();
  {
    SmallVector<StringRef> ins{"query", "key", "value"};
    if (getDecay())
      ins.push_back("decay");
    if (getBeta())
      ins.push_back("beta");
    bool first = isBshd(ins.front());
    if (llvm::any_of(ins, [&](StringRef n) { return isBshd(n) != first; }))
      return emitOpError() << "bshd names all of query, key, value, decay "
                              "and beta, or none";
  }
  for (ShapedType t : all)
    if (t.getRank() != 4)
      return emitOpError() << "operands and results must be 4-D (query, "
                              "key, value: [batch, heads, sequence, "
                              "head_dim]; states: [batch, heads, Dk, Dv])";
  auto dimsOf = [&](Value val, StringRef what) {
    return logicalDims(cast<ShapedType>(val.getType()), isBshd(what));
  };
  SmallVector<int64_t> qd = dimsOf(getQuery(), "query"),
                       kd = dimsOf(getKey(), "key"),
                       vd = dimsOf(getValue(), "value");
  int64_t b = qd[0], hq = qd[1], t = qd[2], dk = qd[3], hkv = kd[1], dv = vd[3];
  auto expect = [&](Value val, StringRef what,
                    ArrayRef<int64_t> want) -> LogicalResult {
    auto ty = cast<ShapedType>(val.getType());
    SmallVector<int64_t> have = dimsOf(val, what);
    for (int i = 0; i < 4; ++i)
      if (!mayEqual(want[i], have[i]))
        return emitOpError() << what << " must be " << dims4(want, isBshd(what))
                             << ", got " << ty;
    return success();
  };
  if (failed(expect(getKey(), "key", {b, hkv, t, dk})) ||
      failed(expect(getValue(), "value", {b, hkv, t, dv})))
    return failure();
  if (hq != kDyn && hkv != kDyn && (hkv == 0 || hq % hkv))
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";
  if (failed(expect(getOutput(), "output", {b, hq, t, dv})) ||
      failed(expect(getFinalState(), "final_state", {b, hkv, dk, dv})))
    return failure();
  if (getInitialState() &&
      failed(expect(getInitialState(), "initial_state", {b, hkv, dk, dv})))
    return failure();
  if (getDecay()) {
    int64_t last = cast<ShapedType>(getDecay().getType()).getDimSize(3);
    if (last != 1 && failed(expect(getDecay(), "decay", {b, hkv, t, dk})))
      return failure();
    if (failed(expect(getDecay(), "decay", {b, hkv, t, last})))
      return failure();
  }
  if (getBeta()) {
    int64_t h = dimsOf(getBeta(), "beta")[1] == 1 ? 1 : hkv;
    if (failed(expect(getBeta(), "beta", {b, h, t, 1})))
      return failure();
  }
  return success();
}

/// The gated RMSNorm epilogue: weight [Dv] with its epsilon, and a gate
/// of the output's rows ([..., Dv]) with its activation.
LogicalResult LinearAttentionOp::verifyNormEpilogue() {
  if ((bool)getNormWeight() != (bool)getNormEpsilon())
    return emitOpError() << "norm_weight and norm_epsilon go together";
  if ((bool)getNormGate() != (bool)getNormGateActivation())
    return emitOpError() << "norm_gate and norm_gate_activation go together";
  if (getNormGate() && !getNormWeight())
    return emitOpError() << "norm_gate needs norm_weight (the gate is on the "
                            "normalised rows)";
  if (getNormUnitOffset() && !getNormWeight())
    return emitOpError() << "norm_unit_offset needs norm_weight";
  if (!getNormWeight())
    return success();
  if (!(getNormEpsilon()->convertToFloat() >= 0.0f))
    return emitOpError() << "norm_epsilon must be >= 0";
  auto vt = dyn_cast<RankedTensorType>(getValue().getType());
  int64_t dv = vt && vt.getRank() == 4 ? vt.getDimSize(3) : kDyn;
  auto wt = dyn_cast<RankedTensorType>(getNormWeight().getType());
  if (wt && (wt.getRank() != 1 || !mayEqual(wt.getDimSize(0), dv)))
    return emitOpError() << "norm_weight must be [Dv], got " << wt;
  if (!getNormGate())
    return success();
  auto gt = dyn_cast<RankedTensorType>(getNormGate().getType());
  if (gt &&
      (gt.getRank() < 2 || !mayEqual(gt.getDimSize(gt.getRank() - 1), dv)))
    return emitOpError() << "norm_gate must be [..., Dv] (a row per output "
                            "row), got "
                         << gt;
  auto ot = dyn_cast<RankedTensorType>(getOutput().getType());
  if (gt && ot && gt.hasStaticShape() && ot.hasStaticShape() &&
      gt.getNumElements() != ot.getNumElements())
    return emitOpError() << "norm_gate " << gt
                         << " must hold as many elements as the output " << ot;
  if (getElementTypeOrSelf(getNormGate().getType()) !=
      getElementTypeOrSelf(getOutput().getType()))
    return emitOpError() << "norm_gate must have the output's element type";
  return success();
}

bool AttentionOp::isBshd(StringRef name) { return namesBshd(getBshd(), name); }

bool LinearAttentionOp::isBshd(StringRef name) {
  return namesBshd(getBshd(), name);
}

namespace {
/// The physical dim of logical dim i ([B, H, T, D]) of a tensor held in
/// [B, T, H, D] order when `bshd`.
int64_t physicalDim(bool bshd, int64_t i) {
  return bshd && (i == 1 || i == 2) ? 3 - i : i;
}
} // namespace

std::pair<Value, int64_t> AttentionOp::getDimSource(unsigned, int64_t dim) {
  // result [B, Hq, T, Dv]: B, Hq and T are the query's, Dv the value's.
  int64_t l = physicalDim(isBshd("result"), dim);
  if (l == 3)
    return {getValue(), 3};
  if (l == 0) {
    // B broadcasts over the operands: the first that is not statically 1.
    for (Value x : {getQuery(), getKey(), getValue()})
      if (cast<ShapedType>(x.getType()).getDimSize(0) != 1)
        return {x, 0};
    return {getQuery(), 0};
  }
  return {getQuery(), physicalDim(isBshd("query"), l)};
}

std::pair<Value, int64_t> LinearAttentionOp::getDimSource(unsigned result,
                                                          int64_t dim) {
  if (result == 0) {
    // output [B, Hq, T, Dv]: B, Hq and T are the query's, Dv the value's.
    int64_t l = physicalDim(isBshd("output"), dim);
    if (l == 3)
      return {getValue(), 3};
    return {getQuery(), physicalDim(isBshd("query"), l)};
  }
  // final_state [B, Hkv, Dk, Dv]: B, Hkv and Dk are the key's.
  if (dim == 3)
    return {getValue(), 3};
  if (dim == 2)
    return {getKey(), 3};
  return {getKey(), physicalDim(isBshd("key"), dim)};
}

#define GET_OP_CLASSES
#include "dialects/gated/GatedOps.cpp.inc"
