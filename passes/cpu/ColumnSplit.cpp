//===- ColumnSplit.cpp - a row block's columns spread over threads --------===//
#include "passes/cpu/ColumnSplit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace gatec::cpu {
namespace {

/// True when `v` views (through subviews) a buffer allocated inside
/// `loop`: one iteration's scratch.
bool isScratch(Value v, scf::ForallOp loop) {
  while (auto sv = v.getDefiningOp<memref::SubViewOp>())
    v = sv.getSource();
  Operation *def = v.getDefiningOp();
  return def && isa<memref::AllocOp, memref::AllocaOp>(def) &&
         loop->isProperAncestor(def);
}

/// An all-parallel generic on memrefs whose maps are projections and
/// whose output is indexed by its last loop, with no linalg.index (the
/// narrowed loop would see shifted indices).
bool isNarrowable(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() ||
      g.getNumParallelLoops() != g.getNumLoops() || g.getNumLoops() == 0)
    return false;
  unsigned last = g.getNumLoops() - 1;
  for (AffineMap m : g.getIndexingMapsArray())
    if (!m.isProjectedPermutation())
      return false;
  for (OpOperand &o : g.getDpsInitsMutable())
    if (!g.getMatchingIndexingMap(&o).isFunctionOfDim(last))
      return false;
  bool usesIndex = false;
  g.getRegion().walk([&](linalg::IndexOp) { usesIndex = true; });
  return !usesIndex;
}

/// `v` restricted to [lo, hi) along dim `pos`.
Value narrow(ImplicitLocOpBuilder &b, Value v, unsigned pos, Value lo,
             Value hi) {
  auto t = cast<MemRefType>(v.getType());
  SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)),
      sizes = memref::getMixedSizes(b, b.getLoc(), v),
      strides(t.getRank(), b.getIndexAttr(1));
  offsets[pos] = lo;
  sizes[pos] = arith::SubIOp::create(b, hi, lo).getResult();
  return memref::SubViewOp::create(b, v, offsets, sizes, strides);
}

/// omp_get_max_threads(), declared in the module once.
Value threads(ImplicitLocOpBuilder &b, Operation *in) {
  auto module = in->getParentOfType<ModuleOp>();
  constexpr StringLiteral name = "omp_get_max_threads";
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    OpBuilder mb(module.getBodyRegion());
    fn = func::FuncOp::create(mb, module.getLoc(), name,
                              mb.getFunctionType({}, {mb.getI32Type()}));
    fn.setPrivate();
  }
  Value n = func::CallOp::create(b, fn, ValueRange{}).getResult(0);
  return arith::IndexCastOp::create(b, b.getIndexType(), n);
}

} // namespace

