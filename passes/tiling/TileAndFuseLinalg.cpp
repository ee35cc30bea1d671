//===- TileAndFuseLinalg.cpp - --tile-and-fuse-linalg ---------------------===//
//
// Row-block tiling of linalg ops on tensors into scf.forall, with their
// single-use linalg producers fused into the loop body.
//
//===----------------------------------------------------------------------===//
#include "passes/tiling/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace gatec::tiling {
#define GEN_PASS_DEF_TILEANDFUSELINALG
#include "passes/tiling/Passes.h.inc"
} // namespace gatec::tiling

using namespace mlir;

namespace {
constexpr StringLiteral kVisited = "gatec.tile_visited";

/// Tile sizes: 1 for every parallel dimension but the last two, `rows` for
/// the second-to-last, 0 (untiled) for the last and for reductions. Empty
/// when the op has fewer than two parallel dimensions, or a loop of static
/// extent 0 (an empty tensor: the op has no iterations, or, for an empty
/// reduction, only its init; MLIR's tiling cannot slice a 0-sized dim).
SmallVector<OpFoldResult> tileSizes(OpBuilder &b, linalg::LinalgOp op,
                                    int64_t rows) {
  if (llvm::is_contained(op.getStaticLoopRanges(), 0))
    return {};
  SmallVector<unsigned> parallel;
  op.getParallelDims(parallel);
  if (parallel.size() < 2)
    return {};
  SmallVector<OpFoldResult> sizes(op.getNumLoops(), b.getIndexAttr(0));
  for (size_t i = 0; i + 2 < parallel.size(); ++i)
    sizes[parallel[i]] = b.getIndexAttr(1);
  sizes[parallel[parallel.size() - 2]] = b.getIndexAttr(rows);
  return sizes;
}

/// True when the slice provably covers the whole producer result (fusing it
/// would recompute the producer in every tile).
bool isFullSlice(tensor::ExtractSliceOp slice) {
  auto type = dyn_cast<RankedTensorType>(slice.getSource().getType());
  if (!type || !type.hasStaticShape())
    return false;
  auto sizes = slice.getStaticSizes();
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (sizes[i] != type.getDimSize(i))
      return false;
  return true;
}

/// True when every size of the slice has a constant upper bound (static,
/// or a tile size min(c, ...)): a fused producer's tile is a scratch buffer
/// of the loop body, which the GPU mapping places in shared memory or in
/// per-block slices of one buffer, so it must be bounded. (A dynamic dim
/// the tiling leaves whole, e.g. the sequence of a [batch, seq] row
/// statistic tiled over batch, is not.)
bool hasBoundedSizes(tensor::ExtractSliceOp slice) {
  for (OpFoldResult size : slice.getMixedSizes()) {
    if (getConstantIntValue(size))
      continue;
    auto min = cast<Value>(size).getDefiningOp<affine::AffineMinOp>();
    if (!min || llvm::none_of(min.getMap().getResults(), [](AffineExpr e) {
          return isa<AffineConstantExpr>(e);
        }))
      return false;
  }
  return true;
}

/// A product: a reduction read by two inputs (a GEMM, a batched matmul);
/// a norm's reduction reads one.
bool isProduct(linalg::LinalgOp op) {
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  int64_t reading = 0;
  for (OpOperand *in : op.getDpsInputOperands())
    reading += llvm::any_of(red, [&](unsigned d) {
      return op.getMatchingIndexingMap(in).isFunctionOfDim(d);
    });
  return reading >= 2;
}

/// True when `op` reads, directly or through other linalg ops that only it
/// reads (up to `depth` more), a product whose readers are all linalg ops other
/// than products: fusing `op` would bring that product into the loop as well
/// (an FFN's act·mul reads the gate/up GEMM through the activation). A
/// product read by anything else (a widened projection's slices) is not
/// fused, and does not count.
bool leadsToProduct(linalg::LinalgOp op, int depth = 4) {
  for (Value v : op->getOperands()) {
    auto p = v.getDefiningOp<linalg::LinalgOp>();
    if (!p)
      continue;
    if (isProduct(p)) {
      if (llvm::all_of(p->getUsers(), [](Operation *u) {
            auto l = dyn_cast<linalg::LinalgOp>(u);
            return (l && !isProduct(l)) || isa<tensor::DimOp>(u);
          }))
        return true;
      continue;
    }
    // Only through ops that `op` alone reads (the ones fused with it).
    if (depth > 0 &&
        llvm::all_of(p->getUsers(),
                     [&](Operation *u) {
                       return u == op.getOperation() || isa<tensor::DimOp>(u);
                     }) &&
        leadsToProduct(p, depth - 1))
      return true;
  }
  return false;
}

struct TileAndFuseLinalgPass
    : gatec::tiling::impl::TileAndFuseLinalgBase<TileAndFuseLinalgPass> {
  using Base::Base;

  /// The last unvisited linalg op on tensors at the top level of `f`.
  linalg::LinalgOp nextRoot(func::FuncOp f) {
    for (Operation &o : llvm::reverse(f.getBody().front()))
      if (auto l = dyn_cast<linalg::LinalgOp>(&o))
        if (!o.hasAttr(kVisited) && l.hasPureTensorSemantics())
          return l;
    return {};
  }

  void eraseDeadOps(func::FuncOp f, RewriterBase &rewriter) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &o :
           llvm::make_early_inc_range(llvm::reverse(f.getBody().front())))
        if (isOpTriviallyDead(&o)) { // unused linalg ops, dims, slices...
          rewriter.eraseOp(&o);
          changed = true;
        }
    }
  }

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal())
      return;
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);

    RewritePatternSet cleanup(ctx);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(cleanup, ctx);
    tensor::populateMergeConsecutiveInsertExtractSlicePatterns(cleanup);
    linalg::populateSwapExtractSliceWithFillPatterns(cleanup);
    FrozenRewritePatternSet frozen(std::move(cleanup));

    // Dynamic sizes read off a producer's result (tensor.dim, e.g. the
    // loop bounds of its consumer's tiling) are not uses that keep it from
    // fusing: after each tiling they are read off its destination instead
    // (the same sizes, by the op's semantics), and it is then dead.
    RewritePatternSet dimPatterns(ctx);
    memref::populateResolveRankedShapedTypeResultDimsPatterns(dimPatterns);
    FrozenRewritePatternSet resolveDims(std::move(dimPatterns));
    while (linalg::LinalgOp root = nextRoot(f)) {
      root->setAttr(kVisited, UnitAttr::get(ctx));
      SmallVector<OpFoldResult> sizes = tileSizes(rewriter, root, rows);
      if (sizes.empty())
        continue;

      // Originals replaced by the loop: the root and each fused producer.
      llvm::SmallPtrSet<Operation *, 8> fused{root.getOperation()};
      // Producers refused for one slice stay refused for every other: a
      // producer cloned into the loop for a later slice (once its other
      // readers had been fused) would also stay outside for the slice
      // refused first, and be computed twice (a norm's residual input:
      // the residual's GEMM ran once outside the FFN's loop and again
      // inside it). Clones for several accepted slices of one producer
      // read the same slices and are merged by CSE.
      llvm::SmallPtrSet<Operation *, 8> refused;
      scf::SCFTileAndFuseOptions opts;
      opts.tilingOptions.setTileSizes(sizes).setLoopType(
          scf::SCFTilingOptions::LoopType::ForallOp);
      opts.cleanupPatterns = frozen;
      opts.setFusionControlFn(
          [&](tensor::ExtractSliceOp slice, OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            Operation *p = producer.getOwner();
            // A producer with a loop of static extent 0 (a contraction
            // over K = 0) cannot be tiled either: it stays outside.
            auto pl = dyn_cast<linalg::LinalgOp>(p);
            auto refuse = [&]() {
              refused.insert(p);
              return std::nullopt;
            };
            if (!fuseProducers || !pl || refused.contains(p) ||
                isFullSlice(slice) || !hasBoundedSizes(slice) ||
                llvm::is_contained(pl.getStaticLoopRanges(), 0))
              return refuse();
            // A fill (an accumulator's zeros) is recomputed in every loop
            // that reads it: a fill shared by two loops (CSE merges equal
            // inits) was otherwise a kernel of its own writing the whole
            // buffer, then copied tile by tile into each loop's accumulator.
            if (isa<linalg::FillOp>(p)) {
              fused.insert(p);
              return scf::SCFTileAndFuseOptions::ControlFnResult{};
            }
            // One product per loop: a second (an FFN's gate/up GEMM
            // under its down projection) would run whole in every
            // iteration of a loop over the first one's columns, so the
            // CPU micro-kernels could not spread a few rows' GEMM over
            // the threads (see --matmul-micro-kernel's split-columns).
            if (!fuseProducts && (isProduct(pl) || leadsToProduct(pl)) &&
                llvm::any_of(fused, [&](Operation *o) {
                  auto l = dyn_cast<linalg::LinalgOp>(o);
                  return o != p && l && isProduct(l);
                }))
              return refuse();
            auto loop = slice->getParentOfType<scf::ForallOp>();
            for (Operation *u : p->getUsers())
              if (!fused.contains(u) && !(loop && loop->isAncestor(u)) &&
                  !isa<tensor::DimOp>(u))
                return refuse();
            fused.insert(p);
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          });

      rewriter.setInsertionPoint(root);
      auto result = scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(root.getOperation()), opts);
      if (failed(result))
        continue; // left untiled; it still runs, on one core
      for (OpResult r : root->getResults())
        if (Value repl = result->replacements.lookup(r))
          rewriter.replaceAllUsesWith(r, repl);
      // The dims of op results, at the top level and in the new loops,
      // and the loops' ops, folded (their slice sizes and bounds): a
      // greedy rewrite of the whole function after every root is
      // quadratic in the model's depth (a 48-layer stack spent seconds
      // here).
      if (fused.size() > 1) {
        SmallVector<Operation *> ops;
        for (Operation &o : f.getBody().front())
          if (auto d = dyn_cast<tensor::DimOp>(o);
              d && isa<OpResult>(d.getSource()))
            ops.push_back(d);
        for (LoopLikeOpInterface loop : result->loops)
          loop->walk([&](Operation *o) {
            if (o != loop.getOperation())
              ops.push_back(o);
          });
        GreedyRewriteConfig config;
        config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
        (void)applyOpPatternsGreedily(ops, resolveDims, config);
      }
      eraseDeadOps(f, rewriter);
    }
    f.walk([](Operation *o) { o->removeAttr(kVisited); });
  }
};
} // namespace
