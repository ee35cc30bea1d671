//===- ElideHostWaits.cpp - --elide-host-waits ----------------------------===//
//
// gpu-async-region makes the host wait for the stream before every host op
// with a memory effect. Between kernels of a dynamic model those are shape
// computations on small host buffers the GPU never sees: the wait only
// stalls the pipeline. This pass removes such waits and chains the next GPU
// op directly onto the token that was waited for.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"
#include "passes/gpu/Utils.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_ELIDEHOSTWAITS
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;

namespace {
struct ElideHostWaitsPass
    : gatec::gpu::impl::ElideHostWaitsBase<ElideHostWaitsPass> {
  using Base::Base;

  /// Buffers (their roots) that some gpu op reads or writes: device
  /// buffers, and host buffers a gpu.memcpy copies from or into.
  llvm::DenseSet<Value> gpuBuffers;

  /// Can `op` run on the host while the GPU still works? It must not touch
  /// a buffer a gpu op uses, nor be a gpu op, a call or control flow.
  bool isHostLocal(Operation *op) {
    if (op->getNumRegions() || op->hasTrait<OpTrait::IsTerminator>() ||
        isa<mlir::gpu::GPUDialect>(op->getDialect()) ||
        isa<CallOpInterface>(op))
      return false;
    // A failed run-time check aborts whatever the GPU is doing.
    if (isMemoryEffectFree(op) || isa<ViewLikeOpInterface, cf::AssertOp>(op))
      return true;
    if (isa<memref::AllocOp, memref::AllocaOp>(op))
      return true;
    if (!isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp,
             memref::CopyOp>(op))
      return false;
    for (Value v : op->getOperands()) {
      if (!isa<MemRefType>(v.getType()))
        continue;
      Value root = gatec::gpu::bufferRoot(v);
      if (!root.getDefiningOp<memref::AllocOp>() &&
          !root.getDefiningOp<memref::AllocaOp>())
        return false;
      if (gpuBuffers.contains(root))
        return false;
    }
    return true;
  }

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    gpuBuffers.clear();
    f.walk([&](Operation *op) {
      if (!isa<mlir::gpu::GPUDialect>(op->getDialect()))
        return;
      for (Value v : op->getOperands())
        if (isa<MemRefType>(v.getType()))
          gpuBuffers.insert(gatec::gpu::bufferRoot(v));
      for (Value v : op->getResults())
        if (isa<MemRefType>(v.getType()))
          gpuBuffers.insert(v);
    });
    SmallVector<mlir::gpu::WaitOp> waits;
    f.walk([&](mlir::gpu::WaitOp w) {
      if (!w.getAsyncToken() && w.getAsyncDependencies().size() == 1)
        waits.push_back(w);
    });
    for (mlir::gpu::WaitOp w : waits) {
      // The ops up to the wait that starts the next chain (gpu.wait async
      // without dependencies) must all be host-local.
      Operation *op = w->getNextNode();
      while (op && isHostLocal(op))
        op = op->getNextNode();
      auto next = dyn_cast_or_null<mlir::gpu::WaitOp>(op);
      if (!next || !next.getAsyncToken() ||
          !next.getAsyncDependencies().empty())
        continue;
      next.getAsyncToken().replaceAllUsesWith(w.getAsyncDependencies()[0]);
      next.erase();
      w.erase();
    }
  }
};
} // namespace
