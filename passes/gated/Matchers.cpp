//===- Matchers.cpp - helpers shared by the raising patterns --------------===//
#include "passes/gated/Matchers.h"

#include "dialects/onnx/ConstantValues.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace gatec::raise {

std::optional<double> scalarConstant(Value v) {
  ElementsAttr a = onnx::getConstantAttr(v);
  if (!a || a.getNumElements() != 1)
    return std::nullopt;
  auto d = onnx::getConstantDoubles(v);
  if (!d || d->size() != 1)
    return std::nullopt;
  return (*d)[0];
}

bool verifiesQuietly(Operation *op) {
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  return succeeded(mlir::verify(op, /*verifyRecursively=*/false));
}

bool isConstant(Value v) { return (bool)onnx::getConstantAttr(v); }

Value stripNoopCasts(Value v) {
  while (auto c = def<onnx::CastOp>(v)) {
    if (c.getInput().getType() != c.getType())
      break;
    v = c.getInput();
  }
  return v;
}

bool isLastAxis(Value axes, int64_t rank) {
  auto a = onnx::getConstantInts(axes);
  if (!a || a->size() != 1)
    return false;
  return (*a)[0] == -1 || (*a)[0] == rank - 1;
}

static void collect(Value v, bool isRoot, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> *muls) {
  auto mul = def<onnx::MulOp>(v);
  if (!mul || (!isRoot && !v.hasOneUse())) {
    factors.push_back(v);
    return;
  }
  if (muls)
    muls->push_back(mul);
  collect(mul.getA(), false, factors, muls);
  collect(mul.getB(), false, factors, muls);
}

void collectFactors(Value v, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> *muls) {
  collect(v, true, factors, muls);
}

Location fuseLocs(MLIRContext *ctx, ArrayRef<Operation *> ops) {
  SmallVector<Location> locs;
  llvm::SetVector<Location> seen;
  for (Operation *op : ops)
    if (op && seen.insert(op->getLoc()))
      locs.push_back(op->getLoc());
  return FusedLoc::get(ctx, locs);
}

void collectMatched(Value root, ArrayRef<Value> stops,
                    SmallVectorImpl<Operation *> &ops) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (llvm::is_contained(stops, v))
      continue;
    Operation *d = v.getDefiningOp();
    if (!d || !seen.insert(d))
      continue;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  ops.append(seen.begin(), seen.end());
}

Value createOnnx(PatternRewriter &rewriter, Location loc, StringRef opType,
                 ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  OperationState state(loc, ("onnx." + opType).str());
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(UnrankedTensorType::get(rewriter.getF32Type()));
  Operation *op = rewriter.create(state);
  SmallVector<Type> types;
  auto iface = cast<onnx::ShapeInferenceOpInterface>(op);
  if (succeeded(iface.inferResultTypes(types)))
    op->getResult(0).setType(types[0]);
  return op->getResult(0);
}

SmallVector<int64_t> permutationOf(onnx::TransposeOp op) {
  if (auto p = op.getPerm())
    return SmallVector<int64_t>(p->begin(), p->end());
  SmallVector<int64_t> perm;
  auto t = cast<RankedTensorType>(op.getData().getType());
  for (int64_t i = t.getRank() - 1; i >= 0; --i)
    perm.push_back(i);
  return perm;
}

Value transpose(PatternRewriter &rewriter, Location loc, Value v,
                ArrayRef<int64_t> perm) {
  SmallVector<int64_t> p(perm);
  if (auto t = def<onnx::TransposeOp>(v);
      t && isa<RankedTensorType>(t.getData().getType())) {
    SmallVector<int64_t> inner = permutationOf(t);
    SmallVector<int64_t> composed;
    for (int64_t i : p)
      composed.push_back(inner[i]);
    p = composed;
    v = t.getData();
  }
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i)
    identity &= p[i] == (int64_t)i;
  if (identity)
    return v;
  return createOnnx(
      rewriter, loc, "Transpose", {v},
      {rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr(p))});
}

Value reshape(PatternRewriter &rewriter, Location loc, Value v,
              ArrayRef<int64_t> shape) {
  auto t =
      RankedTensorType::get({(int64_t)shape.size()}, rewriter.getI64Type());
  Value s = onnx::ConstantOp::create(rewriter, loc,
                                     DenseIntElementsAttr::get(t, shape));
  return createOnnx(
      rewriter, loc, "Reshape", {v, s},
      {rewriter.getNamedAttr("allowzero", rewriter.getI64IntegerAttr(0))});
}

Value gateLogits(Value v, gated::GateActivation &act) {
  while (auto r = def<onnx::ReshapeOp>(v))
    v = r.getData();
  if (auto s = def<onnx::SigmoidOp>(v)) {
    act = gated::GateActivation::sigmoid;
    return s.getX();
  }
  if (auto a = def<onnx::AddOp>(v)) {
    for (auto [h, m] :
         {std::pair(a.getA(), a.getB()), std::pair(a.getB(), a.getA())}) {
      auto mul = def<onnx::MulOp>(m);
      if (!mul || scalarConstant(h) != 0.5)
        continue;
      for (auto [c, sv] : {std::pair(mul.getA(), mul.getB()),
                           std::pair(mul.getB(), mul.getA())})
        if (auto s = def<onnx::SigmoidOp>(sv); s && scalarConstant(c) == 0.5) {
          act = gated::GateActivation::ns_sigmoid;
          return s.getX();
        }
    }
  }
  if (auto m = def<onnx::MulOp>(v)) {
    for (auto [z, sg] :
         {std::pair(m.getA(), m.getB()), std::pair(m.getB(), m.getA())}) {
      auto s = def<onnx::SigmoidOp>(sg);
      if (s && s.getX() == z) {
        act = gated::GateActivation::silu;
        return z;
      }
    }
  }
  return {};
}

bool provablySameShape(Value a, Value b) {
  auto at = dyn_cast<RankedTensorType>(a.getType());
  auto bt = dyn_cast<RankedTensorType>(b.getType());
  if (!at || !bt || at.getRank() != bt.getRank())
    return false;
  for (int64_t i = 0; i < at.getRank(); ++i) {
    int64_t x = at.getDimSize(i), y = bt.getDimSize(i);
    if (x != ShapedType::kDynamic || y != ShapedType::kDynamic) {
      if (x != y)
        return false;
      continue;
    }
    if (a != b && !onnx::sameDim(a, i, b, i))
      return false;
  }
  return true;
}

SmallVector<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return SmallVector<int64_t>(t.getShape());
  return {};
}

} // namespace gatec::raise
