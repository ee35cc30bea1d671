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
      op.getChunkSize());
  if (failed(mlir::verify(la, false))) {
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

struct RaiseLinearAttentionPass
    : gated::impl::RaiseLinearAttentionBase<RaiseLinearAttentionPass> {
  void runOnOperation() override {
    SmallVector<onnx::LinearAttentionOp> ops;
    getOperation().walk([&](onnx::LinearAttentionOp op) { ops.push_back(op); });
    for (onnx::LinearAttentionOp op : ops)
      if (failed(raise(op)))
        return signalPassFailure();
  }
};
} // namespace
