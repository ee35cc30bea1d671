//===- FpContract.cpp - --fp-contract -------------------------------------===//
//
// Floating-point arithmetic in kernels marked contractible, so that the
// NVPTX backend fuses a multiply and the add that consumes it into one FMA.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"

namespace gatec::gpu {
#define GEN_PASS_DEF_FPCONTRACT
#include "passes/gpu/Passes.h.inc"
} // namespace gatec::gpu

using namespace mlir;

namespace {
struct FpContractPass : gatec::gpu::impl::FpContractBase<FpContractPass> {
  void runOnOperation() override {
    getOperation()->walk([](arith::ArithFastMathInterface op) {
      if (!isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(op))
        return;
      auto flags = op.getFastMathFlagsAttr();
      arith::FastMathFlags f =
          flags ? flags.getValue() : arith::FastMathFlags::none;
      op->setAttr(op.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), f | arith::FastMathFlags::contract));
    });
  }
};
} // namespace
