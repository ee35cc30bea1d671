//===- Broadcast.cpp - ONNX multidirectional broadcasting -----------------===//
#include "passes/common/Broadcast.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/SmallBitVector.h"
#include <optional>
#include <string>

using namespace mlir;

namespace gatec::common {
namespace {

/// Marks the size comparison of a run-time broadcast (broadcastDim).
constexpr llvm::StringLiteral kCheckAttr = "gatec.broadcast_check";

/// A size: an index value or attribute, or dim `dim` of a shaped value.
struct Size {
  OpFoldResult value;
  std::optional<int64_t> dim;
};

/// What a size is known to be, found by following the ops that pass sizes
/// on unchanged: a constant, a function-argument dim (named by its ONNX
/// dim_param where it has one: the runtime checks that equal names have
/// equal sizes), or, where the chain ends, an opaque value and dim. Equal
/// roots are equal sizes at run time. (A walk, not value-bounds analysis:
/// that builds a constraint system over the whole backward slice for every
/// query, which took 12 s on hybrid_qwen3next.)
struct Root {
  std::optional<int64_t> constant;
  std::string param;
  Value value;
  int64_t dim = -1;
  bool operator==(const Root &o) const {
    return constant == o.constant && param == o.param && value == o.value &&
           dim == o.dim;
  }
};

Root constantRoot(int64_t c) { return Root{c, "", Value(), -1}; }
Root opaqueRoot(Value v, int64_t dim = -1) {
  return Root{std::nullopt, "", v, dim};
}

/// Whether `v` is an argument of the enclosing function.
bool isFunctionArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa_and_nonnull<func::FuncOp>(arg.getOwner()->getParentOp());
}

/// Dim `dim` of a function argument: its dim_param, else itself.
Root argumentRoot(BlockArgument arg, int64_t dim) {
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto params =
          fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "onnx.dim_params"))
    if (dim < (int64_t)params.size())
      if (auto p = dyn_cast<StringAttr>(params[dim]); p && !p.empty())
        return Root{std::nullopt, p.str(), Value(), -1};
  return opaqueRoot(arg, dim);
}

/// Finds roots, remembering those of the values it has visited: a size
/// is often built from the same sizes along several paths (each side of a
/// broadcast select is itself a select over the previous layer's sizes),
/// so an unremembered walk is exponential in the depth of the model (12
/// layers took minutes). One finder per query: the IR does not change
/// while it lives.
class RootFinder {
public:
  Root ofDim(Value v, int64_t dim) {
    auto key = std::make_pair(v, dim);
    if (auto it = dims.find(key); it != dims.end())
      return it->second;
    Root r = walkDim(v, dim);
    dims[key] = r;
    return r;
  }
  Root ofIndex(OpFoldResult f) {
    if (std::optional<int64_t> c = getConstantIntValue(f))
      return constantRoot(*c);
    auto v = cast<Value>(f);
    if (auto it = indices.find(v); it != indices.end())
      return it->second;
    Root r = walkIndex(v);
    indices[v] = r;
    return r;
  }

private:
  Root walkDim(Value v, int64_t dim);
  Root walkIndex(Value v);
  llvm::DenseMap<std::pair<Value, int64_t>, Root> dims;
  llvm::DenseMap<Value, Root> indices;
};

/// The root of an index value.
Root RootFinder::walkIndex(Value v) {
  if (auto d = v.getDefiningOp<tensor::DimOp>())
    if (std::optional<int64_t> i = d.getConstantIndex())
      return ofDim(d.getSource(), *i);
  // A broadcast size (a == 1 ? b : a) whose sides have become provably
  // equal (an operand was still an unlowered op when it was built) is a.
  if (auto sel = v.getDefiningOp<arith::SelectOp>())
    if (auto c = sel.getCondition().getDefiningOp<arith::CmpIOp>();
        c && c.getPredicate() == arith::CmpIPredicate::eq &&
        c.getLhs() == sel.getFalseValue() &&
        isConstantIntValue(c.getRhs(), 1)) {
      Root a = ofIndex(sel.getFalseValue());
      if (ofIndex(sel.getTrueValue()) == a)
        return a;
    }
  return opaqueRoot(v);
}

