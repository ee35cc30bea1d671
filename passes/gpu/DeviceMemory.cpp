//===- DeviceMemory.cpp - --device-memory ---------------------------------===//
//
// Buffers that kernels touch are allocated in device memory (gpu.alloc);
// host code must not dereference them.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"
#include "passes/gpu/Utils.h"

#include "llvm/ADT/DenseSet.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_DEVICEMEMORY
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;
using gatec::gpu::bufferRoot;

namespace {
struct DeviceMemoryPass
    : gatec::gpu::impl::DeviceMemoryBase<DeviceMemoryPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    llvm::DenseSet<Value> device;
    for (BlockArgument a : f.getArguments())
      if (isa<MemRefType>(a.getType()))
        device.insert(a);
    f.walk([&](mlir::gpu::LaunchOp launch) {
      launch.getBody().walk([&](Operation *op) {
        for (Value v : op->getOperands())
          if (isa<MemRefType>(v.getType()) &&
              !launch->isAncestor(v.getParentRegion()->getParentOp()))
            device.insert(bufferRoot(v));
      });
    });
    bool bad = false;
    f.walk([&](func::ReturnOp r) {
      for (Value v : r.getOperands()) {
        Value root = bufferRoot(v);
        if (root.getDefiningOp<memref::GetGlobalOp>()) {
          r.emitError("an output that is a constant of the model is not "
                      "supported by the CUDA target yet");
          bad = true;
        }
        device.insert(root);
      }
    });
    // Host code may not dereference device memory.
    f.walk([&](Operation *op) {
      if (op->getParentOfType<mlir::gpu::LaunchOp>())
        return;
      if (!isa<memref::LoadOp, memref::StoreOp, memref::CopyOp,
               linalg::LinalgOp>(op))
        return;
      for (Value v : op->getOperands())
        if (isa<MemRefType>(v.getType()) && device.contains(bufferRoot(v))) {
          op->emitError("host code reads or writes a device buffer (not "
                        "supported by the CUDA target)");
          bad = true;
          return;
        }
    });
    if (bad)
      return signalPassFailure();
    OpBuilder b(&getContext());
    // Deallocation first (of the buffer or of a view of its base).
    f.walk([&](memref::DeallocOp d) {
      Value root = bufferRoot(d.getMemref());
      if (!device.contains(root) || !root.getDefiningOp<memref::AllocOp>())
        return;
      b.setInsertionPoint(d);
      mlir::gpu::DeallocOp::create(b, d.getLoc(), Type(), ValueRange{},
                                   d.getMemref());
      d.erase();
    });
    for (Value root : device) {
      auto alloc = root.getDefiningOp<memref::AllocOp>();
      if (!alloc)
        continue;
      b.setInsertionPoint(alloc);
      auto galloc = mlir::gpu::AllocOp::create(
          b, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
          ValueRange{}, alloc.getDynamicSizes(), alloc.getSymbolOperands());
      alloc.replaceAllUsesWith(galloc.getMemref());
      alloc.erase();
    }
  }
};
} // namespace
