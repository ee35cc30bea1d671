//===- DeviceMemory.cpp - --device-memory ---------------------------------===//
//
// Buffers that kernels touch are allocated in device memory (gpu.alloc);
// host code must not dereference them.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"
#include "passes/gpu/Utils.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_DEVICEMEMORY
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;
using gatec::gpu::bufferRoot;

namespace {
struct DeviceMemoryPass : gatec::gpu::impl::DeviceMemoryBase<DeviceMemoryPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    // Private helpers (dealloc_helper) take host buffers.
    if (f.isPrivate())
      return;
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
    // A buffer chosen at run time (scf.if, select: the run-time broadcast
    // of a size-1 dim) is on the device if any of its sources is used
    // there: then all of them are.
    for (Value v : llvm::to_vector(device)) {
      SmallVector<Value> roots;
      gatec::gpu::possibleRoots(v, roots);
      device.insert(roots.begin(), roots.end());
    }
    // Host reads of device buffers (shapes computed on the device, read
    // to size the next buffers): the buffer is copied to host memory first.
    OpBuilder hb(&getContext());
    SmallVector<memref::LoadOp> hostLoads;
    f.walk([&](memref::LoadOp load) {
      if (!load->getParentOfType<mlir::gpu::LaunchOp>() &&
          device.contains(bufferRoot(load.getMemref())))
        hostLoads.push_back(load);
    });
    for (memref::LoadOp load : hostLoads) {
      Value root = bufferRoot(load.getMemref());
      auto type = dyn_cast<MemRefType>(root.getType());
      if (!type || !type.getLayout().isIdentity())
        continue; // reported below
      // The view chain from the root to the loaded memref.
      SmallVector<Operation *> chain;
      for (Value v = load.getMemref(); v != root;
           v = v.getDefiningOp()->getOperand(0))
        chain.push_back(v.getDefiningOp());
      hb.setInsertionPoint(load);
      Location loc = load.getLoc();
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(memref::DimOp::create(hb, loc, root, d));
      Value host = memref::AllocOp::create(hb, loc, type, sizes);
      mlir::gpu::MemcpyOp::create(hb, loc, Type(), ValueRange{}, host, root);
      IRMapping map;
      map.map(root, host);
      for (Operation *view : llvm::reverse(chain))
        hb.clone(*view, map);
      load.getMemrefMutable().assign(map.lookupOrDefault(load.getMemref()));
      hb.setInsertionPointAfter(load);
      memref::DeallocOp::create(hb, loc, host);
    }
    // Host code may not otherwise dereference device memory.
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
    // Deallocation first (of the buffer or of a view of its base; a buffer
    // chosen at run time among device buffers is one too).
    f.walk([&](memref::DeallocOp d) {
      if (d->getParentOfType<mlir::gpu::LaunchOp>())
        return;
      SmallVector<Value> roots;
      gatec::gpu::possibleRoots(d.getMemref(), roots);
      if (llvm::none_of(roots, [&](Value r) { return device.contains(r); }))
        return;
      if (!llvm::all_of(roots, [&](Value r) { return device.contains(r); })) {
        d.emitError("deallocation of a buffer that may be in host or in "
                    "device memory (not supported by the CUDA target)");
        bad = true;
        return;
      }
      b.setInsertionPoint(d);
      mlir::gpu::DeallocOp::create(b, d.getLoc(), Type(), ValueRange{},
                                   d.getMemref());
      d.erase();
    });
    if (bad)
      return signalPassFailure();
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
