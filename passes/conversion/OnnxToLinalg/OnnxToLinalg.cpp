//===- OnnxToLinalg.cpp - --convert-onnx-to-linalg ------------------------===//
//
// Lowers the onnx ops that remain after raising (the `gated` phase) to
// linalg / tensor / arith / math on tensors, with ONNX semantics.
//
// Every op is lowered against the *original* IR: operands are looked up in a
// map from onnx values to their lowered values, while constant operands
// (axes, starts, shapes) are read from the onnx ops, which stay in place
// until the whole function is lowered. Only then are the uses replaced and
// the onnx ops erased.
//
// This file holds the pass and dispatch(), which sends each op to its
// lowering in the file of its op family (declared in Common.h).
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "passes/common/Broadcast.h"
#include "passes/conversion/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_CONVERTONNXTOLINALG
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

namespace gatec::conversion::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

namespace {

LogicalResult lowerConstant(onnx::ConstantOp op, Lowerer &l) {
  auto attr = dyn_cast<TypedAttr>(op.getValue());
  if (!attr)
    return l.fail("constant value is not a typed attribute");
  return l.done(arith::ConstantOp::create(l.b, attr));
}

/// Whether every operand and result is a ranked tensor (or none).
LogicalResult checkTypes(Lowerer &l) {
  auto ok = [&](Type t) {
    if (isa<NoneType>(t))
      return true;
    return isa<RankedTensorType>(t);
  };
  for (Type t : l.op->getOperandTypes())
    if (!ok(t))
      return l.fail("an unranked tensor");
  for (Type t : l.op->getResultTypes())
    if (!ok(t))
      return l.fail("an unranked tensor");
  return success();
}

LogicalResult dispatch(Operation *op, Lowerer &l) {
  using namespace onnx;
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ConstantOp o) { return lowerConstant(o, l); })
      .Case<SqrtOp, ReciprocalOp, NegOp, AbsOp, ExpOp, LogOp, SigmoidOp, TanhOp,
            ReluOp, ErfOp, CosOp, SinOp, FloorOp, CeilOp, SoftplusOp, GeluOp,
            LeakyReluOp, HardSigmoidOp, SignOp>(
          [&](Operation *o) { return lowerUnary(o, l); })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, SumOp>(
          [&](Operation *o) { return lowerBinary(o, l); })
      .Case<EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp>(
          [&](Operation *o) { return lowerCompare(o, l); })
      .Case<AndOp, OrOp, NotOp>(
          [&](Operation *o) { return lowerLogical(o, l); })
      .Case([&](IdentityOp) { return l.done(l.in[0]); })
      .Case([&](SoftmaxOp o) {
        return lowerSoftmax((int64_t)o.getAxis(), false, l);
      })
      .Case([&](LogSoftmaxOp o) {
        return lowerSoftmax((int64_t)o.getAxis(), true, l);
      })
      .Case([&](LayerNormalizationOp o) {
        return lowerNorm((int64_t)o.getAxis(), o.getEpsilon().convertToDouble(),
                         false, l);
      })
      .Case([&](RMSNormalizationOp o) {
        return lowerNorm((int64_t)o.getAxis(), o.getEpsilon().convertToDouble(),
                         true, l);
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
            ReduceL2Op>([&](auto o) { return lowerReduce(o, l); })
      .Case<WhereOp, CastOp, CastLikeOp, IsInfOp, IsNaNOp, DropoutOp, ClipOp,
            MatMulOp, GemmOp, ConvOp, EinsumOp, CumSumOp, RotaryEmbeddingOp,
            AttentionOp, ShapeOp, SizeOp, ConstantOfShapeOp, RangeOp, ReshapeOp,
            FlattenOp, UnsqueezeOp, SqueezeOp, TransposeOp, ConcatOp, SliceOp,
            SplitOp, ExpandOp, GatherOp, TileOp, TriluOp, SwiGLUOp, GatherNDOp,
            ScatterNDOp, ScatterElementsOp, ModOp, PadOp, OneHotOp, TopKOp,
            NonZeroOp>([&](auto o) { return lower(o, l); })
      .Default([&](Operation *) { return l.fail("no lowering to linalg"); });
}

} // namespace

/// Lowers `op` with its operands looked up in `map`; maps its results. The
/// lowering goes before `op`, or at the end of `into` when given (the body
/// of a loop that a Scan became).
LogicalResult lowerOp(Operation *op, IRMapping &map, Block *into) {
  if (isa<onnx::NoValueOp>(op)) // its users read a null operand
    return success();
  Lowerer l(op);
  l.map = &map;
  if (into)
    l.b.setInsertionPointToEnd(into);
  if (op->getNumRegions() && !isa<onnx::ScanOp>(op))
    return l.fail("an op with regions");
  if (failed(checkTypes(l)))
    return failure();
  for (Value v : op->getOperands())
    l.in.push_back(isa<NoneType>(v.getType()) ? Value()
                                              : map.lookupOrDefault(v));
  if (auto scan = dyn_cast<onnx::ScanOp>(op)) {
    if (failed(lowerScan(scan, l, map)))
      return failure();
  } else if (failed(dispatch(op, l))) {
    return failure();
  }
  if (l.out.size() != op->getNumResults())
    return l.fail("produced the wrong number of results");
  for (auto [r, v] : llvm::zip(op->getResults(), l.out)) {
    if (!v)
      continue;
    if (v.getType() != r.getType()) {
      if (!tensor::CastOp::areCastCompatible(v.getType(), r.getType()))
        return l.fail("produced a value of another type");
      v = tensor::CastOp::create(l.b, r.getType(), v);
    }
    map.map(r, v);
  }
  return success();
}

namespace {

/// Replaces the uses of the lowered onnx ops and erases them, users first.
LogicalResult replaceAndErase(ArrayRef<Operation *> ops, IRMapping &map) {
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (Value v = map.lookupOrNull(r))
        r.replaceAllUsesWith(v);
  for (Operation *op : llvm::reverse(ops)) {
    if (!op->use_empty())
      return op->emitOpError() << "cannot be lowered: a result without a "
                                  "lowering is still used";
    op->erase();
  }
  return success();
}

struct ConvertOnnxToLinalgPass
    : conversion::impl::ConvertOnnxToLinalgBase<ConvertOnnxToLinalgPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertOnnxToLinalgBase::getDependentDialects(registry);
    registry.insert<scf::SCFDialect>(); // loops of run-time axes
  }

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<onnx::OnnxDialect>(op->getDialect()))
        ops.push_back(op);
      // A Scan's body is lowered into the loop the Scan becomes.
      return isa<onnx::ScanOp>(op) ? WalkResult::skip() : WalkResult::advance();
    });
    IRMapping map;
    for (Operation *op : ops)
      if (failed(lowerOp(op, map)))
        return signalPassFailure();
    if (failed(replaceAndErase(ops, map)))
      return signalPassFailure();
    common::foldProvableBroadcastChecks(getOperation());
    eraseDeadOps();
  }

  /// Erases the pure ops left without uses: shape computations whose
  /// consumers were lowered without them (a Reshape that became an
  /// expand_shape of tensor.dim sizes no longer reads its Concat).
  void eraseDeadOps() {
    for (Block &block : getOperation().getBody())
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isOpTriviallyDead(&op))
          op.erase();
  }
};

} // namespace

} // namespace gatec::conversion::onnx_to_linalg
