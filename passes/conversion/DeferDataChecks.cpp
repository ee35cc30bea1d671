//===- DeferDataChecks.cpp - --defer-data-checks --------------------------===//
//
// The run-time checks of the data (indices in range, divisors nonzero: the
// lowering's `cf.assert`s marked `gatec.data_check`) recorded in one error
// word instead of asserted where they are: each check's flag is folded
// into a rank-0 i32 (0, or the 1-based number of the first check that
// failed) by a one-element linalg.generic, and the word is read once
// before the function returns. On the CUDA target the folds are device
// work (one-thread kernels on the stream), so no check waits for the GPU:
// the host reads the word once, after the run.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "mlir/IR/Builders.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_DEFERDATACHECKS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
struct DeferDataChecksPass
    : gatec::conversion::impl::DeferDataChecksBase<DeferDataChecksPass> {
  /// The rank-0 i1 tensor a marked check asserts (through tensor.extract),
  /// or null: a check of another form stays where it is.
  static Value flagOf(cf::AssertOp a) {
    auto extract = a.getArg().getDefiningOp<tensor::ExtractOp>();
    if (!extract || extract.getTensor().getType().getRank() != 0)
      return {};
    return extract.getTensor();
  }

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal() || !f.getBody().hasOneBlock())
      return;
    Block &body = f.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret)
      return;
    SmallVector<cf::AssertOp> checks;
    for (auto a : body.getOps<cf::AssertOp>())
      if (a->hasAttr(gatec::conversion::kDataCheckAttr) && flagOf(a))
        checks.push_back(a);
    if (checks.empty())
      return;
    OpBuilder b(&getContext());
    Location floc = f.getLoc();
    b.setInsertionPointToStart(&body);
    auto wordType = RankedTensorType::get({}, b.getI32Type());
    Value zero = arith::ConstantOp::create(b, floc, b.getI32IntegerAttr(0));
    Value word =
        tensor::EmptyOp::create(b, floc, wordType.getShape(), b.getI32Type());
    word = linalg::FillOp::create(b, floc, zero, word).getResult(0);
    auto scalarMap = AffineMap::get(0, 0, {}, &getContext());
    SmallVector<std::pair<Location, std::string>> deferred;
    for (auto [k, a] : llvm::enumerate(checks)) {
      Location loc = a.getLoc();
      Value flag = flagOf(a);
      auto extract = a.getArg().getDefiningOp<tensor::ExtractOp>();
      b.setInsertionPoint(a);
      int32_t id = (int32_t)k + 1;
      // word = word == 0 && !ok ? id : word: the first failed check wins.
      word =
          linalg::GenericOp::create(
              b, loc, TypeRange{wordType}, ValueRange{flag}, ValueRange{word},
              ArrayRef<AffineMap>{scalarMap, scalarMap},
              ArrayRef<utils::IteratorType>{},
              [&](OpBuilder &nb, Location l, ValueRange args) {
                Value failed = arith::XOrIOp::create(
                    nb, l, args[0],
                    arith::ConstantOp::create(nb, l, nb.getBoolAttr(true)));
                Value first = arith::CmpIOp::create(
                    nb, l, arith::CmpIPredicate::eq, args[1],
                    arith::ConstantOp::create(nb, l, nb.getI32IntegerAttr(0)));
                Value set = arith::AndIOp::create(nb, l, failed, first);
                Value v = arith::SelectOp::create(
                    nb, l, set,
                    arith::ConstantOp::create(nb, l, nb.getI32IntegerAttr(id)),
                    args[1]);
                linalg::YieldOp::create(nb, l, v);
              })
              .getResult(0);
      deferred.push_back({loc, a.getMsg().str()});
      a.erase();
      if (extract->use_empty())
        extract.erase();
    }
    // The word is read once, before the return: each check's message there.
    b.setInsertionPoint(ret);
    Value got = tensor::ExtractOp::create(b, floc, word, ValueRange{});
    for (auto [k, d] : llvm::enumerate(deferred)) {
      Value ok = arith::CmpIOp::create(
          b, d.first, arith::CmpIPredicate::ne, got,
          arith::ConstantOp::create(b, d.first,
                                    b.getI32IntegerAttr((int32_t)k + 1)));
      cf::AssertOp::create(b, d.first, ok, d.second);
    }
  }
};
} // namespace
