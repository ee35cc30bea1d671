//===- RaiseLinearAttention.cpp - --raise-linear-attention ----------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/Verifier.h"
#include <cmath>

namespace gatec::gated {
#define GEN_PASS_DEF_RAISELINEARATTENTION
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

bool isNone(Value v) { return !v || isa<NoneType>(v.getType()); }

/// onnx.LinearAttention (opset 27) -> gated.linear_attention. The packed
/// [B, T, H·D] operands are split into heads ([B, H, T, D], as the op does
/// internally); the output is packed back. Returns failure after reporting
/// a located error when the node cannot be raised.
LogicalResult raise(onnx::LinearAttentionOp op) {
  Location loc = op.getLoc();
  auto fail = [&](const Twine &msg) {
    return op.emitError() << "LinearAttention: " << msg;
  };
  std::optional<gated::LinearAttentionRule> rule =
      gated::symbolizeLinearAttentionRule(op.getUpdateRule());
  if (!rule)
    return fail("unknown update_rule '" + op.getUpdateRule() + "'");
  bool gatedRule = *rule == gated::LinearAttentionRule::gated ||
                   *rule == gated::LinearAttentionRule::gated_delta;
  bool deltaRule = *rule == gated::LinearAttentionRule::delta ||
                   *rule == gated::LinearAttentionRule::gated_delta;
  if (gatedRule == isNone(op.getDecay()))
    return fail("update_rule '" + op.getUpdateRule() + "' " +
                (gatedRule ? "needs" : "forbids") + " the decay input");
  if (deltaRule == isNone(op.getBeta()))
    return fail("update_rule '" + op.getUpdateRule() + "' " +
                (deltaRule ? "needs" : "forbids") + " the beta input");
  int64_t hq = op.getQNumHeads(), hkv = op.getKvNumHeads();
  auto qs = shapeOf(op.getQuery()), ks = shapeOf(op.getKey()),
       vs = shapeOf(op.getValue());
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3)
    return fail("query, key and value must be 3-D [B, T, H*D]");
  if (qs[2] == kDyn || ks[2] == kDyn || vs[2] == kDyn)
    return fail("the packed head dimensions (H*D) must be static");
  if (hq <= 0 || hkv <= 0 || hq % hkv || qs[2] % hq || ks[2] % hkv ||
      vs[2] % hkv)
    return fail("q_num_heads " + Twine(hq) + " / kv_num_heads " + Twine(hkv) +
                " do not divide the packed dimensions");
  int64_t dk = qs[2] / hq, dv = vs[2] / hkv;
  if (ks[2] / hkv != dk)
    return fail("query head_dim " + Twine(dk) + " differs from key head_dim " +
                Twine(ks[2] / hkv));
  Type et = cast<ShapedType>(op.getQuery().getType()).getElementType();

  PatternRewriter rewriter(op.getContext());
  rewriter.setInsertionPoint(op);
  auto heads = [&](Value x, int64_t h, int64_t d) {
    return transpose(rewriter, loc, reshape(rewriter, loc, x, {0, 0, h, d}),
                     {0, 2, 1, 3});
  };
  Value q = heads(op.getQuery(), hq, dk);
  Value k = heads(op.getKey(), hkv, dk);
  Value v = heads(op.getValue(), hkv, dv);
  Value decay, beta, state;
  if (gatedRule) {
    auto ds = shapeOf(op.getDecay());
    if (ds.size() != 3 || (ds[2] != hkv && ds[2] != hkv * dk))
      return fail("decay must be [B, T, kv_num_heads] or [B, T, "
                  "kv_num_heads*d_k] = [B, T, " +
                  Twine(hkv * dk) + "]");
    decay = heads(op.getDecay(), hkv, ds[2] == hkv * dk ? dk : 1);
  }
  if (deltaRule) {
    auto bs = shapeOf(op.getBeta());
    if (bs.size() != 3 || (bs[2] != hkv && bs[2] != 1))
      return fail("beta must be [B, T, kv_num_heads] or [B, T, 1]");
    beta = heads(op.getBeta(), bs[2], 1);
  }
  Type stateType = op.getPresentState().getType();
  if (!isNone(op.getPastState())) {
    state = op.getPastState();
    if (cast<ShapedType>(state.getType()).getElementType() !=
        cast<ShapedType>(stateType).getElementType())
      return fail("a past_state element type other than the query's is not "
                  "supported");
  }
  double scale = op.getScale().convertToDouble();
  if (scale == 0.0)
    scale = 1.0 / std::sqrt((double)dk);
  auto ys = shapeOf(op.getOutput());
  if (ys.size() != 3)
    return fail("cannot infer the output shape");
  auto outType = RankedTensorType::get({ys[0], hq, ys[1], dv}, et);
  auto la = gated::LinearAttentionOp::create(
      rewriter, loc, TypeRange{outType, stateType}, q, k, v, decay, beta, state,
      *rule, gated::LinearAttentionForm::recurrent, APFloat((float)scale),
      op.getChunkSize(), /*bshd=*/nullptr, /*norm_weight=*/Value(),
      /*norm_gate=*/Value(), /*norm_epsilon=*/nullptr,
      /*norm_unit_offset=*/false, /*norm_gate_activation=*/nullptr);
  if (!verifiesQuietly(la)) {
    rewriter.eraseOp(la);
    return failure();
  }
  Value out = reshape(rewriter, loc,
                      transpose(rewriter, loc, la.getOutput(), {0, 2, 1, 3}),
                      {0, 0, hq * dv});
  if (out.getType() != op.getOutput().getType())
    return fail("output type mismatch after raising");
  rewriter.replaceAllUsesWith(op.getOutput(), out);
  rewriter.replaceAllUsesWith(op.getPresentState(), la.getFinalState());
  rewriter.eraseOp(op);
  return success();
}

