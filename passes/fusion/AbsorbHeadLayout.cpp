//===- AbsorbHeadLayout.cpp - --absorb-head-layout ------------------------===//
//
// The head transposes around gated.attention and gated.linear_attention
// ([B, T, H, D] <-> [B, H, T, D]) become the ops' `bshd` layout: the ops
// read their operands and write their result in the projections' order.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/IR/Builders.h"

namespace gatec::fusion {
#define GEN_PASS_DEF_ABSORBHEADLAYOUT
#include "passes/fusion/Passes.h.inc"
} // namespace gatec::fusion

using namespace mlir;
using namespace gatec;

namespace {
/// An onnx.Transpose with perm [0, 2, 1, 3] between ranked 4-D tensors.
bool isHeadTranspose(onnx::TransposeOp t) {
  if (!t || !t.getPerm() ||
      ArrayRef<int64_t>(*t.getPerm()) != ArrayRef<int64_t>{0, 2, 1, 3})
    return false;
  auto in = dyn_cast<RankedTensorType>(t.getData().getType());
  auto out = dyn_cast<RankedTensorType>(t.getType());
  return in && out && in.getRank() == 4 && out.getRank() == 4;
}

/// The [B, T, H, D] source of x if x is a head transpose of one.
Value headTransposeSource(Value x) {
  auto t = x ? x.getDefiningOp<onnx::TransposeOp>() : onnx::TransposeOp();
  return isHeadTranspose(t) ? t.getData() : Value();
}

/// The head transpose that is the only user of `result`, if any.
onnx::TransposeOp resultHeadTranspose(Value result) {
  if (!result.hasOneUse())
    return {};
  auto t = dyn_cast<onnx::TransposeOp>(*result.getUsers().begin());
  return isHeadTranspose(t) ? t : onnx::TransposeOp();
}

/// Records the names in the op's `bshd` attribute (after any it holds).
void addBshd(Operation *op, ArrayRef<StringRef> names) {
  if (names.empty())
    return;
  Builder b(op->getContext());
  SmallVector<Attribute> all;
  if (auto old = op->getAttrOfType<ArrayAttr>("bshd"))
    all.append(old.begin(), old.end());
  for (StringRef n : names)
    all.push_back(b.getStringAttr(n));
  op->setAttr("bshd", b.getArrayAttr(all));
}

/// A result that only feeds a head transpose is written in [B, T, H, D]
/// order: its type becomes the transpose's and the transpose goes.
bool absorbResult(OpResult result) {
  onnx::TransposeOp t = resultHeadTranspose(result);
  if (!t)
    return false;
  result.setType(t.getType());
  t.getResult().replaceAllUsesWith(result);
  t.erase();
  return true;
}

/// Each operand of an attention that is a head transpose is read from its
/// source (operands can differ: a key/value cache may arrive as
/// [B, H, S, D] while the query is projected).
void absorb(gated::AttentionOp op) {
  if (op.getBshd())
    return;
  SmallVector<StringRef> names;
  auto take = [&](OpOperand &use, StringRef name) {
    if (Value src = headTransposeSource(use.get())) {
      use.set(src);
      names.push_back(name);
    }
  };
  take(op.getQueryMutable(), "query");
  take(op.getKeyMutable(), "key");
  take(op.getValueMutable(), "value");
  if (op.getGate())
    take(op.getGateMutable()[0], "gate");
  if (absorbResult(cast<OpResult>(op.getResult())))
    names.push_back("result");
  addBshd(op, names);
}

/// Linear attention reads all of its sequence operands in one order: they
/// are absorbed when every one of them is a head transpose.
void absorb(gated::LinearAttentionOp op) {
  if (op.getBshd())
    return;
  SmallVector<std::pair<OpOperand *, StringRef>> ins{
      {&op.getQueryMutable(), "query"},
      {&op.getKeyMutable(), "key"},
      {&op.getValueMutable(), "value"}};
  if (op.getDecay())
    ins.push_back({&op.getDecayMutable()[0], "decay"});
  if (op.getBeta())
    ins.push_back({&op.getBetaMutable()[0], "beta"});
  SmallVector<StringRef> names;
  if (llvm::all_of(ins, [](auto &in) {
        return (bool)headTransposeSource(in.first->get());
      })) {
    for (auto &[use, name] : ins) {
      use->set(headTransposeSource(use->get()));
      names.push_back(name);
    }
  }
  if (absorbResult(cast<OpResult>(op.getOutput())))
    names.push_back("output");
  addBshd(op, names);
}

struct AbsorbHeadLayoutPass
    : fusion::impl::AbsorbHeadLayoutBase<AbsorbHeadLayoutPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<gated::AttentionOp, gated::LinearAttentionOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto a = dyn_cast<gated::AttentionOp>(op))
        absorb(a);
      else
        absorb(cast<gated::LinearAttentionOp>(op));
    }
    // Head transposes whose every reader now reads their source.
    getOperation().walk([](onnx::TransposeOp t) {
      if (t->use_empty() && isHeadTranspose(t))
        t.erase();
    });
  }
};
} // namespace