/// The source dim of result dim `dim` of a collapse_shape, where its group
/// has one dim that is not statically 1.
std::optional<int64_t> collapsedSource(tensor::CollapseShapeOp c, int64_t dim) {
  std::optional<int64_t> only;
  // getReassociationIndices() returns a temporary: keep it alive.
  SmallVector<ReassociationIndices> groups = c.getReassociationIndices();
  for (int64_t s : groups[dim]) {
    if (c.getSrcType().getDimSize(s) == 1)
      continue;
    if (only)
      return std::nullopt;
    only = s;
  }
  return only;
}

/// The root of dim `dim` of the tensor `v`.
Root RootFinder::walkDim(Value v, int64_t dim) {
  while (true) {
    auto t = cast<ShapedType>(v.getType());
    if (!t.isDynamicDim(dim))
      return constantRoot(t.getDimSize(dim));
    if (isFunctionArgument(v))
      return argumentRoot(cast<BlockArgument>(v), dim);
    Operation *op = v.getDefiningOp();
    if (!op)
      return opaqueRoot(v, dim);
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
      continue;
    }
    if (auto c = dyn_cast<tensor::CastOp>(op)) {
      v = c.getSource();
      continue;
    }
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
      std::optional<int64_t> s = collapsedSource(c, dim);
      if (!s)
        return opaqueRoot(v, dim);
      v = c.getSrc();
      dim = *s;
      continue;
    }
    if (auto e = dyn_cast<tensor::EmptyOp>(op))
      return ofIndex(e.getDynamicSize(dim));
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
      return ofIndex(e.getMixedOutputShape()[dim]);
    if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
      // A dim other than the concatenated one is every input's.
      if ((int64_t)c.getDim() == dim)
        return opaqueRoot(v, dim);
      v = c.getInputs().front();
      continue;
    }
    if (auto a = dyn_cast<gated::AttentionOp>(op); a && dim == 0) {
      // B is the broadcast of every operand's batch: their common root
      // where they all have one (a statically-1 operand does not change
      // it). The other dims are an operand's (below).
      std::optional<Root> common;
      SmallVector<Value> batched{a.getQuery(), a.getKey(), a.getValue()};
      if (a.getGate())
        batched.push_back(a.getGate());
      if (a.getMask() && cast<ShapedType>(a.getMask().getType()).getRank() == 4)
        batched.push_back(a.getMask());
      for (Value x : batched) {
        if (cast<ShapedType>(x.getType()).getDimSize(0) == 1)
          continue;
        Root r = ofDim(x, 0);
        if (common && !(*common == r))
          return opaqueRoot(v, dim);
        common = r;
      }
      return common ? *common : constantRoot(1);
    }
    if (auto ds = dyn_cast<DimSourceOpInterface>(op)) {
      auto [src, d] = ds.getDimSource(cast<OpResult>(v).getResultNumber(), dim);
      if (!src)
        return opaqueRoot(v, dim);
      v = src;
      dim = d;
      continue;
    }
    if (auto x = dyn_cast<tensor::ExtractSliceOp>(op)) {
      llvm::SmallBitVector dropped = x.getDroppedDims();
      SmallVector<OpFoldResult> sizes = x.getMixedSizes();
      for (int64_t i = 0, k = -1; i < (int64_t)sizes.size(); ++i)
        if (!dropped[i] && ++k == dim)
          return ofIndex(sizes[i]);
    }
    return opaqueRoot(v, dim);
  }
}

Root rootOf(RootFinder &finder, Size s) {
  if (s.dim)
    return finder.ofDim(cast<Value>(s.value), *s.dim);
  return finder.ofIndex(s.value);
}

/// Whether two sizes are provably equal at run time.
bool provablyEqual(Size a, Size b) {
  RootFinder finder;
  return rootOf(finder, a) == rootOf(finder, b);
}

/// The message of the check that a run-time size broadcasts.
std::string mismatchMessage(Location loc, int64_t dim) {
  return "gatec: run-time sizes that do not broadcast (neither equal nor 1) "
         "in dim " +
         std::to_string(dim) + " of an operand of " + describeOp(loc);
}