/// The input of a lower-triangular onnx.Trilu (upper = 0, k = 0), or null.
Value lowerTriangle(Value v) {
  auto t = def<onnx::TriluOp>(v);
  if (!t || t.getUpper() != 0)
    return {};
  if (!isNone(t.getK()) && scalarConstant(t.getK()) != 0.0)
    return {};
  return t.getInput();
}

bool swapsLastTwo(Value v, Value &input) {
  auto t = def<onnx::TransposeOp>(v);
  if (!t || !isa<RankedTensorType>(t.getData().getType()) ||
      permutationOf(t) != SmallVector<int64_t>{0, 1, 3, 2})
    return false;
  input = t.getData();
  return true;
}

/// The quadratic (parallel) form of scalar-decay linear attention, as
/// RetNet / Mamba2-SSD write it:
///   o = ((scale · Q Kᵀ) ⊙ D) V,  D = tril(exp(tril(G − Gᵀ))), G = CumSum_T(g)
/// on [B, H, T, D] tensors with g [B, H, T, 1] (the inner tril may be
/// absent; the scale a Mul or Div by a constant, or none) -> one
/// gated.linear_attention gated with decay g: O(T·C) memory instead of
/// O(T²).
bool raiseQuadratic(onnx::MatMulOp mm) {
  auto mul = def<onnx::MulOp>(mm.getA());
  if (!mul)
    return false;
  for (int side = 0; side < 2; ++side) {
    Value sPart = mul->getOperand(side), dPart = mul->getOperand(1 - side);
    Value e = lowerTriangle(dPart);
    auto ex = def<onnx::ExpOp>(e);
    if (!ex)
      continue;
    Value diff = ex.getInput();
    if (Value inner = lowerTriangle(diff))
      diff = inner;
    auto sub = def<onnx::SubOp>(diff);
    Value gT;
    if (!sub || !swapsLastTwo(sub.getB(), gT) || gT != sub.getA())
      continue;
    auto cs = def<onnx::CumSumOp>(sub.getA());
    if (!cs || cs.getExclusive() || cs.getReverse())
      continue;
    auto axis = scalarConstant(cs.getAxis());
    if (!axis || (*axis != 2 && *axis != -2))
      continue;
    Value g = cs.getX();
    double scale = 1.0;
    Value qk = sPart;
    if (auto m = def<onnx::MulOp>(sPart)) {
      for (int i = 0; i < 2; ++i)
        if (auto c = scalarConstant(m->getOperand(i))) {
          scale = *c;
          qk = m->getOperand(1 - i);
          break;
        }
    } else if (auto d = def<onnx::DivOp>(sPart)) {
      if (auto c = scalarConstant(d.getB()); c && *c != 0.0) {
        scale = 1.0 / *c;
        qk = d.getA();
      }
    }
    auto qkMul = def<onnx::MatMulOp>(qk);
    Value k;
    if (!qkMul || !swapsLastTwo(qkMul.getB(), k))
      continue;
    Value q = qkMul.getA(), v = mm.getB();
    auto qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v), gs = shapeOf(g);
    auto os = shapeOf(mm.getY());
    if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || gs.size() != 4 ||
        os.size() != 4 || gs[3] != 1 || qs[1] == kDyn || qs[1] != ks[1] ||
        ks[1] != vs[1] || gs[1] != qs[1] || qs[3] == kDyn || vs[3] == kDyn)
      continue;
    Type et = cast<ShapedType>(q.getType()).getElementType();
    SmallVector<Operation *> matched;
    collectMatched(mm.getY(), {q, k, v, g}, matched);
    Location loc = fuseLocs(mm.getContext(), matched);
    PatternRewriter rewriter(mm.getContext());
    rewriter.setInsertionPoint(mm);
    auto stateType = RankedTensorType::get({qs[0], qs[1], qs[3], vs[3]}, et);
    auto la = gated::LinearAttentionOp::create(
        rewriter, loc, TypeRange{mm.getY().getType(), stateType}, q, k, v, g,
        Value(), Value(), gated::LinearAttentionRule::gated,
        gated::LinearAttentionForm::recurrent, APFloat((float)scale), 64,
        /*bshd=*/nullptr, /*norm_weight=*/Value(), /*norm_gate=*/Value(),
        /*norm_epsilon=*/nullptr, /*norm_unit_offset=*/false,
        /*norm_gate_activation=*/nullptr);
    if (!verifiesQuietly(la)) {
      rewriter.eraseOp(la);
      return false;
    }
    rewriter.replaceAllUsesWith(mm.getY(), la.getOutput());
    rewriter.eraseOp(mm);
    return true;
  }
  return false;
}

struct RaiseLinearAttentionPass
    : gated::impl::RaiseLinearAttentionBase<RaiseLinearAttentionPass> {
  void runOnOperation() override {
    SmallVector<onnx::LinearAttentionOp> ops;
    getOperation().walk([&](onnx::LinearAttentionOp op) { ops.push_back(op); });
    for (onnx::LinearAttentionOp op : ops)
      if (failed(raise(op)))
        return signalPassFailure();
    SmallVector<onnx::MatMulOp> matmuls;
    getOperation().walk([&](onnx::MatMulOp op) { matmuls.push_back(op); });
    for (onnx::MatMulOp op : matmuls)
      raiseQuadratic(op);
  }
};
} // namespace
