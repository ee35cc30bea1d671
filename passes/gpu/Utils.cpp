//===- Utils.cpp - helpers shared by the GPU mapping passes ---------------===//
#include "passes/gpu/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace gatec::gpu {

Value bufferRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    break;
  }
  return v;
}

void possibleRoots(Value v, SmallVectorImpl<Value> &roots) {
  Value root = bufferRoot(v);
  if (auto result = dyn_cast<OpResult>(root)) {
    if (auto ifOp = dyn_cast<scf::IfOp>(result.getOwner())) {
      for (Region *r : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
        if (!r->empty())
          possibleRoots(
              r->front().getTerminator()->getOperand(result.getResultNumber()),
              roots);
      return;
    }
    if (auto select = dyn_cast<arith::SelectOp>(result.getOwner())) {
      possibleRoots(select.getTrueValue(), roots);
      possibleRoots(select.getFalseValue(), roots);
      return;
    }
  }
  if (!llvm::is_contained(roots, root))
    roots.push_back(root);
}

std::pair<SmallVector<OpFoldResult>, OpFoldResult>
iterationCounts(OpBuilder &b, scf::ForallOp forall) {
  Location loc = forall.getLoc();
  AffineExpr s0, s1, s2;
  bindSymbols(b.getContext(), s0, s1, s2);
  SmallVector<OpFoldResult> counts;
  OpFoldResult total = b.getIndexAttr(1);
  for (auto [lb, ub, st] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                 forall.getMixedStep())) {
    counts.push_back(affine::makeComposedFoldedAffineApply(
        b, loc, (s0 - s1).ceilDiv(s2), {ub, lb, st}));
    total = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1,
                                                  {total, counts.back()});
  }
  return {counts, total};
}

bool isThreadLoop(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  return mapping && !mapping->empty() &&
         isa<mlir::gpu::GPUThreadMappingAttr>((*mapping)[0]);
}

SmallVector<scf::ForallOp> blockLoops(func::FuncOp f) {
  SmallVector<scf::ForallOp> loops;
  f.walk<WalkOrder::PreOrder>([&](scf::ForallOp forall) {
    if (!isThreadLoop(forall))
      loops.push_back(forall);
    return WalkResult::skip();
  });
  return loops;
}

namespace {
/// Elements per thread a grid-stride kernel aims at, and its most blocks.
constexpr int64_t kElementsPerThread = 4;
constexpr int64_t kMaxGridStrideBlocks = 65536;

/// The number of points of the parallel iteration space of a linalg op or
/// memref.copy (built at `b`), or nothing for other ops.
std::optional<OpFoldResult> parallelElements(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  OpFoldResult total = b.getIndexAttr(1);
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto t = cast<MemRefType>(copy.getTarget().getType());
    for (int64_t d = 0; d < t.getRank(); ++d)
      total = affine::makeComposedFoldedAffineApply(
          b, loc, s0 * s1,
          {total, memref::getMixedSize(b, loc, copy.getTarget(), d)});
    return total;
  }
  auto l = dyn_cast<linalg::LinalgOp>(op);
  if (!l)
    return std::nullopt;
  SmallVector<Range> ranges = l.createLoopRanges(b, loc);
  for (auto [d, it] : llvm::enumerate(l.getIteratorTypesArray()))
    if (it == utils::IteratorType::parallel)
      total = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1,
                                                    {total, ranges[d].size});
  return total;
}

bool computesOnBuffers(Operation *op) {
  return isa<memref::CopyOp, memref::StoreOp>(op) ||
         (isa<linalg::LinalgOp>(op) &&
          cast<linalg::LinalgOp>(op).hasPureBufferSemantics());
}
} // namespace

void wrapHostOpsOnDeviceBuffers(func::FuncOp f, int64_t threads) {
  llvm::DenseSet<Value> device;
  // A buffer chosen at run time (scf.if, select) is a device buffer if any
  // buffer it may be is, and then all of them are.
  auto onDevice = [&](Value v) {
    SmallVector<Value> roots;
    possibleRoots(v, roots);
    return device.contains(bufferRoot(v)) ||
           llvm::any_of(roots, [&](Value r) { return device.contains(r); });
  };
  auto addOperands = [&](Operation *op, Operation *kernel) {
    bool added = false;
    op->walk([&](Operation *nested) {
      for (Value v : nested->getOperands()) {
        if (!isa<MemRefType>(v.getType()) ||
            (kernel && kernel->isAncestor(v.getParentRegion()->getParentOp())))
          continue;
        added |= device.insert(bufferRoot(v)).second;
        SmallVector<Value> roots;
        possibleRoots(v, roots);
        for (Value r : roots)
          added |= device.insert(r).second;
      }
    });
    return added;
  };
  for (BlockArgument a : f.getArguments())
    if (isa<MemRefType>(a.getType()))
      device.insert(a);
  f.walk([&](func::ReturnOp r) { addOperands(r, nullptr); });
  for (scf::ForallOp k : blockLoops(f))
    addOperands(k, k);
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> wrap;
    f.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<scf::ForallOp>(op))
        return WalkResult::skip();
      if (computesOnBuffers(op) &&
          llvm::any_of(op->getOperands(), [&](Value v) {
            return isa<MemRefType>(v.getType()) && onDevice(v);
          }))
        wrap.push_back(op);
      return WalkResult::advance();
    });
    OpBuilder b(f.getContext());
    for (Operation *op : wrap) {
      b.setInsertionPoint(op);
      OpFoldResult blocks = b.getIndexAttr(1);
      if (auto elems = parallelElements(b, op)) {
        AffineExpr s0;
        bindSymbols(b.getContext(), s0);
        blocks = affine::makeComposedFoldedAffineMin(
            b, op->getLoc(),
            AffineMap::get(
                0, 1,
                {s0.ceilDiv(kElementsPerThread * threads),
                 getAffineConstantExpr(kMaxGridStrideBlocks, b.getContext())},
                b.getContext()),
            {*elems});
      }
      auto forall =
          scf::ForallOp::create(b, op->getLoc(), ArrayRef<OpFoldResult>{blocks},
                                ValueRange{}, std::nullopt);
      if (!isa<memref::StoreOp>(op))
        forall->setAttr(kGridStrideAttr, b.getUnitAttr());
      op->moveBefore(forall.getBody()->getTerminator());
      changed |= addOperands(op, nullptr);
    }
  }
}

} // namespace gatec::gpu