/// `in` (tensor type t) broadcast along dim `i` to `size`: a copy whose
/// dim `i` has `size` elements, all equal to the operand's only one.
Value broadcastCopy(OpBuilder &b, Location loc, Value in, int64_t i,
                    Value size) {
  auto t = cast<RankedTensorType>(in.getType());
  int64_t r = t.getRank();
  SmallVector<Value> dyn;
  for (int64_t k = 0; k < r; ++k)
    if (t.isDynamicDim(k))
      dyn.push_back(k == i ? size : tensor::DimOp::create(b, loc, in, k));
  Value init = tensor::EmptyOp::create(b, loc, t, dyn);
  AffineMap id = b.getMultiDimIdentityMap(r);
  AffineMap read =
      id.replace(b.getAffineDimExpr(i), b.getAffineConstantExpr(0), r, 0);
  SmallVector<utils::IteratorType> it(r, utils::IteratorType::parallel);
  return linalg::GenericOp::create(b, loc, TypeRange{t}, ValueRange{in},
                                   ValueRange{init},
                                   ArrayRef<AffineMap>{read, id}, it,
                                   [](OpBuilder &nb, Location l, ValueRange a) {
                                     linalg::YieldOp::create(nb, l, a[0]);
                                   })
      .getResult(0);
}

/// `in` broadcast at run time along its dynamic dim `i` to `size`: checks
/// that the dim is 1 or `size`, then yields a broadcast copy where it is 1
/// and `size` is not, otherwise `in` itself (no copy).
Value broadcastDim(OpBuilder &b, Location loc, Value in, int64_t i,
                   Value size) {
  Value n = tensor::DimOp::create(b, loc, in, i);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, size);
  // Found again by foldProvableBroadcastChecks once the operands are lowered.
  same->setAttr(kCheckAttr, b.getUnitAttr());
  Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, one);
  cf::AssertOp::create(b, loc, arith::OrIOp::create(b, loc, isOne, same),
                       mismatchMessage(loc, i));
  Value differ = arith::XOrIOp::create(
      b, loc, same, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  Value need = arith::AndIOp::create(b, loc, isOne, differ);
  auto ifOp = scf::IfOp::create(
      b, loc, need,
      [&](OpBuilder &nb, Location l) {
        scf::YieldOp::create(nb, l, broadcastCopy(nb, l, in, i, size));
      },
      [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, in); });
  return ifOp.getResult(0);
}

} // namespace

bool provablySameSize(Value v, int64_t i, OpFoldResult size) {
  return provablyEqual(Size{v, i}, Size{size, std::nullopt});
}

OpFoldResult broadcastSize(OpBuilder &b, Location loc,
                           ArrayRef<std::pair<Value, int64_t>> dims) {
  // One dim of each class of provably equal sizes; a static size other
  // than 1 is the result.
  SmallVector<std::pair<Value, int64_t>> reps;
  for (auto [v, i] : dims) {
    int64_t s = cast<RankedTensorType>(v.getType()).getDimSize(i);
    if (s == 1)
      continue;
    if (!ShapedType::isDynamic(s))
      return b.getIndexAttr(s);
    if (llvm::none_of(reps, [&, v = v, i = i](auto r) {
          return provablyEqual(Size{r.first, r.second}, Size{v, i});
        }))
      reps.push_back({v, i});
  }
  if (reps.empty())
    return b.getIndexAttr(1);
  Value s = tensor::DimOp::create(b, loc, reps[0].first, reps[0].second);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [v, i] : llvm::drop_begin(reps)) {
    Value n = tensor::DimOp::create(b, loc, v, i);
    Value isOne =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s, one);
    s = arith::SelectOp::create(b, loc, isOne, n, s);
  }
  return s;
}

Value checkBroadcastDim(OpBuilder &b, Location loc, Value in, int64_t i,
                        OpFoldResult size) {
  Value n = tensor::DimOp::create(b, loc, in, i);
  Value s = getValueOrCreateConstantIndexOp(b, loc, size);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, s);
  Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, one);
  cf::AssertOp::create(b, loc, arith::OrIOp::create(b, loc, isOne, same),
                       mismatchMessage(loc, i));
  return isOne;
}

