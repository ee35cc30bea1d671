//===- CheckWeights.cpp - --check-weights ---------------------------------===//
#include "passes/gated/Passes.h"

#include "dialects/onnx/NodeLocation.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace gatec::gated {
#define GEN_PASS_DEF_CHECKWEIGHTS
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;

namespace {
constexpr StringLiteral kAttr = "gatec.weights";

/// Every floating-point initializer (a weight, as opposed to the integer
/// shape, axes and index tensors that layout rewrites legitimately replace)
/// whose value reaches a result of @main_graph, with the first op found
/// using it. An op whose results are all empty tensors (a 0-sized dim)
/// carries no values: nothing it reads contributes through it.
bool allResultsEmpty(Operation *op) {
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getResultTypes(), [](Type t) {
           auto s = dyn_cast<ShapedType>(t);
           return s && s.hasRank() && llvm::is_contained(s.getShape(), 0);
         });
}

llvm::MapVector<StringRef, Operation *> contributing(func::FuncOp f) {
  llvm::MapVector<StringRef, Operation *> out;
  llvm::SetVector<Operation *> live;
  SmallVector<Operation *> work;
  for (Block &b : f.getBody())
    work.push_back(b.getTerminator());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (allResultsEmpty(op) || !live.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *d = v.getDefiningOp())
        work.push_back(d);
    // Ops nested in regions (Scan bodies) and what they read.
    op->walk([&](Operation *inner) {
      if (inner != op)
        work.push_back(inner);
    });
  }
  for (Operation *op : live) {
    llvm::SetVector<StringRef> names;
    gatec::initializersIn(op->getLoc(), names);
    if (op->getNumResults() == 1 &&
        isa<IntegerType>(getElementTypeOrSelf(op->getResult(0).getType())) &&
        op->getName().getStringRef() == "onnx.Constant")
      continue;
    for (StringRef n : names) {
      // The user that reads it, rather than the constant itself.
      Operation *user = op;
      for (Operation *u : op->getUsers())
        if (live.contains(u)) {
          user = u;
          break;
        }
      out.insert({n, user});
    }
  }
  return out;
}

struct CheckWeightsPass
    : gatec::gated::impl::CheckWeightsBase<CheckWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto f = module.lookupSymbol<func::FuncOp>("main_graph");
    if (!f)
      return;
    auto now = contributing(f);
    auto recorded = module->getAttrOfType<DictionaryAttr>(kAttr);
    if (!recorded) {
      SmallVector<NamedAttribute> entries;
      for (auto &[name, user] : now)
        entries.push_back(NamedAttribute(
            StringAttr::get(&getContext(), name),
            StringAttr::get(&getContext(),
                            gatec::describeNode(user->getLoc()))));
      module->setAttr(kAttr, DictionaryAttr::get(&getContext(), entries));
      return;
    }
    bool failedAny = false;
    for (NamedAttribute e : recorded) {
      if (now.count(e.getName().getValue()))
        continue;
      failedAny = true;
      emitError(module.getLoc())
          << "weight '" << e.getName().getValue()
          << "' no longer contributes to any output"
          << (phase.empty() ? "" : " after phase '") << phase
          << (phase.empty() ? "" : "'") << "; it was used by "
          << cast<StringAttr>(e.getValue()).getValue();
    }
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
