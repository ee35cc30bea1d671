//===- LowerRunTimeChecks.cpp - --lower-run-time-checks -------------------===//
//
// A failed run-time check of the model's host code (cf.assert: sizes that
// do not broadcast, ...) as the run's error instead of abort(): a call of
// gatec_check_failed(message), which the model library's ABI wrapper turns
// into an error status of the run. A failed malloc of the host code is the
// run's out-of-memory error the same way (gatec_alloc_failed), instead of
// a write through NULL. The host code allocates and frees through the
// library's gatec_malloc / gatec_free, which free what a failed run had
// allocated.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_LOWERRUNTIMECHECKS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
constexpr StringLiteral kHandler = "gatec_check_failed";
constexpr StringLiteral kAllocHandler = "gatec_alloc_failed";

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

  /// Declares `name` (void(ptr)) in the module unless it is there.
  void declare(OpBuilder &b, StringRef name) {
    ModuleOp module = getOperation();
    if (module.lookupSymbol(name))
      return;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType({ptr}, {}))
        .setPrivate();
  }

  /// Splits the block after `at`: where `ok` is false, a call of `handler`
  /// with `text` (it does not return), then the rest of the block.
  void branchUnless(OpBuilder &b, Operation *at, Value ok, StringRef handler,
                    StringRef text, llvm::StringMap<LLVM::GlobalOp> &globals) {
    Location loc = at->getLoc();
    Block *before = at->getBlock();
    Block *after = before->splitBlock(at->getNextNode());
    Block *fail = b.createBlock(after);
    b.setInsertionPointToEnd(fail);
    func::CallOp::create(b, loc, handler, TypeRange{},
                         ValueRange{message(b, loc, text, globals)});
    cf::BranchOp::create(b, loc, after);
    b.setInsertionPointToEnd(before);
    cf::CondBranchOp::create(b, loc, ok, after, fail);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    // Checks and allocations at the top level of a host function: one
    // inside an OpenMP or other region would unwind a worker thread; those
    // keep cf.assert (and an unchecked malloc).
    SmallVector<cf::AssertOp> checks;
    SmallVector<LLVM::CallOp> allocs;
    // Allocations in the body of an OpenMP worksharing loop (the scratch
    // of a row block), by the function they are in.
    llvm::MapVector<func::FuncOp, SmallVector<LLVM::CallOp>> loopAllocs;
    for (auto f : module.getOps<func::FuncOp>())
      f.walk([&](Operation *op) {
        if (auto c = dyn_cast<LLVM::CallOp>(op))
          if (c.getCallee() && isa<omp::LoopNestOp>(op->getParentOp()) &&
              (*c.getCallee() == "malloc" || *c.getCallee() == "aligned_alloc"))
            loopAllocs[f].push_back(c);
        if (op->getParentOp() != f)
          return;
        if (auto a = dyn_cast<cf::AssertOp>(op))
          checks.push_back(a);
        if (auto c = dyn_cast<LLVM::CallOp>(op))
          if (c.getCallee() &&
              (*c.getCallee() == "malloc" || *c.getCallee() == "aligned_alloc"))
            allocs.push_back(c);
      });
    llvm::StringMap<LLVM::GlobalOp> globals;
    if (!checks.empty())
      declare(b, kHandler);
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
    // malloc(n) / aligned_alloc(a, n) returning NULL for n > 0: the run's
    // out-of-memory error, naming the node whose buffer it is.
    if (!allocs.empty())
      declare(b, kAllocHandler);
    for (LLVM::CallOp c : allocs) {
      Location loc = c.getLoc();
      b.setInsertionPointAfter(c);
      Value p = c.getResult(), n = c.getArgOperands().back();
      Value null = LLVM::ZeroOp::create(b, loc, p.getType());
      Value zero = LLVM::ConstantOp::create(b, loc, n.getType(),
                                            b.getIntegerAttr(n.getType(), 0));
      Value got =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, p, null);
      Value none =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, n, zero);
      Value ok = LLVM::OrOp::create(b, loc, got, none);
      branchUnless(b, ok.getDefiningOp(), ok, kAllocHandler,
                   "gatec: a buffer of " + gatec::describeOp(loc) +
                       " could not be allocated",
                   globals);
    }
    for (auto &[f, calls] : loopAllocs)
      checkLoopAllocs(b, f, calls, globals);
    trackAllocations();
  }

  /// The host code's malloc, aligned_alloc and free as the model library's
  /// gatec_malloc, gatec_aligned_alloc and gatec_free (model_support.c),
  /// which track the run's buffers so that a run a failed check ends frees
  /// them. Only the module's own functions: a gpu.module's calls stay.
  void trackAllocations() {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    for (StringRef name : {"malloc", "aligned_alloc", "free"}) {
      auto decl = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!decl)
        continue;
      auto to = StringAttr::get(ctx, "gatec_" + name.str());
      if (module.lookupSymbol(to))
        continue;
      auto ref = FlatSymbolRefAttr::get(to);
      for (Operation &op : module.getBody()->getOperations())
        if (isa<func::FuncOp, LLVM::LLVMFuncOp>(op))
          op.walk([&](LLVM::CallOp c) {
            if (c.getCallee() == name)
              c.setCalleeAttr(ref);
          });
      decl.setSymName(to);
    }
  }

  /// A worker thread cannot end the run (longjmp out of an OpenMP region is
  /// undefined). A NULL from a malloc in a worksharing loop's body stores
  /// the message in a slot of the function's frame (shared with the
  /// region) and skips the rest of that iteration (a branch to a new
  /// omp.yield block); after each top-level omp.parallel of the function
  /// the slot is read, and a message there is the run's out-of-memory error
  /// (gatec_alloc_failed), before anything reads what the skipped
  /// iterations did not write.
  void checkLoopAllocs(OpBuilder &b, func::FuncOp f,
                       ArrayRef<LLVM::CallOp> calls,
                       llvm::StringMap<LLVM::GlobalOp> &globals) {
    declare(b, kAllocHandler);
    Location floc = f.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    b.setInsertionPointToStart(&f.getBody().front());
    Value one = LLVM::ConstantOp::create(b, floc, b.getI64Type(),
                                         b.getI64IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(b, floc, ptr, ptr, one);
    LLVM::StoreOp::create(b, floc, LLVM::ZeroOp::create(b, floc, ptr), slot);
    llvm::DenseMap<Region *, Block *> skips;
    llvm::SetVector<Operation *> parallels;
    for (LLVM::CallOp c : calls) {
      Location loc = c.getLoc();
      Region *body = c->getParentRegion();
      Block *&skip = skips[body];
      if (!skip) {
        OpBuilder::InsertionGuard g(b);
        skip = b.createBlock(body, body->end());
        omp::YieldOp::create(b, loc, ValueRange{});
      }
      Operation *top = c;
      while (top->getParentOp() != f)
        top = top->getParentOp();
      if (isa<omp::ParallelOp>(top))
        parallels.insert(top);
      b.setInsertionPointAfter(c);
      Value p = c.getResult(), n = c.getArgOperands().back();
      Value got = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, p,
                                       LLVM::ZeroOp::create(b, loc, ptr));
      Value none = LLVM::ICmpOp::create(
          b, loc, LLVM::ICmpPredicate::eq, n,
          LLVM::ConstantOp::create(b, loc, n.getType(),
                                   b.getIntegerAttr(n.getType(), 0)));
      Value ok = LLVM::OrOp::create(b, loc, got, none);
      Block *before = ok.getDefiningOp()->getBlock();
      Block *after = before->splitBlock(ok.getDefiningOp()->getNextNode());
      Block *fail = b.createBlock(after);
      b.setInsertionPointToEnd(fail);
      Value msg = message(b, loc,
                          "gatec: a buffer of " + gatec::describeOp(loc) +
                              " could not be allocated (in a worker thread)",
                          globals);
      LLVM::StoreOp::create(b, loc, msg, slot, /*alignment=*/8,
                            /*isVolatile=*/false, /*isNonTemporal=*/false,
                            /*isInvariantGroup=*/false,
                            LLVM::AtomicOrdering::monotonic);
      cf::BranchOp::create(b, loc, skip);
      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, ok, after, fail);
    }
    for (Operation *par : parallels) {
      Location loc = par->getLoc();
      b.setInsertionPointAfter(par);
      auto load = LLVM::LoadOp::create(b, loc, ptr, slot, /*alignment=*/8,
                                       /*isVolatile=*/false,
                                       /*isNonTemporal=*/false,
                                       /*isInvariant=*/false,
                                       /*isInvariantGroup=*/false,
                                       LLVM::AtomicOrdering::monotonic);
      Value clean = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, load,
                                         LLVM::ZeroOp::create(b, loc, ptr));
      Block *before = clean.getDefiningOp()->getBlock();
      Block *after = before->splitBlock(clean.getDefiningOp()->getNextNode());
      Block *fail = b.createBlock(after);
      b.setInsertionPointToEnd(fail);
      func::CallOp::create(b, loc, kAllocHandler, TypeRange{},
                           ValueRange{load});
      cf::BranchOp::create(b, loc, after);
      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, clean, after, fail);
    }
  }
};
} // namespace
