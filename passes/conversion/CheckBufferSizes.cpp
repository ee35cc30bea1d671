//===- CheckBufferSizes.cpp - --check-buffer-sizes ------------------------===//
//
// Every buffer the host code allocates with sizes known only at run time is
// checked to need at most 2^47 bytes (what x86-64 can address) before it is
// allocated: the byte count that finalize-memref-to-llvm computes would
// otherwise wrap around 2^64 for sizes read from the data (ConstantOfShape,
// Expand, Tile) or from a huge dim of an empty input, and the model would
// write past a small buffer.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_CHECKBUFFERSIZES
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
struct CheckBufferSizesPass
    : gatec::conversion::impl::CheckBufferSizesBase<CheckBufferSizesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> allocs;
    getOperation().walk([&](Operation *op) {
      if (!isa<memref::AllocOp, memref::AllocaOp>(op) ||
          op->getNumOperands() == 0)
        return;
      // Scratch of a parallel loop's iteration is sized by its tile (of a
      // buffer checked here); only host code can end the run.
      for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
        if (isa<scf::ForallOp, scf::ParallelOp>(p) ||
            p->getDialect()->getNamespace() == "omp" ||
            p->getDialect()->getNamespace() == "gpu")
          return;
      allocs.push_back(op);
    });
    for (Operation *op : allocs)
      check(op);
  }

  /// cf.assert(bytes <= 2^47) before `op`, the product of its sizes
  /// computed in i128 and saturated at 2^64 after each factor (each factor
  /// is below 2^64, so no product wraps); a size read as negative counts
  /// as huge.
  void check(Operation *op) {
    auto type = cast<MemRefType>(op->getResult(0).getType());
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type i128 = b.getIntegerType(128), i64 = b.getI64Type();
    Type e = type.getElementType();
    int64_t bytes = e.isIntOrFloat()
                        ? std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8)
                        : 8;
    auto c128 = [&](APInt v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i128, v));
    };
    APInt cap = APInt(128, 1).shl(64);
    Value n = c128(APInt(128, bytes));
    unsigned dyn = 0;
    for (int64_t d : type.getShape()) {
      Value f;
      if (ShapedType::isDynamic(d)) {
        Value s = op->getOperand(dyn++);
        f = arith::ExtUIOp::create(
            b, loc, i128, arith::IndexCastUIOp::create(b, loc, i64, s));
      } else {
        f = c128(APInt(128, d));
      }
      n = arith::MinUIOp::create(b, loc, arith::MulIOp::create(b, loc, n, f),
                                 c128(cap));
    }
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, n,
                                     c128(APInt(128, 1).shl(47)));
    cf::AssertOp::create(b, loc, ok,
                         "gatec: a buffer of " + gatec::describeOp(loc) +
                             " that needs over 2^47 bytes");
  }
};
} // namespace
