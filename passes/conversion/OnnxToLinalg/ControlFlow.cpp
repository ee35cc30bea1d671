//===- ControlFlow.cpp - Scan ---------------------------------------------===//
//
// Scan, the one control-flow op lowered: an scf.for whose body holds the
// lowering of the Scan's body, op by op (lowerOp, in OnnxToLinalg.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

namespace gatec::conversion::onnx_to_linalg {

/// Scan as an scf.for over the sequence (the first scan input's length
/// along its axis): the states and one tensor per scan output are the
/// loop's iteration arguments; each step extracts its slice of every scan
/// input (from the end for a reverse direction), lowers the body's onnx
/// ops in the loop body (values the body captures from the enclosing
/// graph are the lowered ones), and inserts each scan output's slice at
/// the step's position. Scan outputs must have static sizes apart from
/// their scan axis.
LogicalResult lowerScan(onnx::ScanOp op, Lowerer &l, IRMapping &map) {
  int64_t nIn = l.in.size(), nScan = op.getNumScanInputs();
  int64_t nState = nIn - nScan, nOut = op.getNumResults();
  if (nScan < 1 || nState < 0 || nOut < nState)
    return l.fail("num_scan_inputs does not fit the inputs");
  auto at = [](std::optional<ArrayRef<int64_t>> a, int64_t j) -> int64_t {
    return a && j < (int64_t)a->size() ? (*a)[j] : 0;
  };
  ImplicitLocOpBuilder &b = l.b;
  for (Value v : l.in)
    if (!v)
      return l.fail("a missing input");
  SmallVector<int64_t> inAxes, outAxes;
  for (int64_t j = 0; j < nScan; ++j) {
    auto a = normAxis(at(op.getScanInputAxes(), j), l.rankOf(l.in[nState + j]));
    if (!a)
      return l.fail("a scan input axis out of range");
    inAxes.push_back(*a);
  }
  OpFoldResult len = l.dim(l.in[nState], inAxes[0]);
  SmallVector<Value> inits(l.in.begin(), l.in.begin() + nState);
  SmallVector<RankedTensorType> stepTypes;
  for (int64_t j = 0; j < nOut - nState; ++j) {
    RankedTensorType t = l.resultType(nState + j);
    if (!t)
      return l.fail("an unranked scan output");
    auto a = normAxis(at(op.getScanOutputAxes(), j), t.getRank());
    if (!a)
      return l.fail("a scan output axis out of range");
    outAxes.push_back(*a);
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> step;
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *a) {
        sizes.push_back(len);
        continue;
      }
      if (t.isDynamicDim(i))
        return l.fail("a scan output with a dynamic size besides its scan "
                      "axis");
      sizes.push_back(l.idx(t.getDimSize(i)));
      step.push_back(t.getDimSize(i));
    }
    stepTypes.push_back(RankedTensorType::get(step, t.getElementType()));
    inits.push_back(l.empty(t, sizes));
  }
  Block &body = op.getBody().front();
  auto yield = cast<onnx::YieldOp>(body.getTerminator());
  Value zero = arith::ConstantIndexOp::create(b, 0),
        one = arith::ConstantIndexOp::create(b, 1), n = l.val(len);
  Value last = arith::SubIOp::create(b, n, one);
  bool ok = true;
  auto loop = scf::ForOp::create(
      b, zero, n, one, inits,
      [&](OpBuilder &nb, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value back = arith::SubIOp::create(ib, last, iv);
        auto pos = [&](std::optional<ArrayRef<int64_t>> dirs, int64_t j) {
          return at(dirs, j) ? back : iv;
        };
        auto cast = [&](Value v, Type t) {
          return v.getType() == t ? v : tensor::CastOp::create(ib, t, v);
        };
        for (int64_t i = 0; i < nState; ++i)
          map.map(body.getArgument(i),
                  cast(args[i], body.getArgument(i).getType()));
        for (int64_t j = 0; j < nScan; ++j) {
          Value src = l.in[nState + j];
          RankedTensorType st = l.typeOf(src);
          int64_t a = inAxes[j];
          SmallVector<OpFoldResult> offs(st.getRank(), ib.getIndexAttr(0)),
              sizes, strides(st.getRank(), ib.getIndexAttr(1));
          SmallVector<int64_t> shape;
          for (int64_t i = 0; i < st.getRank(); ++i) {
            if (i == a) {
              sizes.push_back(ib.getIndexAttr(1));
              continue;
            }
            sizes.push_back(
                st.isDynamicDim(i)
                    ? OpFoldResult(
                          tensor::DimOp::create(ib, src, i).getResult())
                    : ib.getIndexAttr(st.getDimSize(i)));
            shape.push_back(st.getDimSize(i));
          }
          offs[a] = pos(op.getScanInputDirections(), j);
          Value slice = tensor::ExtractSliceOp::create(
              ib, RankedTensorType::get(shape, st.getElementType()), src, offs,
              sizes, strides);
          Value arg = body.getArgument(nState + j);
          map.map(arg, cast(slice, arg.getType()));
        }
        for (Operation &o : body.without_terminator())
          if (ok && failed(lowerOp(&o, map, ib.getInsertionBlock())))
            ok = false;
        SmallVector<Value> results;
        for (auto [i, v] : llvm::enumerate(yield.getOperands())) {
          Value lv = map.lookupOrDefault(v);
          if (!ok || !lv || !isa<RankedTensorType>(lv.getType())) {
            ok = false;
            results.push_back(args[i]);
            continue;
          }
          if ((int64_t)i < nState) {
            // Copied into the iteration argument: the loop's state then
            // bufferizes in place (a yield equivalent to its argument).
            results.push_back(linalg::CopyOp::create(
                                  ib, ValueRange{cast(lv, args[i].getType())},
                                  ValueRange{args[i]})
                                  .getResult(0));
            continue;
          }
          int64_t j = i - nState, a = outAxes[j];
          RankedTensorType ot = l.typeOf(args[i]);
          SmallVector<OpFoldResult> offs(ot.getRank(), ib.getIndexAttr(0)),
              sizes, strides(ot.getRank(), ib.getIndexAttr(1));
          for (int64_t d = 0; d < ot.getRank(); ++d)
            sizes.push_back(d == a ? ib.getIndexAttr(1)
                                   : ib.getIndexAttr(ot.getDimSize(d)));
          offs[a] = pos(op.getScanOutputDirections(), j);
          if (!tensor::CastOp::areCastCompatible(lv.getType(), stepTypes[j])) {
            ok = false;
            results.push_back(args[i]);
            continue;
          }
          results.push_back(tensor::InsertSliceOp::create(
              ib, cast(lv, stepTypes[j]), args[i], offs, sizes, strides));
        }
        scf::YieldOp::create(ib, results);
      });
  if (!ok)
    return l.fail("its body could not be lowered");
  for (Value r : loop.getResults())
    l.out.push_back(r);
  return success();
}

} // namespace gatec::conversion::onnx_to_linalg
