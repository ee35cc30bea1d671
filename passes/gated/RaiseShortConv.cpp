//===- RaiseShortConv.cpp - --raise-short-conv ----------------------------===//
#include "passes/gated/Matchers.h"
#include "passes/gated/Passes.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::gated {
#define GEN_PASS_DEF_RAISESHORTCONV
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;
using namespace gatec::raise;

namespace {

/// A constant of exactly the values `want` (absent counts as `absent`).
bool intsAre(Value v, ArrayRef<int64_t> want) {
  auto c = onnx::getConstantInts(v);
  return c && ArrayRef<int64_t>(*c) == want;
}

/// An optional I64 array attribute equal to `want` when present.
bool attrIs(std::optional<ArrayRef<int64_t>> a, ArrayRef<int64_t> want) {
  return !a || *a == want;
}

/// Slice(y, [0], [T], [axis 2], [1]) of a [N, C, T + ...] conv output, T
/// the length of `in` (the conv's input): the first T outputs along the
/// sequence. Returns the sliced value.
Value causalPrefix(onnx::SliceOp s, Value in) {
  if (!s)
    return {};
  int64_t rank = shapeOf(s.getData()).size();
  if (rank != 3 || !intsAre(s.getStarts(), {0}))
    return {};
  if (!intsAre(s.getAxes(), {2}) && !intsAre(s.getAxes(), {-1}))
    return {};
  if (!isa<NoneType>(s.getSteps().getType()) && !intsAre(s.getSteps(), {1}))
    return {};
  auto dims = onnx::getShapeDims(s.getEnds());
  if (!dims || dims->size() != 1)
    return {};
  const onnx::DimExpr &e = (*dims)[0];
  int64_t t = shapeOf(in)[2];
  bool same = e.value ? (t != ShapedType::kDynamic && *e.value == t)
                      : (e.src && onnx::sameDim(e.src, e.dim, in, 2));
  return same ? s.getData() : Value();
}

/// Mul(c, Slice(Conv(Mul(b, x), W), first T)) (either order of each Mul;
/// casts to the same type seen through) with Conv a depthwise conv of K
/// taps (group = C, W [C, 1, K] constant, pads K − 1 on the left, stride
/// and dilation 1, bias constant or none) -> gated.short_conv.
struct ShortConv : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || type.getRank() != 3 || type.isDynamicDim(1))
      return failure();
    int64_t ch = type.getDimSize(1);
    for (auto [c, y] :
         {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      if (c.getType() != type)
        continue;
      auto slice = def<onnx::SliceOp>(stripNoopCasts(y));
      auto conv = slice ? def<onnx::ConvOp>(stripNoopCasts(slice.getData()))
                        : onnx::ConvOp();
      if (!conv)
        continue;
      Value in = stripNoopCasts(conv.getX());
      auto gate = def<onnx::MulOp>(in);
      if (!gate || gate.getType() != type || gate.getA().getType() != type ||
          gate.getB().getType() != type)
        continue;
      if (!causalPrefix(slice, conv.getX()))
        continue;
      // b, x and c are read at the same indices: no broadcast among them.
      if (!provablySameShape(gate.getA(), gate.getB()) ||
          !provablySameShape(c, gate.getB()))
        continue;
      auto wt = dyn_cast<RankedTensorType>(conv.getW().getType());
      if (!isConstant(conv.getW()) || !wt || wt.getRank() != 3 ||
          wt.getDimSize(0) != ch || wt.getDimSize(1) != 1 ||
          wt.isDynamicDim(2) || wt.getElementType() != type.getElementType())
        continue;
      int64_t k = wt.getDimSize(2);
      if ((int64_t)conv.getGroup() != ch || conv.getAutoPad() != "NOTSET" ||
          !attrIs(conv.getKernelShape(), {k}) ||
          !attrIs(conv.getStrides(), {1}) ||
          !attrIs(conv.getDilations(), {1}) || !conv.getPads() ||
          conv.getPads()->size() != 2 || (*conv.getPads())[0] != k - 1 ||
          (*conv.getPads())[1] < 0)
        continue;
      Value bias = conv.getB();
      if (isa<NoneType>(bias.getType()))
        bias = Value();
      else if (!isConstant(bias) || shapeOf(bias) != SmallVector<int64_t>{ch})
        continue;
      SmallVector<Operation *> matched;
      collectMatched(op.getResult(),
                     {gate.getA(), gate.getB(), c, conv.getW(), bias}, matched);
      auto sc = gated::ShortConvOp::create(
          rewriter, fuseLocs(getContext(), matched), type, gate.getB(),
          gate.getA(), c, conv.getW(), bias);
      if (!verifiesQuietly(sc)) {
        rewriter.eraseOp(sc);
        continue;
      }
      rewriter.replaceOp(op, sc.getResult());
      return success();
    }
    return failure();
  }
};

struct RaiseShortConvPass
    : gated::impl::RaiseShortConvBase<RaiseShortConvPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ShortConv>(&getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