void checkEqualDim(OpBuilder &b, Location loc, Value in, int64_t i,
                   OpFoldResult size) {
  if (provablySameSize(in, i, size))
    return;
  Value n = tensor::DimOp::create(b, loc, in, i);
  Value s = getValueOrCreateConstantIndexOp(b, loc, size);
  cf::AssertOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, s),
      "gatec: run-time sizes that differ in contraction dim " +
          std::to_string(i) + " of an operand of " + describeOp(loc));
}

SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType out, ValueRange ins) {
  int64_t rank = out.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!out.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(out.getDimSize(d)));
      continue;
    }
    SmallVector<std::pair<Value, int64_t>> dims;
    for (Value v : ins) {
      int64_t i = d - (rank - cast<RankedTensorType>(v.getType()).getRank());
      if (i >= 0)
        dims.push_back({v, i});
    }
    sizes.push_back(broadcastSize(b, loc, dims));
  }
  return sizes;
}

Value broadcastDimsAtRunTime(OpBuilder &b, Location loc, Value in,
                             ArrayRef<int64_t> outDims,
                             ArrayRef<int64_t> outShape,
                             ArrayRef<OpFoldResult> sizes) {
  auto t = cast<RankedTensorType>(in.getType());
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t d = outDims[i];
    // A static output size of 1 leaves the operand nothing but 1.
    if (d < 0 || !t.isDynamicDim(i) || outShape[d] == 1 ||
        provablySameSize(in, i, sizes[d]))
      continue;
    in = broadcastDim(b, loc, in, i,
                      getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
  }
  return in;
}

Value broadcastAtRunTime(OpBuilder &b, Location loc, Value in,
                         ArrayRef<int64_t> outShape,
                         ArrayRef<OpFoldResult> sizes) {
  int64_t r = cast<RankedTensorType>(in.getType()).getRank();
  SmallVector<int64_t> outDims;
  for (int64_t i = 0; i < r; ++i)
    outDims.push_back((int64_t)outShape.size() - r + i);
  return broadcastDimsAtRunTime(b, loc, in, outDims, outShape, sizes);
}

/// The single user of `v` of type OpT, if that is its only use.
template <typename OpT> OpT soleUser(Value v) {
  return v.hasOneUse() ? dyn_cast<OpT>(*v.getUsers().begin()) : OpT();
}

/// Removes the run-time broadcast of one check whose sizes are now
/// provably equal: the assert, and the scf.if (its operand instead).
void foldCheck(arith::CmpIOp same) {
  arith::OrIOp ok;
  arith::XOrIOp differ;
  for (Operation *u : same->getUsers()) {
    if (auto o = dyn_cast<arith::OrIOp>(u))
      ok = o;
    else if (auto x = dyn_cast<arith::XOrIOp>(u))
      differ = x;
  }
  if (!ok || !differ)
    return;
  auto check = soleUser<cf::AssertOp>(ok.getResult());
  auto need = soleUser<arith::AndIOp>(differ.getResult());
  auto ifOp = need ? soleUser<scf::IfOp>(need.getResult()) : scf::IfOp();
  if (!check || !ifOp || ifOp.getNumResults() != 1)
    return;
  ifOp.getResult(0).replaceAllUsesWith(ifOp.elseYield().getOperand(0));
  ifOp.erase();
  check.erase();
  // The comparisons, now unused; `same` last (erased by the caller).
  for (Operation *op :
       {need.getOperation(), differ.getOperation(), ok.getOperation()})
    if (op->use_empty())
      op->erase();
}

void foldProvableBroadcastChecks(Operation *root) {
  SmallVector<arith::CmpIOp> checks;
  root->walk([&](arith::CmpIOp c) {
    if (c->hasAttr(kCheckAttr))
      checks.push_back(c);
  });
  for (arith::CmpIOp same : checks) {
    same->removeAttr(kCheckAttr);
    if (!provablyEqual(Size{same.getLhs(), std::nullopt},
                       Size{same.getRhs(), std::nullopt}))
      continue;
    foldCheck(same);
    Value n = same.getLhs();
    if (same->use_empty())
      same.erase();
    for (Operation *u : llvm::make_early_inc_range(n.getUsers()))
      if (isa<arith::CmpIOp>(u) && u->use_empty())
        u->erase();
    if (Operation *def = n.getDefiningOp(); def && def->use_empty())
      def->erase();
  }
}

} // namespace gatec::common
