//===- DistributeToThreads.cpp - --distribute-to-threads ------------------===//
//
// Block-level scf.forall bodies as thread-level work: linalg ops as cyclic
// thread loops, scratch buffers as per-block slices of one buffer, other
// writes on one thread. The result is still plain scf/memref IR that the
// CPU path runs, so the mapping is checked numerically without a GPU.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/MmaSync.h"
#include "passes/gpu/Passes.h"
#include "passes/gpu/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_DISTRIBUTETOTHREADS
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;
using gatec::gpu::bufferRoot;

namespace {
constexpr int64_t kScratchAlign = 64;
/// Outputs one thread computes together in a reduction (outputsPerThread).
constexpr int64_t kOutputsPerThread = 4;

/// Does `op` (or an op nested in it) write memory other than by allocating?
bool writesMemory(Operation *op) {
  bool writes = false;
  op->walk([&](Operation *nested) {
    auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!iface) {
      if (!nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
          !isMemoryEffectFree(nested))
        writes = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (auto &e : effects)
      if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
        writes = true;
  });
  return writes;
}

bool isDistributable(Operation *op) {
  return isa<memref::CopyOp>(op) ||
         (isa<linalg::LinalgOp>(op) &&
          cast<linalg::LinalgOp>(op).hasPureBufferSemantics());
}

bool containsDistributable(Operation *op) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (nested != op && isDistributable(nested))
      found = true;
  });
  return found;
}

ArrayAttr threadMapping(MLIRContext *ctx) {
  return ArrayAttr::get(ctx, {mlir::gpu::GPUThreadMappingAttr::get(
                                 ctx, mlir::gpu::MappingId::DimX)});
}

/// The indices of `map` (an operand's indexing map) at loop ivs `ivs`.
SmallVector<Value> operandIndices(OpBuilder &b, Location loc, AffineMap map,
                                  ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (unsigned k = 0; k < map.getNumResults(); ++k) {
    AffineExpr e = map.getResult(k);
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      idx.push_back(ivs[d.getPosition()]);
      continue;
    }
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      idx.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
      continue;
    }
    idx.push_back(
        affine::AffineApplyOp::create(b, loc, map.getSubMap({k}), ivs));
  }
  return idx;
}

