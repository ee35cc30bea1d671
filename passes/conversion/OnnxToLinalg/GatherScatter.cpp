//===- GatherScatter.cpp - GatherND, ScatterND, ScatterElements -----------===//
//
// The ops that read or write data at positions held in an indices tensor,
// beyond Gather (DataMovement.cpp):
//
//   GatherND         one linalg.generic over the result that reads its index
//                    tuple and then the data element (tensor.extract).
//   ScatterND,       a copy of data updated by an scf.forall over the
//   ScatterElements  positions that no two updates can share (the elements
//                    of a slice of ScatterND, the lines of ScatterElements
//                    across its axis), each iteration a sequential scf.for
//                    over the updates that write into its part with
//                    tensor.insert: the updates of one element are applied
//                    in order (the last write wins for reduction none, as
//                    in onnxruntime) and it bufferizes in place.
//
// Negative indices count from the end. Indices outside [-n, n-1] and shapes
// of indices, updates and data that do not fit are the run's error naming
// the node (the shapes checked before any element is read or written; the
// indices are also clamped into their dim, so the index check may wait for
// the end of the run, --defer-data-checks), or an error here where they are
// constants against static sizes.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/OnnxToLinalg/Common.h"

#include "passes/common/Broadcast.h"

#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

namespace gatec::conversion::onnx_to_linalg {

namespace {

/// " in node 'n' (Op)": the end of a run-time check's message.
std::string where(Operation *op) {
  return " in " + describeOp(op->getLoc()) + " (" +
         op->getName().stripDialect().str() + ")";
}

/// That the size `x` is equal to (or, with `atMost`, at most) the size `y`:
/// a compile error (`why`) where both are constants, else a run-time check
/// with `message` unless they are provably the same size.
LogicalResult checkSize(Lowerer &l, OpFoldResult x, OpFoldResult y, bool atMost,
                        const Twine &why, const std::string &message) {
  auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy) {
    if (atMost ? *cx > *cy : *cx != *cy)
      return l.fail(why);
    return success();
  }
  if (x == y)
    return success();
  cf::AssertOp::create(l.b,
                       arith::CmpIOp::create(l.b,
                                             atMost ? arith::CmpIPredicate::sle
                                                    : arith::CmpIPredicate::eq,
                                             l.val(x), l.val(y)),
                       message);
  return success();
}

/// That dim `d` of the tensor `v` has the size `size` (see checkSize).
LogicalResult checkDim(Lowerer &l, Value v, int64_t d, OpFoldResult size,
                       bool atMost, const Twine &why,
                       const std::string &message) {
  if (common::provablySameSize(v, d, size)) // equal, so at most too
    return success();
  return checkSize(l, l.dim(v, d), size, atMost, why, message);
}

/// The indices of column `col` of `indices` (its last dim, of `cols`
/// columns; col -1: all of them) must lie in [-n, n-1] for the size n of
/// data dim `dataDim`. Constant indices against a static dim are checked
/// here (a compile error); against a dynamic dim their extremes are checked
/// once at run time; indices read at run time are all checked at run time,
/// each column by one pass over its elements.
LogicalResult checkIndices(Lowerer &l, Value onnxIndices, Value indices,
                           int64_t col, int64_t cols, Value data,
                           int64_t dataDim) {
  ImplicitLocOpBuilder &b = l.b;
  Operation *op = l.op;
  int64_t n = l.typeOf(data).getDimSize(dataDim);
  Value dim = l.val(l.dim(data, dataDim));
  std::string message = "gatec: an index out of range of data dim " +
                        std::to_string(dataDim) + where(op);
  using P = arith::CmpIPredicate;
  if (auto c = onnx::getConstantInts(onnxIndices)) {
    std::optional<int64_t> lo, hi;
    for (size_t i = 0; i < c->size(); ++i) {
      if (col >= 0 && (int64_t)i % cols != col)
        continue;
      int64_t v = (*c)[i];
      lo = lo ? std::min(*lo, v) : v;
      hi = hi ? std::max(*hi, v) : v;
    }
    if (!lo)
      return success();
    if (!ShapedType::isDynamic(n)) {
      if (*lo < -n || *hi >= n)
        return l.fail("an index out of range of data dim " + Twine(dataDim) +
                      " (" + Twine(*lo < -n ? *lo : *hi) + " not in [" +
                      Twine(-n) + ", " + Twine(n - 1) + "])");
      return success();
    }
    // hi < n and -n <= lo, as n > max(hi, -lo - 1).
    int64_t need = std::max(*hi, -*lo - 1);
    if (need < 0)
      return success();
    cf::AssertOp::create(
        b, arith::CmpIOp::create(b, P::sgt, dim, cidx(b, need)), message);
    return success();
  }
  Value t = indices;
  if (col >= 0 && cols != 1) { // the column, as a slice [..., col:col+1]
    int64_t q = l.rankOf(indices);
    SmallVector<OpFoldResult> offs(q, l.idx(0)), sizes = l.dims(indices),
                                                 strides(q, l.idx(1));
    offs[q - 1] = l.idx(col);
    sizes[q - 1] = l.idx(1);
    t = tensor::ExtractSliceOp::create(b, indices, offs, sizes, strides);
  }
  l.checkIndexedDim(dim, t, message);
  l.checkAll(
      t,
      [&](ImplicitLocOpBuilder &ib, Value i) -> Value {
        Value v = arith::IndexCastOp::create(ib, ib.getIndexType(), i);
        Value neg = arith::SubIOp::create(ib, cidx(ib, 0), dim);
        return arith::AndIOp::create(ib,
                                     arith::CmpIOp::create(ib, P::sge, v, neg),
                                     arith::CmpIOp::create(ib, P::slt, v, dim));
      },
      message, /*dataCheck=*/true);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions of the scatters
//===----------------------------------------------------------------------===//

enum class Reduction { None, Add, Mul, Max, Min };

FailureOr<Reduction> reductionOf(Lowerer &l, StringRef s) {
  if (s == "none")
    return Reduction::None;
  if (s == "add")
    return Reduction::Add;
  if (s == "mul")
    return Reduction::Mul;
  if (s == "max")
    return Reduction::Max;
  if (s == "min")
    return Reduction::Min;
  return l.fail("reduction '" + s + "' (not none, add, mul, max or min)");
}

/// The element written where `old` is updated by `upd`, computed in f32
/// for narrower floats. On bool, add is or and mul is and (as onnxruntime
/// and numpy compute them).
Value combine(ImplicitLocOpBuilder &b, Reduction r, Value old, Value upd) {
  Type t = old.getType();
  if (r != Reduction::None && accType(t) != t) // f16, bf16: in f32
    return convert(
        b,
        combine(b, r, convert(b, old, accType(t)), convert(b, upd, accType(t))),
        t);
  switch (r) {
  case Reduction::None:
    return upd;
  case Reduction::Add:
    if (t.isInteger(1))
      return arith::OrIOp::create(b, old, upd);
    return addOf(b, old, upd);
  case Reduction::Mul:
    if (isFloat(t))
      return arith::MulFOp::create(b, old, upd);
    if (t.isInteger(1))
      return arith::AndIOp::create(b, old, upd);
    return castScalar(
        b, arith::MulIOp::create(b, toSignless(b, old), toSignless(b, upd)), t);
  case Reduction::Max:
    return maxOf(b, old, upd);
  case Reduction::Min:
    return minOf(b, old, upd);
  }
  llvm_unreachable("a reduction");
}

/// A copy of `data` to scatter into: the scatter's loop writes it in place,
/// never the operand's own buffer (a model input, or a tensor read later).
Value copyOf(Lowerer &l, Value data) {
  Value init = l.empty(l.typeOf(data), l.dims(data));
  return linalg::CopyOp::create(l.b, ValueRange{data}, ValueRange{init})
      .getResult(0);
}

/// `data` (a copy of it) updated by an scf.forall over `parallel` (the
/// sizes of the positions no two updates share; none: one iteration),
/// whose iteration (ivs) owns the part of data at `offsets` / `sizes`
/// (computed from the ivs, with no op built: sizes are computed before),
/// of type `partType` (its unit dims dropped): `update` returns the part
/// updated by that iteration's updates.
Value scatterLoop(
    Lowerer &l, Value data, ArrayRef<OpFoldResult> parallel,
    RankedTensorType partType,
    function_ref<void(ValueRange ivs, SmallVectorImpl<OpFoldResult> &offsets,
                      SmallVectorImpl<OpFoldResult> &sizes)>
        part,
    function_ref<Value(ImplicitLocOpBuilder &, ValueRange ivs, Value part)>
        update) {
  SmallVector<OpFoldResult> ubs(parallel);
  if (ubs.empty())
    ubs.push_back(l.idx(1));
  Value init = copyOf(l, data);
  auto forall = scf::ForallOp::create(l.b, ubs, ValueRange{init}, std::nullopt);
  auto ib =
      ImplicitLocOpBuilder::atBlockTerminator(l.b.getLoc(), forall.getBody());
  SmallVector<Value> ivs;
  if (!parallel.empty())
    ivs = forall.getInductionVars();
  Value shared = forall.getRegionIterArgs()[0];
  int64_t r = l.rankOf(data);
  SmallVector<OpFoldResult> offsets, sizes, strides(r, ib.getIndexAttr(1));
  part(ivs, offsets, sizes);
  Value slice = tensor::ExtractSliceOp::create(ib, partType, shared, offsets,
                                               sizes, strides);
  Value updated = update(ib, ivs, slice);
  ib.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(ib, updated, shared, offsets, sizes,
                                        strides);
  return forall.getResult(0);
}

/// Sequential loops over [0, ubs) carrying `part`: body(ivs, part) returns
/// the updated part (none: the body once).
Value sequentialLoops(
    ImplicitLocOpBuilder &b, ArrayRef<Value> ubs, Value part,
    function_ref<Value(ImplicitLocOpBuilder &, ValueRange, Value)> body) {
  SmallVector<Value> lbs(ubs.size(), cidx(b, 0)), steps(ubs.size(), cidx(b, 1));
  scf::LoopNest nest =
      scf::buildLoopNest(b, b.getLoc(), lbs, ubs, steps, ValueRange{part},
                         [&](OpBuilder &nb, Location loc, ValueRange ivs,
                             ValueRange args) -> scf::ValueVector {
                           ImplicitLocOpBuilder jb(loc, nb);
                           return {body(jb, ivs, args[0])};
                         });
  return nest.results[0];
}

} // namespace

//===----------------------------------------------------------------------===//
// GatherND
//===----------------------------------------------------------------------===//

LogicalResult lower(onnx::GatherNDOp op, Lowerer &l) {
  Value data = l.in[0], indices = l.in[1];
  RankedTensorType rt = l.resultType();
  int64_t r = l.rankOf(data), q = l.rankOf(indices), R = rt.getRank();
  int64_t bd = (int64_t)op.getBatchDims();
  if (q < 1)
    return l.fail("indices of rank 0");
  if (bd < 0 || bd >= std::min(q, r))
    return l.fail("batch_dims " + Twine(bd) +
                  " not less than the ranks of data and indices");
  // m = indices.shape[-1], the length of an index tuple: the result's rank
  // is q - 1 + r - b - m.
  int64_t m = q - 1 + r - bd - R;
  int64_t known = l.typeOf(indices).getDimSize(q - 1);
  if (!ShapedType::isDynamic(known) && known != m)
    return l.fail("a result of rank " + Twine(R) + " for index tuples of " +
                  Twine(known) + " elements");
  if (m < 1 || bd + m > r)
    return l.fail("indices.shape[-1] = " + Twine(m) +
                  " not in [1, rank(data) - batch_dims]");
  std::string w = where(op);
  if (failed(
          checkDim(l, indices, q - 1, l.idx(m), false,
                   "indices.shape[-1] of another size",
                   "gatec: indices.shape[-1] is not " + std::to_string(m) + w)))
    return failure();
  for (int64_t d = 0; d < bd; ++d)
    if (failed(checkDim(l, indices, d, l.dim(data, d), false,
                        "batch dim " + Twine(d) + " of indices and data differ",
                        "gatec: batch dim " + std::to_string(d) +
                            " of indices and data differ" + w)))
      return failure();
  for (int64_t j = 0; j < m; ++j)
    if (failed(checkIndices(l, op.getIndices(), indices, j, m, data, bd + j)))
      return failure();
  SmallVector<Value> n;
  for (int64_t j = 0; j < m; ++j)
    n.push_back(l.val(l.dim(data, bd + j)));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < q - 1; ++d)
    sizes.push_back(d < bd && !l.typeOf(data).isDynamicDim(d)
                        ? l.dim(data, d)
                        : l.dim(indices, d));
  for (int64_t d = bd + m; d < r; ++d)
    sizes.push_back(l.dim(data, d));
  return l.done(
      l.generic(rt, l.sizesOf(rt, sizes), {}, {},
                [&](ImplicitLocOpBuilder &b, ValueRange) {
                  SmallVector<Value> o;
                  for (int64_t d = 0; d < R; ++d)
                    o.push_back(linalg::IndexOp::create(b, d));
                  SmallVector<Value> at(o.begin(), o.begin() + bd);
                  SmallVector<Value> tuple(o.begin(), o.begin() + (q - 1));
                  tuple.push_back(Value());
                  for (int64_t j = 0; j < m; ++j) {
                    tuple.back() = cidx(b, j);
                    at.push_back(clampedIndex(
                        b, tensor::ExtractOp::create(b, indices, tuple), n[j]));
                  }
                  at.append(o.begin() + (q - 1), o.end());
                  return tensor::ExtractOp::create(b, data, at);
                }));
}

