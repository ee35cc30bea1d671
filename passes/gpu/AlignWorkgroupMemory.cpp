//===- AlignWorkgroupMemory.cpp - --align-workgroup-memory ----------------===//
//
// Workgroup attributions of outlined kernels aligned for any element type:
// the NVVM lowering gives an i8 buffer's shared-memory variable alignment 1,
// and the f32/f16 views into it need their element's alignment (vector
// accesses 16 bytes).
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_ALIGNWORKGROUPMEMORY
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;

namespace {
struct AlignWorkgroupMemoryPass
    : gatec::gpu::impl::AlignWorkgroupMemoryBase<AlignWorkgroupMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    StringRef name = LLVM::LLVMDialect::getAlignAttrName();
    Builder b(&getContext());
    getOperation().walk([&](mlir::gpu::GPUFuncOp f) {
      for (unsigned i = 0; i < f.getNumWorkgroupAttributions(); ++i) {
        auto old = dyn_cast_or_null<IntegerAttr>(
            f.getWorkgroupAttributionAttr(i, name));
        if (!old || old.getInt() < alignment)
          f.setWorkgroupAttributionAttr(i, name,
                                        b.getI64IntegerAttr(alignment));
      }
    });
  }
};
} // namespace
