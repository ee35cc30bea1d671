//===- MapForallToGpu.cpp - --map-forall-to-gpu ---------------------------===//
//
// Block-level scf.forall loops as gpu.launch (a linearised 1-D grid), the
// thread-level loops inside as threadIdx.x (upstream's mapping, with a
// barrier after each), constants and weights sunk into the kernels.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"
#include "passes/gpu/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_MAPFORALLTOGPU
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;

namespace {
/// Ops recomputed inside a kernel instead of passed to it: constants,
/// weights (so that outlining copies the global into the kernel's module)
/// and views.
bool sinkIntoKernel(Operation *op) {
  return isa<arith::ConstantOp, ub::PoisonOp, memref::GetGlobalOp,
             memref::DimOp, memref::CastOp, ViewLikeOpInterface>(op) &&
         !isa<memref::ViewOp>(op);
}

/// Views of the block's workgroup scratch buffer (--distribute-to-threads)
/// as views of a workgroup attribution of `launch`, cast to the generic
/// address space so their users keep their types (NVPTX infers the shared
/// space back for the loads and stores). The host buffer is freed of them.
LogicalResult useWorkgroupMemory(IRRewriter &b, mlir::gpu::LaunchOp launch) {
  SmallVector<memref::ViewOp> views;
  launch.getBody().walk([&](memref::ViewOp v) {
    if (v->hasAttr(gatec::gpu::kWorkgroupOffsetAttr))
      views.push_back(v);
  });
  if (views.empty())
    return success();
  Value source = views.front().getSource();
  auto scratch = source.getDefiningOp<memref::AllocOp>();
  IntegerAttr bytes = scratch ? scratch->getAttrOfType<IntegerAttr>(
                                    gatec::gpu::kWorkgroupScratchAttr)
                              : IntegerAttr();
  for (memref::ViewOp v : views)
    if (!bytes || v.getSource() != source ||
        !v->getAttrOfType<IntegerAttr>(gatec::gpu::kWorkgroupOffsetAttr))
      return v.emitError("a view marked ")
             << gatec::gpu::kWorkgroupOffsetAttr
             << " must view the block loop's one buffer marked "
             << gatec::gpu::kWorkgroupScratchAttr
             << " (as --distribute-to-threads leaves them)";
  auto space = mlir::gpu::AddressSpaceAttr::get(
      b.getContext(), mlir::gpu::AddressSpace::Workgroup);
  BlockArgument shared = launch.addWorkgroupAttribution(
      MemRefType::get({bytes.getInt()}, b.getI8Type(),
                      MemRefLayoutAttrInterface{}, space),
      scratch.getLoc());
  for (memref::ViewOp v : views) {
    b.setInsertionPoint(v);
    MemRefType t = v.getType();
    auto offset =
        v->getAttrOfType<IntegerAttr>(gatec::gpu::kWorkgroupOffsetAttr);
    auto inShared = memref::ViewOp::create(
        b, v.getLoc(),
        MemRefType::get(t.getShape(), t.getElementType(), t.getLayout(), space),
        shared, arith::ConstantIndexOp::create(b, v.getLoc(), offset.getInt()),
        v.getSizes());
    b.replaceOpWithNewOp<memref::MemorySpaceCastOp>(v, t, inShared);
  }
  // The global buffer is left for the other launches that use it (none:
  // each block loop has its own), then freed of its last uses.
  if (llvm::all_of(scratch->getUsers(),
                   [](Operation *u) { return isa<memref::DeallocOp>(u); })) {
    for (Operation *u : llvm::make_early_inc_range(scratch->getUsers()))
      b.eraseOp(u);
    b.eraseOp(scratch);
  }
  return success();
}

struct MapForallToGpuPass
    : gatec::gpu::impl::MapForallToGpuBase<MapForallToGpuPass> {
  using Base::Base;

  LogicalResult mapLoop(IRRewriter &b, scf::ForallOp forall) {
    Location loc = forall.getLoc();
    b.setInsertionPoint(forall);
    AffineExpr s0, s1, s2;
    bindSymbols(b.getContext(), s0, s1, s2);
    auto [counts, total] = gatec::gpu::iterationCounts(b, forall);
    Value grid = getValueOrCreateConstantIndexOp(b, loc, total);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value nt = arith::ConstantIndexOp::create(b, loc, threads);
    // An empty grid (a dynamic size of 0) is not guarded here: CUDA rejects
    // it, and the runtime's mgpuLaunchKernel skips it instead. A guard
    // (scf.if) would put each launch in its own region, and
    // gpu-async-region synchronises the stream at the end of every region.
    auto launch = mlir::gpu::LaunchOp::create(b, loc, grid, c1, c1, nt, c1, c1);
    Block &body = launch.getBody().front();
    b.setInsertionPointToStart(&body);
    Value block = launch.getBlockIds().x;
    SmallVector<Value> ivs;
    if (counts.size() == 1) {
      ivs.push_back(block);
    } else {
      auto delin = affine::AffineDelinearizeIndexOp::create(
          b, loc, block, counts, /*hasOuterBound=*/true);
      ivs.append(delin.getResults().begin(), delin.getResults().end());
    }
    for (auto [i, lb, st] :
         llvm::enumerate(forall.getMixedLowerBound(), forall.getMixedStep()))
      ivs[i] = getValueOrCreateConstantIndexOp(
          b, loc,
          affine::makeComposedFoldedAffineApply(b, loc, s0 + s1 * s2,
                                                {lb, ivs[i], st}));
    Block *loopBody = forall.getBody();
    loopBody->getTerminator()->erase();
    for (auto [arg, iv] : llvm::zip(forall.getInductionVars(), ivs))
      arg.replaceAllUsesWith(iv);
    if (body.empty() || !isa<mlir::gpu::TerminatorOp>(body.back())) {
      b.setInsertionPointToEnd(&body);
      mlir::gpu::TerminatorOp::create(b, loc);
    }
    body.getOperations().splice(std::prev(body.end()),
                                loopBody->getOperations());
    forall.erase();
    if (failed(useWorkgroupMemory(b, launch)))
      return failure();

    DiagnosedSilenceableFailure mapped =
        transform::gpu::mapNestedForallToThreadsImpl(
            b, std::nullopt, launch, {threads, 1, 1}, /*warpSize=*/32,
            /*syncAfterDistribute=*/true);
    if (!mapped.succeeded()) {
      (void)mapped.silence();
      return launch.emitError("cannot map the block's thread loops onto ")
             << threads << " threads";
    }
    // The mapping may leave constants after the terminator.
    for (Operation &op : body)
      if (isa<mlir::gpu::TerminatorOp>(op)) {
        if (&op != &body.back())
          op.moveAfter(&body.back());
        break;
      }
    return sinkOperationsIntoLaunchOp(launch, sinkIntoKernel);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter b(&getContext());
    bool any = false;
    for (auto f : module.getOps<func::FuncOp>()) {
      for (scf::ForallOp forall : gatec::gpu::blockLoops(f)) {
        any = true;
        if (failed(mapLoop(b, forall)))
          return signalPassFailure();
      }
      WalkResult stray = f.walk([](scf::ForallOp forall) {
        forall.emitError("scf.forall left outside a kernel after "
                         "--map-forall-to-gpu (run --distribute-to-threads "
                         "first)");
        return WalkResult::interrupt();
      });
      if (stray.wasInterrupted())
        return signalPassFailure();
    }
    if (any)
      module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                      b.getUnitAttr());
  }
};
} // namespace