//===----------------------------------------------------------------------===//
// ScatterND
//===----------------------------------------------------------------------===//

LogicalResult lower(onnx::ScatterNDOp op, Lowerer &l) {
  Value data = l.in[0], indices = l.in[1], updates = l.in[2];
  auto red = reductionOf(l, op.getReduction());
  if (failed(red))
    return failure();
  RankedTensorType dt = l.typeOf(data);
  int64_t r = dt.getRank(), q = l.rankOf(indices), u = l.rankOf(updates);
  if (q < 1)
    return l.fail("indices of rank 0");
  // k = indices.shape[-1], the length of an index tuple: updates have the
  // shape indices.shape[:-1] + data.shape[k:], of rank q - 1 + r - k.
  int64_t k = q - 1 + r - u;
  int64_t known = l.typeOf(indices).getDimSize(q - 1);
  if (!ShapedType::isDynamic(known) && known != k)
    return l.fail(
        "updates of rank " + Twine(u) + " for index tuples of " + Twine(known) +
        " elements (not q - 1 + r - k = " + Twine(q - 1 + r - known) + ")");
  if (k < 0 || k > r)
    return l.fail("indices.shape[-1] = " + Twine(k) +
                  " not in [0, rank(data)]");
  std::string w = where(op);
  if (failed(
          checkDim(l, indices, q - 1, l.idx(k), false,
                   "indices.shape[-1] of another size",
                   "gatec: indices.shape[-1] is not " + std::to_string(k) + w)))
    return failure();
  std::string shapes =
      "updates of another shape than indices.shape[:-1] + data.shape[" +
      std::to_string(k) + ":]";
  for (int64_t d = 0; d < q - 1; ++d)
    if (failed(checkDim(l, updates, d, l.dim(indices, d), false, shapes,
                        "gatec: " + shapes + w)))
      return failure();
  for (int64_t d = k; d < r; ++d)
    if (failed(checkDim(l, updates, q - 1 + d - k, l.dim(data, d), false,
                        shapes, "gatec: " + shapes + w)))
      return failure();
  for (int64_t j = 0; j < k; ++j)
    if (failed(checkIndices(l, op.getIndices(), indices, j, k, data, j)))
      return failure();
  SmallVector<Value> n, tuples;
  for (int64_t j = 0; j < k; ++j)
    n.push_back(l.val(l.dim(data, j)));
  for (int64_t d = 0; d < q - 1; ++d)
    tuples.push_back(l.val(l.dim(indices, d)));
  // One iteration per element of a slice data[i_0, ..., i_{k-1}, ...]: its
  // part, data[:, ..., :, s...], is updated by each index tuple in turn.
  SmallVector<OpFoldResult> slice;
  for (int64_t d = k; d < r; ++d)
    slice.push_back(l.dim(data, d));
  auto partType =
      RankedTensorType::get(dt.getShape().take_front(k), dt.getElementType());
  SmallVector<OpFoldResult> lead;
  for (int64_t d = 0; d < k; ++d)
    lead.push_back(l.dim(data, d));
  Reduction how = *red;
  return l.done(scatterLoop(
      l, data, slice, partType,
      [&](ValueRange ivs, SmallVectorImpl<OpFoldResult> &offsets,
          SmallVectorImpl<OpFoldResult> &sizes) {
        offsets.assign(k, l.idx(0));
        sizes.assign(lead.begin(), lead.end());
        for (Value iv : ivs) {
          offsets.push_back(iv);
          sizes.push_back(l.idx(1));
        }
      },
      [&](ImplicitLocOpBuilder &ib, ValueRange s, Value part) {
        return sequentialLoops(
            ib, tuples, part,
            [&](ImplicitLocOpBuilder &b, ValueRange t, Value cur) -> Value {
              SmallVector<Value> tuple(t.begin(), t.end()), at;
              tuple.push_back(Value());
              for (int64_t j = 0; j < k; ++j) {
                tuple.back() = cidx(b, j);
                at.push_back(clampedIndex(
                    b, tensor::ExtractOp::create(b, indices, tuple), n[j]));
              }
              SmallVector<Value> ua(t.begin(), t.end());
              ua.append(s.begin(), s.end());
              Value v = tensor::ExtractOp::create(b, updates, ua);
              if (how != Reduction::None)
                v = combine(b, how, tensor::ExtractOp::create(b, cur, at), v);
              return tensor::InsertOp::create(b, v, cur, at);
            });
      }));
}

