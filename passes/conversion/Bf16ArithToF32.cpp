//===- Bf16ArithToF32.cpp - --bf16-arith-to-f32 ---------------------------===//
//
// bf16 arithmetic as f32 arithmetic rounded back to bf16 after every op.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_BF16ARITHTOF32
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
bool isBF16(Type t) { return isa<BFloat16Type>(t); }

struct Bf16ArithToF32Pass
    : gatec::conversion::impl::Bf16ArithToF32Base<Bf16ArithToF32Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) ||
          isa<arith::ExtFOp, arith::TruncFOp, arith::BitcastOp,
              arith::ConstantOp, arith::SelectOp>(op) ||
          op->getNumRegions() != 0)
        return;
      auto bf = [](Value v) { return isBF16(v.getType()); };
      if (llvm::any_of(op->getOperands(), bf) ||
          llvm::any_of(op->getResults(), bf))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    Type f32 = b.getF32Type();
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      IRMapping map;
      for (Value v : op->getOperands())
        if (isBF16(v.getType()))
          map.map(v, arith::ExtFOp::create(b, loc, f32, v));
      Operation *wide = b.clone(*op, map);
      b.setInsertionPointAfter(wide);
      for (auto [old, nw] : llvm::zip(op->getResults(), wide->getResults())) {
        if (!isBF16(old.getType())) {
          old.replaceAllUsesWith(nw);
          continue;
        }
        nw.setType(f32);
        old.replaceAllUsesWith(
            arith::TruncFOp::create(b, loc, old.getType(), nw).getResult());
      }
      op->erase();
    }
  }
};
} // namespace