/// Emits the payload of `op` at loop ivs `ivs` with the outputs' current
/// values `outs`; returns the yielded values.
SmallVector<Value> emitPayload(OpBuilder &b, Location loc, linalg::LinalgOp op,
                               ArrayRef<Value> ivs, ValueRange outs) {
  IRMapping map;
  Block *body = op.getBlock();
  for (OpOperand *in : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(in);
    if (!isa<MemRefType>(in->get().getType())) {
      map.map(arg, in->get());
      continue;
    }
    if (arg.use_empty())
      continue;
    map.map(arg,
            memref::LoadOp::create(
                b, loc, in->get(),
                operandIndices(b, loc, op.getMatchingIndexingMap(in), ivs)));
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    map.map(op.getMatchingBlockArgument(&init), outs[i]);
  for (Operation &nested : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(nested, map);
  }
  SmallVector<Value> results;
  for (Value v : body->getTerminator()->getOperands())
    results.push_back(map.lookupOrDefault(v));
  return results;
}

/// How many consecutive outputs along the innermost parallel dimension one
/// thread computes together in a reduction: the operands that do not vary
/// along it (the A row of a GEMM) are then loaded once for all of them. 1
/// where that dimension is not a static multiple of kOutputsPerThread or
/// the op would keep fewer elements than threads busy.
int64_t outputsPerThread(linalg::LinalgOp op, ArrayRef<unsigned> par,
                         ArrayRef<unsigned> red, int64_t threads) {
  if (red.empty() || par.empty())
    return 1;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  int64_t inner = sizes[par.back()];
  if (ShapedType::isDynamic(inner) || inner % kOutputsPerThread != 0)
    return 1;
  int64_t total = 1;
  for (unsigned d : par) {
    if (ShapedType::isDynamic(sizes[d]))
      return kOutputsPerThread; // large enough to fill the block
    total *= sizes[d];
  }
  return total / kOutputsPerThread >= threads ? kOutputsPerThread : 1;
}

/// A grid-stride block loop's share of an op: this block's index and the
/// number of blocks.
struct GridStride {
  Value block, blocks;
};

/// Replaces linalg op `op` (on buffers) by a thread-level scf.forall of
/// `threads` threads that cover its parallel iteration space cyclically,
/// in groups of outputsPerThread consecutive elements for reductions; with
/// `grid`, the threads of all the blocks cover it together.
void distributeLinalg(OpBuilder &b, linalg::LinalgOp op, int64_t threads,
                      std::optional<GridStride> grid = std::nullopt) {
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<unsigned> par, red;
  for (unsigned d = 0; d < iters.size(); ++d)
    (iters[d] == utils::IteratorType::parallel ? par : red).push_back(d);
  int64_t group = outputsPerThread(op, par, red, threads);
  SmallVector<OpFoldResult> parSizes;
  OpFoldResult total = b.getIndexAttr(1);
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  for (unsigned d : par) {
    OpFoldResult size = ranges[d].size;
    if (d == par.back() && group > 1)
      size = affine::makeComposedFoldedAffineApply(b, loc, s0.floorDiv(group),
                                                   {size});
    parSizes.push_back(size);
    total =
        affine::makeComposedFoldedAffineApply(b, loc, s0 * s1, {total, size});
  }
  Value totalV = getValueOrCreateConstantIndexOp(b, loc, total);
  Value step = arith::ConstantIndexOp::create(b, loc, threads);
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(threads)}, ValueRange{},
      threadMapping(b.getContext()));
  b.setInsertionPointToStart(forall.getBody());
  Value tid = forall.getInductionVar(0);
  if (grid) {
    AffineExpr d0, d1;
    bindDims(b.getContext(), d0, d1);
    tid = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(2, 0, d0 * threads + d1), {grid->block, tid});
    step = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(1, 0, d0 * threads), {grid->blocks});
  }
  auto elems = scf::ForOp::create(b, loc, tid, totalV, step);
  b.setInsertionPointToStart(elems.getBody());
  SmallVector<Value> ivs(iters.size());
  if (!par.empty()) {
    auto delin = affine::AffineDelinearizeIndexOp::create(
        b, loc, elems.getInductionVar(), parSizes, /*hasOuterBound=*/true);
    for (auto [k, d] : llvm::enumerate(par))
      ivs[d] = delin.getResult(k);
  }
  // The innermost parallel index of each output of the group.
  SmallVector<Value> innerIvs;
  if (group == 1) {
    innerIvs.push_back(par.empty() ? Value() : ivs[par.back()]);
  } else {
    AffineExpr d0;
    bindDims(b.getContext(), d0);
    for (int64_t j = 0; j < group; ++j)
      innerIvs.push_back(affine::AffineApplyOp::create(
          b, loc, AffineMap::get(1, 0, d0 * group + j), ivs[par.back()]));
  }
  auto atOutput = [&](int64_t j) {
    if (!par.empty())
      ivs[par.back()] = innerIvs[j];
  };
  // The outputs' values at these elements (read once, written once).
  unsigned nInits = op.getNumDpsInits();
  SmallVector<Value> outs;
  SmallVector<SmallVector<Value>> outIdx;
  for (int64_t j = 0; j < group; ++j) {
    atOutput(j);
    for (OpOperand &init : op.getDpsInitsMutable()) {
      outIdx.push_back(
          operandIndices(b, loc, op.getMatchingIndexingMap(&init), ivs));
      Type t = op.getMatchingBlockArgument(&init).getType();
      bool read = !red.empty() || op.payloadUsesValueFromOperand(&init);
      outs.push_back(
          read ? memref::LoadOp::create(b, loc, init.get(), outIdx.back())
                     .getResult()
               : ub::PoisonOp::create(b, loc, t).getResult());
    }
  }
  // Reductions: one sequential loop per reduction dimension, the outputs
  // carried in registers.
  std::function<SmallVector<Value>(unsigned, ValueRange)> reduce =
      [&](unsigned k, ValueRange acc) -> SmallVector<Value> {
    if (k == red.size()) {
      SmallVector<Value> next;
      for (int64_t j = 0; j < group; ++j) {
        atOutput(j);
        llvm::append_range(
            next, emitPayload(b, loc, op, ivs, acc.slice(j * nInits, nInits)));
      }
      return next;
    }
    Value lb = getValueOrCreateConstantIndexOp(b, loc, ranges[red[k]].offset);
    Value ub = getValueOrCreateConstantIndexOp(b, loc, ranges[red[k]].size);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, lb, ub, one, acc);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    ivs[red[k]] = loop.getInductionVar();
    SmallVector<Value> next = reduce(k + 1, loop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(loop.getResults());
  };
  SmallVector<Value> results = reduce(0, outs);
  for (auto [i, r] : llvm::enumerate(results))
    memref::StoreOp::create(b, loc, r, op.getDpsInits()[i % nInits], outIdx[i]);
  op->erase();
}

