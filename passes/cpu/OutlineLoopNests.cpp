//===- OutlineLoopNests.cpp - --outline-loop-nests ------------------------===//
//
// Each top-level scf.forall of a host function (one tiled kernel) becomes a
// call of a private function that takes the buffers, sizes and weights it
// reads as arguments; nests that are the same code (the same kernel of
// every layer of a model, on different weights) share one function. The
// C compiler then optimises each distinct kernel once: a 24-layer model is
// compiled as about one layer of code.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace gatec::cpu {
#define GEN_PASS_DEF_OUTLINELOOPNESTS
#include "passes/cpu/Passes.h.inc"
} // namespace gatec::cpu

using namespace mlir;

namespace {
/// The name an outlined function has while its text is compared.
constexpr StringLiteral kProbeName = "__gatec_outlined";

/// Whether `v` is defined inside `nest` (by one of its ops or as a block
/// argument of one of its regions).
bool definedInside(Value v, Operation *nest) {
  if (Operation *d = v.getDefiningOp())
    return nest->isAncestor(d);
  return nest->isAncestor(cast<BlockArgument>(v).getOwner()->getParentOp());
}

struct OutlineLoopNestsPass
    : gatec::cpu::impl::OutlineLoopNestsBase<OutlineLoopNestsPass> {
  using Base::Base;

  /// The function's text with its name replaced: equal texts are the same
  /// code (SSA names are local, locations are not printed).
  static std::string textOf(func::FuncOp fn) {
    std::string text;
    llvm::raw_string_ostream os(text);
    fn->print(os, OpPrintingFlags().useLocalScope());
    return text;
  }

  void outline(scf::ForallOp nest, func::FuncOp parent, SymbolTable &symbols,
               llvm::StringMap<func::FuncOp> &byText, unsigned &count) {
    // Weights and other globals are arguments: the same kernel of another
    // layer reads another global.
    SmallVector<memref::GetGlobalOp> globals;
    nest->walk([&](memref::GetGlobalOp g) { globals.push_back(g); });
    for (memref::GetGlobalOp g : globals)
      g->moveBefore(nest);

    // What the nest reads from outside: constants are cloned into the
    // function (its code is specialised on them); the rest are arguments.
    llvm::SetVector<Value> captured;
    llvm::SetVector<Operation *> constants;
    nest->walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value v : op->getOperands()) {
        if (definedInside(v, nest))
          continue;
        Operation *d = v.getDefiningOp();
        if (d && d->getNumOperands() == 0 && d->getNumRegions() == 0 &&
            matchPattern(v, m_Constant()))
          constants.insert(d);
        else
          captured.insert(v);
      }
    });

    OpBuilder b(parent);
    auto type =
        b.getFunctionType(llvm::to_vector(llvm::map_range(
                              captured, [](Value v) { return v.getType(); })),
                          {});
    auto fn = func::FuncOp::create(b, nest.getLoc(), kProbeName, type);
    fn.setPrivate();
    Block *body = fn.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockBegin(body);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(captured, body->getArguments()))
      map.map(v, arg);
    for (Operation *c : constants)
      fb.clone(*c, map);
    fb.clone(*nest, map);
    func::ReturnOp::create(fb, nest.getLoc());

    std::string text = textOf(fn);
    func::FuncOp callee = byText.lookup(text);
    if (callee) {
      fn.erase();
    } else {
      callee = fn;
      fn.setName((parent.getName() + "_kernel_" + Twine(count++)).str());
      // Not exported from the model library.
      fn->setAttr("llvm.linkage", LLVM::LinkageAttr::get(
                                      &getContext(), LLVM::Linkage::Internal));
      symbols.insert(fn);
      byText[text] = fn;
    }
    OpBuilder cb(nest);
    func::CallOp::create(cb, nest.getLoc(), callee, captured.getArrayRef());
    nest.erase();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> byText;
    unsigned count = 0;
    SmallVector<func::FuncOp> fns(module.getOps<func::FuncOp>());
    for (func::FuncOp f : fns) {
      if (f.isExternal())
        continue;
      SmallVector<scf::ForallOp> nests;
      for (Block &block : f.getBody())
        for (Operation &o : block)
          if (auto nest = dyn_cast<scf::ForallOp>(o);
              nest && nest->getNumResults() == 0)
            nests.push_back(nest);
      for (scf::ForallOp nest : nests)
        outline(nest, f, symbols, byText, count);
    }
  }
};
} // namespace