//===----------------------------------------------------------------------===//
// ScatterElements
//===----------------------------------------------------------------------===//

LogicalResult lower(onnx::ScatterElementsOp op, Lowerer &l) {
  Value data = l.in[0], indices = l.in[1], updates = l.in[2];
  auto red = reductionOf(l, op.getReduction());
  if (failed(red))
    return failure();
  RankedTensorType dt = l.typeOf(data);
  int64_t r = dt.getRank();
  if (l.rankOf(indices) != r || l.rankOf(updates) != r)
    return l.fail("data, indices and updates of different ranks");
  auto ax = normAxis((int64_t)op.getAxis(), r);
  if (!ax)
    return l.fail("axis out of range");
  int64_t a = *ax;
  std::string w = where(op);
  for (int64_t d = 0; d < r; ++d) {
    if (failed(checkDim(l, updates, d, l.dim(indices, d), false,
                        "indices and updates of different shapes",
                        "gatec: indices and updates of different shapes" + w)))
      return failure();
    if (d != a && failed(checkDim(l, indices, d, l.dim(data, d), true,
                                  "indices larger than data in dim " + Twine(d),
                                  "gatec: indices larger than data in dim " +
                                      std::to_string(d) + w)))
      return failure();
  }
  if (failed(checkIndices(l, op.getIndices(), indices, -1, 0, data, a)))
    return failure();
  OpFoldResult na = l.dim(data, a);
  Value n = l.val(na);
  Value len = l.val(l.dim(indices, a));
  // One iteration per line of updates across the axis: its part of data,
  // the line at the same position, is updated by the line's elements in
  // turn.
  SmallVector<OpFoldResult> lines;
  for (int64_t d = 0; d < r; ++d)
    if (d != a)
      lines.push_back(l.dim(indices, d));
  auto partType =
      RankedTensorType::get({dt.getDimSize(a)}, dt.getElementType());
  Reduction how = *red;
  // The position in an r-dim tensor of line `ivs`, `x` along the axis.
  auto position = [&](ValueRange ivs, Value x) {
    SmallVector<Value> at(ivs.begin(), ivs.end());
    at.insert(at.begin() + a, x);
    return at;
  };
  return l.done(scatterLoop(
      l, data, lines, partType,
      [&](ValueRange ivs, SmallVectorImpl<OpFoldResult> &offsets,
          SmallVectorImpl<OpFoldResult> &sizes) {
        for (Value iv : ivs) {
          offsets.push_back(iv);
          sizes.push_back(l.idx(1));
        }
        offsets.insert(offsets.begin() + a, l.idx(0));
        sizes.insert(sizes.begin() + a, na);
      },
      [&](ImplicitLocOpBuilder &ib, ValueRange ivs, Value part) {
        return sequentialLoops(
            ib, {len}, part,
            [&](ImplicitLocOpBuilder &b, ValueRange j, Value cur) -> Value {
              SmallVector<Value> at = position(ivs, j[0]);
              Value i =
                  clampedIndex(b, tensor::ExtractOp::create(b, indices, at), n);
              Value v = tensor::ExtractOp::create(b, updates, at);
              if (how != Reduction::None)
                v = combine(b, how, tensor::ExtractOp::create(b, cur, i), v);
              return tensor::InsertOp::create(b, v, cur, i);
            });
      }));
}

} // namespace gatec::conversion::onnx_to_linalg