std::optional<ColumnSplit>
planColumnSplit(Operation *gemm, ValueRange products, Operation *epilogue,
                const std::function<bool(linalg::GenericOp)> &isGemm) {
  auto loop = dyn_cast<scf::ForallOp>(gemm->getParentOp());
  if (!loop || loop.getNumResults() || loop.getMapping())
    return std::nullopt;
  ColumnSplit plan;
  plan.loop = loop;
  bool after = false;
  for (Operation &o : loop.getBody()->without_terminator()) {
    if (&o == gemm) {
      after = true;
      continue;
    }
    if (&o == epilogue ||
        isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(o) ||
        (o.getNumRegions() == 0 && isMemoryEffectFree(&o)))
      continue;
    if (auto fill = dyn_cast<linalg::FillOp>(o)) {
      Value out = fill.getOutputs()[0];
      if (isScratch(out, loop))
        continue;
      if (after || !llvm::is_contained(products, out))
        return std::nullopt;
      plan.fills.push_back(fill);
      continue;
    }
    if (auto copy = dyn_cast<memref::CopyOp>(o)) {
      if (after || !isScratch(copy.getTarget(), loop))
        return std::nullopt;
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(o);
    if (!g || isGemm(g))
      return std::nullopt;
    if (!after) {
      // A producer of the GEMM's rows (a norm, a gate): computed again for
      // each chunk, into the iteration's own buffers.
      if (!g.hasPureBufferSemantics() ||
          !llvm::all_of(g.getDpsInits(),
                        [&](Value v) { return isScratch(v, loop); }))
        return std::nullopt;
      continue;
    }
    if (!isNarrowable(g))
      return std::nullopt;
    plan.consumers.push_back(g);
  }
  return plan;
}

std::pair<Value, Value> applyColumnSplit(ColumnSplit &plan, int64_t n,
                                         int64_t nr) {
  scf::ForallOp old = plan.loop;
  ImplicitLocOpBuilder b(old.getLoc(), old);
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  auto ceilDiv = [&](Value a, Value d) -> Value {
    return arith::CeilDivUIOp::create(b, a, d);
  };
  // The chunks: as many as the threads the row blocks leave idle.
  Value iters = idx(1);
  for (auto [lb, ub, step] :
       llvm::zip(old.getMixedLowerBound(), old.getMixedUpperBound(),
                 old.getMixedStep())) {
    Value l = getValueOrCreateConstantIndexOp(b, b.getLoc(), lb),
          u = getValueOrCreateConstantIndexOp(b, b.getLoc(), ub),
          s = getValueOrCreateConstantIndexOp(b, b.getLoc(), step);
    Value span = arith::SubIOp::create(b, arith::MaxSIOp::create(b, u, l), l);
    iters = arith::MulIOp::create(b, iters, ceilDiv(span, s));
  }
  int64_t panels = (n + nr - 1) / nr;
  Value want =
      ceilDiv(threads(b, old), arith::MaxUIOp::create(b, iters, idx(1)));
  want = arith::MinUIOp::create(b, arith::MaxUIOp::create(b, want, idx(1)),
                                idx(panels));
  Value perChunk = ceilDiv(idx(panels), want); // panels per chunk
  Value chunks = ceilDiv(idx(panels), perChunk);

  SmallVector<OpFoldResult> lbs = old.getMixedLowerBound(),
                            ubs = old.getMixedUpperBound(),
                            steps = old.getMixedStep();
  lbs.push_back(b.getIndexAttr(0));
  ubs.push_back(chunks);
  steps.push_back(b.getIndexAttr(1));
  auto loop =
      scf::ForallOp::create(b, lbs, ubs, steps, ValueRange{}, std::nullopt);
  Block *body = loop.getBody();
  body->getOperations().splice(
      body->without_terminator().begin(), old.getBody()->getOperations(),
      old.getBody()->begin(), std::prev(old.getBody()->end()));
  for (auto [from, to] :
       llvm::zip(old.getInductionVars(), loop.getInductionVars()))
    from.replaceAllUsesWith(to);
  old.erase();
  plan.loop = loop;

  b.setInsertionPointToStart(body);
  Value width = arith::MulIOp::create(b, perChunk, idx(nr));
  Value lo = arith::MulIOp::create(b, loop.getInductionVars().back(), width);
  Value hi =
      arith::MinUIOp::create(b, arith::AddIOp::create(b, lo, width), idx(n));

  for (linalg::FillOp fill : plan.fills) {
    b.setInsertionPoint(fill);
    Value out = fill.getOutputs()[0];
    unsigned last = cast<MemRefType>(out.getType()).getRank() - 1;
    fill.getDpsInitsMutable()[0].set(narrow(b, out, last, lo, hi));
  }
  for (linalg::GenericOp g : plan.consumers) {
    b.setInsertionPoint(g);
    unsigned last = g.getNumLoops() - 1;
    for (OpOperand &o : g->getOpOperands()) {
      AffineMap m = g.getMatchingIndexingMap(&o);
      for (unsigned r = 0; r < m.getNumResults(); ++r)
        if (m.getDimPosition(r) == last)
          o.set(narrow(b, o.get(), r, lo, hi));
    }
  }
  return {lo, hi};
}

} // namespace gatec::cpu
