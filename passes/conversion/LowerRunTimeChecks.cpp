//===- LowerRunTimeChecks.cpp - --lower-run-time-checks -------------------===//
//
// A failed run-time check of the model's host code (cf.assert: sizes that
// do not broadcast, ...) as the run's error instead of abort(): a call of
// gatec_check_failed(message), which the model library's ABI wrapper turns
// into an error status of the run.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_LOWERRUNTIMECHECKS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
constexpr StringLiteral kHandler = "gatec_check_failed";

struct LowerRunTimeChecksPass
    : gatec::conversion::impl::LowerRunTimeChecksBase<LowerRunTimeChecksPass> {
  /// The address of a NUL-terminated global holding `text`.
  Value message(OpBuilder &b, Location loc, StringRef text,
                llvm::StringMap<LLVM::GlobalOp> &globals) {
    ModuleOp module = getOperation();
    LLVM::GlobalOp &g = globals[text];
    if (!g) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      std::string data = (text + Twine('\0')).str();
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
      g = LLVM::GlobalOp::create(
          b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
          ("gatec_check_msg_" + Twine(globals.size() - 1)).str(),
          b.getStringAttr(data));
    }
    return LLVM::AddressOfOp::create(b, loc, g);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    // Checks at the top level of a host function: one inside an OpenMP or
    // other region would unwind a worker thread; those keep cf.assert.
    SmallVector<cf::AssertOp> checks;
    for (auto f : module.getOps<func::FuncOp>())
      f.walk([&](cf::AssertOp a) {
        if (a->getParentOp() == f)
          checks.push_back(a);
      });
    if (checks.empty())
      return;
    if (!module.lookupSymbol<func::FuncOp>(kHandler)) {
      b.setInsertionPointToStart(module.getBody());
      auto handler = func::FuncOp::create(b, module.getLoc(), kHandler,
                                          b.getFunctionType({ptr}, {}));
      handler.setPrivate();
    }
    llvm::StringMap<LLVM::GlobalOp> globals;
    for (cf::AssertOp a : checks) {
      Location loc = a.getLoc();
      Block *before = a->getBlock();
      Block *after = before->splitBlock(a->getNextNode());
      Block *fail = b.createBlock(after);
      b.setInsertionPointToEnd(fail);
      func::CallOp::create(b, loc, kHandler, TypeRange{},
                           ValueRange{message(b, loc, a.getMsg(), globals)});
      cf::BranchOp::create(b, loc, after);
      b.setInsertionPoint(a);
      cf::CondBranchOp::create(b, loc, a.getArg(), after, fail);
      a.erase();
    }
  }
};
} // namespace