/// Runs `op` (which writes memory) on thread 0 of the block only.
void onOneThread(OpBuilder &b, Operation *op) {
  b.setInsertionPoint(op);
  auto forall = scf::ForallOp::create(
      b, op->getLoc(), ArrayRef<OpFoldResult>{b.getIndexAttr(1)}, ValueRange{},
      threadMapping(b.getContext()));
  op->moveBefore(forall.getBody()->getTerminator());
}

struct DistributeToThreadsPass
    : gatec::gpu::impl::DistributeToThreadsBase<DistributeToThreadsPass> {
  using Base::Base;

  /// The linear index of the current iteration of `forall`, and the number
  /// of iterations (built before the loop).
  std::pair<Value, Value> linearIteration(OpBuilder &b, scf::ForallOp forall) {
    Location loc = forall.getLoc();
    AffineExpr s0, s1, s2;
    bindSymbols(b.getContext(), s0, s1, s2);
    b.setInsertionPoint(forall);
    auto [counts, total] = gatec::gpu::iterationCounts(b, forall);
    Value totalV = getValueOrCreateConstantIndexOp(b, loc, total);
    b.setInsertionPointToStart(forall.getBody());
    OpFoldResult linear = b.getIndexAttr(0);
    for (auto [i, lb, st] :
         llvm::enumerate(forall.getMixedLowerBound(), forall.getMixedStep())) {
      OpFoldResult k = affine::makeComposedFoldedAffineApply(
          b, loc, (s0 - s1).floorDiv(s2), {forall.getInductionVar(i), lb, st});
      linear = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1 + s2,
                                                     {linear, counts[i], k});
    }
    return {getValueOrCreateConstantIndexOp(b, loc, linear), totalV};
  }

  /// The bytes of scratch buffer `a` (dynamic sizes at their value-bounds
  /// upper bound), or failure with a located error.
  FailureOr<int64_t> scratchBytes(memref::AllocOp a) {
    MemRefType t = a.getType();
    if (!t.getLayout().isIdentity() || t.getMemorySpace())
      return a.emitError("scratch buffer with a layout or memory space: "
                         "not supported by --distribute-to-threads");
    for (Operation *user : a->getUsers())
      if (isa<scf::YieldOp, func::ReturnOp, scf::ForallOp>(user) ||
          (isa<memref::StoreOp>(user) &&
           cast<memref::StoreOp>(user).getValueToStore() == a))
        return a.emitError("scratch buffer escapes its loop iteration: not "
                           "supported by --distribute-to-threads");
    int64_t elems = 1;
    unsigned dyn = 0;
    for (int64_t d : t.getShape()) {
      if (!ShapedType::isDynamic(d)) {
        elems *= d;
        continue;
      }
      FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
          presburger::BoundType::UB,
          ValueBoundsConstraintSet::Variable(a.getDynamicSizes()[dyn++]),
          /*stopCondition=*/nullptr, /*closedUB=*/true);
      if (failed(bound))
        return a.emitError("scratch buffer ")
               << t << " has no constant upper bound on its size: "
               << "not supported by --distribute-to-threads";
      elems *= std::max<int64_t>(*bound, 0);
    }
    Type e = t.getElementType();
    int64_t ebytes =
        e.isIndex() ? 8
                    : std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8);
    return llvm::alignTo(elems * ebytes, kScratchAlign);
  }

  /// Scratch buffers of the block as views of per-block slices: the first
  /// ones (in program order) that fit in `sharedMemory` bytes go to a buffer
  /// marked for workgroup memory, the rest to a global one.
  LogicalResult hoistScratch(OpBuilder &b, scf::ForallOp forall) {
    SmallVector<memref::AllocOp> allocs;
    forall.walk([&](memref::AllocOp a) { allocs.push_back(a); });
    if (allocs.empty())
      return success();
    // Per alloc: which buffer (0 global, 1 workgroup) and the offset in it.
    SmallVector<std::pair<unsigned, int64_t>> place;
    int64_t bytes[2] = {0, 0};
    bool used[2] = {false, false};
    for (memref::AllocOp a : allocs) {
      FailureOr<int64_t> n = scratchBytes(a);
      if (failed(n))
        return failure();
      unsigned kind = *n > 0 && bytes[1] + *n <= sharedMemory;
      place.push_back({kind, bytes[kind]});
      bytes[kind] += *n;
      used[kind] = true;
    }
    Location loc = forall.getLoc();
    auto [linear, count] = linearIteration(b, forall);
    // (the builder is now in the loop body, after the linear index)
    OpBuilder::InsertPoint inBody = b.saveInsertionPoint();
    Value buffer[2], base[2];
    auto i8 = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    for (unsigned kind : {0u, 1u}) {
      if (!used[kind])
        continue;
      b.setInsertionPoint(forall);
      Value size = arith::MulIOp::create(
          b, loc, count, arith::ConstantIndexOp::create(b, loc, bytes[kind]));
      auto alloc = memref::AllocOp::create(b, loc, i8, ValueRange{size},
                                           b.getI64IntegerAttr(kScratchAlign));
      if (kind == 1)
        alloc->setAttr(gatec::gpu::kWorkgroupScratchAttr,
                       b.getI64IntegerAttr(bytes[kind]));
      buffer[kind] = alloc;
      b.setInsertionPointAfter(forall);
      memref::DeallocOp::create(b, loc, alloc);
      b.restoreInsertionPoint(inBody);
      base[kind] = arith::MulIOp::create(
          b, loc, linear, arith::ConstantIndexOp::create(b, loc, bytes[kind]));
      inBody = b.saveInsertionPoint();
    }
    for (auto [a, where] : llvm::zip(allocs, place)) {
      auto [kind, off] = where;
      b.setInsertionPoint(a);
      Value shift = arith::AddIOp::create(
          b, a.getLoc(), base[kind],
          arith::ConstantIndexOp::create(b, a.getLoc(), off));
      auto view = memref::ViewOp::create(
          b, a.getLoc(), a.getType(), buffer[kind], shift, a.getDynamicSizes());
      if (kind == 1)
        view->setAttr(gatec::gpu::kWorkgroupOffsetAttr,
                      b.getI64IntegerAttr(off));
      for (Operation *user : llvm::make_early_inc_range(a->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      a.replaceAllUsesWith(view.getResult());
      a.erase();
    }
    return success();
  }

  LogicalResult distributeBlock(OpBuilder &b, Block &block,
                                std::optional<GridStride> grid = std::nullopt) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        b.setInsertionPoint(copy);
        auto l = linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                                        copy.getTarget());
        copy.erase();
        distributeLinalg(b, cast<linalg::LinalgOp>(l.getOperation()), threads,
                         grid);
        continue;
      }
      if (isDistributable(&op)) {
        auto l = cast<linalg::LinalgOp>(op);
        FailureOr<gatec::gpu::MmaContraction> m = failure();
        if (mma != "none" && threads % 32 == 0 && !grid)
          m = gatec::gpu::matchMmaContraction(l, tf32);
        if (succeeded(m)) {
          b.setInsertionPoint(l);
          auto forall = scf::ForallOp::create(
              b, l.getLoc(), ArrayRef<OpFoldResult>{b.getIndexAttr(threads)},
              ValueRange{}, threadMapping(b.getContext()));
          b.setInsertionPointToStart(forall.getBody());
          gatec::gpu::emitMmaContraction(b, l, *m, forall.getInductionVar(0),
                                         threads, mma == "emulate");
          l->erase();
          continue;
        }
        distributeLinalg(b, l, threads, grid);
        continue;
      }
      if (op.getNumRegions() && containsDistributable(&op)) {
        for (Region &r : op.getRegions())
          for (Block &nested : r)
            if (failed(distributeBlock(b, nested)))
              return failure();
        continue;
      }
      if (!writesMemory(&op))
        continue;
      if (op.getNumResults())
        return op.emitError("an op that writes memory and has results inside "
                            "a kernel: not supported by "
                            "--distribute-to-threads");
      onOneThread(b, &op);
    }
    return success();
  }

  void runOnOperation() override {
    if (threads < 1 || threads > 1024) {
      getOperation().emitError("--distribute-to-threads: threads must be in "
                               "1..1024, got ")
          << threads;
      return signalPassFailure();
    }
    if (mma != "none" && mma != "sync" && mma != "emulate") {
      getOperation().emitError("--distribute-to-threads: mma must be none, "
                               "sync or emulate, got '")
          << mma << "'";
      return signalPassFailure();
    }
    if (sharedMemory < 0 || sharedMemory > 49152) {
      getOperation().emitError("--distribute-to-threads: shared-memory must "
                               "be in 0..49152 bytes, got ")
          << sharedMemory;
      return signalPassFailure();
    }
    // Kernels are formed in the entry points; private helpers (ownership
    // deallocation's dealloc_helper) run where they are called.
    if (getOperation().isPrivate())
      return;
    OpBuilder b(&getContext());
    gatec::gpu::wrapHostOpsOnDeviceBuffers(getOperation(), threads);
    SmallVector<scf::ForallOp> kernels = gatec::gpu::blockLoops(getOperation());
    for (scf::ForallOp forall : kernels) {
      // Loops nested in a block (a producer fused into a consumer's tile)
      // run in sequence, each iteration's work spread over the threads.
      SmallVector<scf::ForallOp> nested;
      forall.getBody()->walk([&](scf::ForallOp n) { nested.push_back(n); });
      IRRewriter rewriter(&getContext());
      for (scf::ForallOp n : nested) {
        rewriter.setInsertionPoint(n);
        if (failed(scf::forallToForLoop(rewriter, n)))
          return signalPassFailure();
      }
      if (failed(hoistScratch(b, forall)))
        return signalPassFailure();
      // Every buffer allocated in the block is now a slice of the scratch
      // buffer (freed after the loop), and a buffer from outside outlives
      // the loop: no deallocation belongs in a kernel (ownership-based
      // deallocation leaves conditional ones on views).
      forall.walk([](memref::DeallocOp d) { d.erase(); });
      // With them goes the bookkeeping that decided them (the calls of
      // ownership-based deallocation's helper; it only computes flags).
      forall.walk([](func::CallOp call) {
        if (call.getCallee().starts_with("dealloc_helper"))
          call.erase();
      });
      std::optional<GridStride> grid;
      if (forall->hasAttr(gatec::gpu::kGridStrideAttr)) {
        b.setInsertionPoint(forall);
        grid = GridStride{
            forall.getInductionVar(0),
            getValueOrCreateConstantIndexOp(
                b, forall.getLoc(), forall.getMixedUpperBound().front())};
      }
      if (failed(distributeBlock(b, *forall.getBody(), grid)))
        return signalPassFailure();
    }
  }
};
} // namespace
